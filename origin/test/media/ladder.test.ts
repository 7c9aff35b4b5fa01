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
    for (const bad of ['', '720:2M', '720p', '720p:2M,720p:3M', '9999p:1M']) assert.throws(() => parseLadder(bad), isLadderError, bad);
  });

  it('keeps the source aspect ratio with even widths', () => {
    const rungs = fitLadder(parseLadder('240p:300k,480p:1M'), { width: 640, height: 480 }, { allowUpscale: false, dropTaller: false });
    assert.deepEqual(rungs.map((r) => [r.width, r.height]), [
      [320, 240],
      [640, 480],
    ]);
  });

  it('refuses to upscale unless forced, and drops taller default rungs', () => {
    const source = { width: 640, height: 480 };
    assert.throws(() => fitLadder(parseLadder('360p:800k,720p:2.8M'), source, { allowUpscale: false, dropTaller: false }), (e: unknown) => isLadderError(e) && /--force/.test((e as Error).message));
    assert.equal(fitLadder(parseLadder('360p:800k,720p:2.8M'), source, { allowUpscale: true, dropTaller: false }).length, 2);
    assert.deepEqual(fitLadder(parseLadder(defaultLadderSpec), source, { allowUpscale: false, dropTaller: true }).map((r) => r.height), [234, 360]);
    assert.throws(() => fitLadder(parseLadder('720p:2M'), { width: 320, height: 180 }, { allowUpscale: false, dropTaller: true }), isLadderError);
  });
});
