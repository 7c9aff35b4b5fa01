import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import { defaultLadderSpec, fitLadder, parseBitrate, parseLadder } from '../../src/media/ladder.js';

const isLadderError = (error: unknown) => isOriginError(error, 'ORIGIN_ERR_LADDER');

describe('ladder', () => {
  it('parses bitrates with suffixes', () => {
    assert.equal(parseBitrate('400k'), 400_000);
    assert.equal(parseBitrate('1.4M'), 1_400_000);
    assert.equal(parseBitrate('800000'), 800_000);
    assert.throws(() => parseBitrate('fast'), isLadderError);
    assert.throws(() => parseBitrate('1k'), isLadderError);
  });

  it('parses both rung forms, sorted by height', () => {
    assert.deepEqual(parseLadder('720p:2.8M, 640x360@800k'), [
      { width: 640, height: 360, bitrateBps: 800_000 },
      { width: undefined, height: 720, bitrateBps: 2_800_000 },
    ]);
    assert.equal(parseLadder(defaultLadderSpec).length, 4);
    for (const bad of ['', '720:2M', '720p', '720p:2M,720p:3M', '9999p:1M'])
      assert.throws(() => parseLadder(bad), isLadderError, bad);
  });

  it('keeps the source aspect ratio with even widths', () => {
    const rungs = fitLadder(
      parseLadder('240p:300k,480p:1M'),
      { width: 640, height: 480 },
      { allowUpscale: false, dropTaller: false },
    );
    assert.deepEqual(
      rungs.map((r) => [r.width, r.height]),
      [
        [320, 240],
        [640, 480],
      ],
    );
  });

  it('sizes <N>p rungs by the short side: 16:9, 4:3, 9:16 and 1:1 sources keep their rung names', () => {
    const ladder = parseLadder(defaultLadderSpec);
    const sizes = (width: number, height: number) =>
      fitLadder(ladder, { width, height }, { allowUpscale: false, dropTaller: true }).map(
        (r) => `${r.width}x${r.height}`,
      );
    assert.deepEqual(sizes(1280, 720), ['416x234', '640x360', '960x540', '1280x720']);
    assert.deepEqual(sizes(960, 720), ['312x234', '480x360', '720x540', '960x720']);
    assert.deepEqual(sizes(720, 1280), ['234x416', '360x640', '540x960', '720x1280']);
    assert.deepEqual(sizes(720, 720), ['234x234', '360x360', '540x540', '720x720']);
    // A 1080p phone video tops out at the ladder's 720p, portrait.
    assert.deepEqual(sizes(1080, 1920).at(-1), '720x1280');
  });

  it('refuses to upscale unless forced; the default ladder drops larger rungs and keeps the source size on top', () => {
    const source = { width: 640, height: 480 };
    assert.throws(
      () => fitLadder(parseLadder('360p:800k,720p:2.8M'), source, { allowUpscale: false, dropTaller: false }),
      (e: unknown) => isLadderError(e) && /720p would upscale .*--force/.test((e as Error).message),
    );
    assert.throws(
      () => fitLadder(parseLadder('360p:800k,1280x720:2.8M'), source, { allowUpscale: false, dropTaller: false }),
      (e: unknown) => isLadderError(e) && /1280x720 would upscale/.test((e as Error).message),
    );
    assert.equal(
      fitLadder(parseLadder('360p:800k,720p:2.8M'), source, { allowUpscale: true, dropTaller: false }).length,
      2,
    );
    // 540p (720x540) is larger than 640x480: the source's own 480 lines take its place, at a
    // bitrate between 360p's and 540p's by pixel count.
    const fitted = fitLadder(parseLadder(defaultLadderSpec), source, { allowUpscale: false, dropTaller: true });
    assert.deepEqual(
      fitted.map((r) => `${r.width}x${r.height}`),
      ['312x234', '480x360', '640x480'],
    );
    assert.equal(
      fitted[2]!.bitrateBps,
      Math.round(800_000 + (1_400_000 - 800_000) * ((640 * 480 - 480 * 360) / (720 * 540 - 480 * 360))),
    );
    // A source smaller than every rung is one rung of its own size.
    assert.deepEqual(
      fitLadder(parseLadder('720p:2M'), { width: 320, height: 180 }, { allowUpscale: false, dropTaller: true }).map(
        (r) => [r.width, r.height, r.bitrateBps],
      ),
      [[320, 180, 125_000]],
    );
    // A source exactly at a rung's size adds nothing.
    assert.equal(
      fitLadder(
        parseLadder('360p:800k,720p:2.8M'),
        { width: 640, height: 360 },
        { allowUpscale: false, dropTaller: true },
      ).length,
      1,
    );
  });
});
