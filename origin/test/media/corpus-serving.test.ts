/**
 * The corpus served for real (loopback, fastify, real sockets): one segment of every paced
 * rendition of every shape asked for the way its manifests address it (a file, or a byte range of
 * one), byte-equal to the file, with a flow record that names its rendition and segment and carries
 * the segment's own rate; a range inside an on-demand file's segment is paced at that segment's
 * rate, one across two segments at each one's; init ranges, I-frame ranges and subtitles go plain.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import type { FlowRecord } from '../../src/delivery/flow-record.js';
import { corpusShapes } from '../../src/media/corpus.js';
import { inspectAsset } from '../../src/media/inspect.js';
import type { AssetIndex, SegmentEntry } from '../../src/media/media-index.js';
import { testCorpusRoot } from '../helpers/media.js';

describe('the packaging corpus served', () => {
  const root = testCorpusRoot();
  let app: FastifyInstance;
  let url: string;
  const indexes = new Map<string, AssetIndex>();

  before(async () => {
    // Throttling from the first segment (a 6 s clip is all startup at the default 35 s), the default policy.
    app = await buildApp({
      config: await loadConfig({ flags: { media: root, logLevel: 'silent', delivery: { startupSec: 0 } } }),
      logger: false,
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    for (const shape of corpusShapes) indexes.set(shape.name, await inspectAsset(join(root, shape.name)));
  });

  after(() => app.close());

  /** GET as a player would: the file, with a Range when the segment is part of a larger file. */
  async function fetchBytes(
    asset: string,
    file: string,
    range?: { start: number; end: number },
  ): Promise<{ status: number; body: Buffer; serverTiming: string | null }> {
    const response = await fetch(
      `${url}/media/${asset}/${file}`,
      range === undefined ? {} : { headers: { range: `bytes=${range.start}-${range.end}` } },
    );
    return {
      status: response.status,
      body: Buffer.from(await response.arrayBuffer()),
      serverTiming: response.headers.get('server-timing'),
    };
  }

  async function recordsOf(asset: string): Promise<FlowRecord[]> {
    const { flows } = (await (await fetch(`${url}/api/flows?limit=100000`)).json()) as { flows: FlowRecord[] };
    return flows.filter((f) => f.asset === asset);
  }

  /**
   * The record of a response, once written: a record is closed when the response's last bytes are acknowledged, after
   * its body ends.
   */
  async function recordOf(asset: string, which: (record: FlowRecord) => boolean): Promise<FlowRecord | undefined> {
    for (let attempt = 0; attempt < 100; attempt++) {
      const found = (await recordsOf(asset)).find(which);
      if (found !== undefined) return found;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return undefined;
  }

  const near = (a: number, b: number) => Math.abs(a / b - 1) < 0.005;

  it('serves one segment of every paced rendition of every shape, byte for byte, paced at its own rate', async () => {
    const asked: { asset: string; rendition: string; segment: SegmentEntry }[] = [];
    await Promise.all(
      corpusShapes.map(async (shape) => {
        const index = indexes.get(shape.name)!;
        for (const rendition of index.renditions.filter((r) => r.pacing.paced)) {
          const segment = rendition.segments[Math.min(1, rendition.segments.length - 1)]!;
          const ranged = rendition.addressing !== 'files';
          const { status, body } = await fetchBytes(
            shape.name,
            segment.file,
            ranged ? { start: segment.offsetBytes, end: segment.offsetBytes + segment.sizeBytes - 1 } : undefined,
          );
          assert.equal(status, ranged ? 206 : 200, `${shape.name} ${segment.file}`);
          const file = await readFile(join(root, shape.name, segment.sourceFile ?? segment.file));
          assert.ok(
            body.equals(file.subarray(segment.offsetBytes, segment.offsetBytes + segment.sizeBytes)),
            `${shape.name} ${segment.file}: the body is the file's bytes`,
          );
          asked.push({ asset: shape.name, rendition: rendition.id, segment });
        }
      }),
    );
    assert.ok(asked.length >= 40, `${asked.length} segments asked`);
    for (const { asset, rendition, segment } of asked) {
      const record = await recordOf(asset, (f) => f.rendition === rendition && f.segmentNumber === segment.number);
      assert.ok(record !== undefined, `${asset} ${rendition} #${segment.number}: a flow record`);
      assert.equal(record.role, 'segment');
      assert.equal(record.bytes, segment.sizeBytes);
      assert.equal(record.policy, 'trickle-abr');
      assert.ok(
        record.mediaRateBps !== null && near(record.mediaRateBps.mean, segment.bitrateBps),
        `${asset} ${rendition} #${segment.number}: media rate ${record.mediaRateBps?.mean} for ${segment.bitrateBps}`,
      );
      assert.ok(
        record.targetRateBps !== null && record.targetRateBps.mean >= segment.bitrateBps * 0.999,
        `${asset}: aimed at ${record.targetRateBps?.mean}`,
      );
    }
  });

  it(
    "paces a range inside an on-demand file's segment at that segment's rate, and one " +
      "across two segments at each one's",
    async () => {
      const index = indexes.get('shaka-on-demand')!;
      const video = index.renditions.find((r) => r.kind === 'video' && r.pacing.paced)!;
      const [first, second] = video.segments as [SegmentEntry, SegmentEntry];
      const inside = { start: second.offsetBytes + 1000, end: second.offsetBytes + 50_999 };
      const file = await readFile(join(root, 'shaka-on-demand', second.file));
      const part = await fetchBytes('shaka-on-demand', second.file, inside);
      assert.equal(part.status, 206);
      assert.ok(part.body.equals(file.subarray(inside.start, inside.end + 1)));
      const across = { start: first.offsetBytes, end: second.offsetBytes + 40_000 - 1 };
      const both = await fetchBytes('shaka-on-demand', second.file, across);
      assert.ok(both.body.equals(file.subarray(across.start, across.end + 1)));
      const insideRecord = (await recordOf(
        'shaka-on-demand',
        (f) => f.range.start === inside.start && f.range.end === inside.end,
      ))!;
      assert.equal(insideRecord.role, 'segment');
      assert.equal(insideRecord.segmentNumber, second.number);
      assert.ok(
        near(insideRecord.mediaRateBps!.mean, second.bitrateBps),
        `${insideRecord.mediaRateBps?.mean} for ${second.bitrateBps}`,
      );
      const acrossRecord = (await recordOf(
        'shaka-on-demand',
        (f) => f.range.start === across.start && f.range.end === across.end,
      ))!;
      assert.equal(acrossRecord.role, 'progressive', 'a range over several segments is paced block by block');
      // Each write block at the rate of the bytes it carries: the two segments' rates, or a mix of both for a block
      // across their edge.
      const [low, high] = [first.bitrateBps, second.bitrateBps].sort((a, b) => a - b) as [number, number];
      const rates = acrossRecord.mediaRateBps!;
      assert.ok(
        rates.min >= low * 0.995 && rates.max <= high * 1.005 && rates.max > rates.min * 1.05,
        `${JSON.stringify(rates)} for ${low} and ${high}`,
      );
    },
  );

  it(
    'sends init ranges, I-frame ranges and subtitles plainly (no flow record), and a ' +
      'misnamed $Time$ segment under its manifest name',
    async () => {
      const onDemand = indexes.get('shaka-on-demand')!.renditions.find((r) => r.kind === 'video')!;
      const init = await fetchBytes('shaka-on-demand', onDemand.initFile!, {
        start: 0,
        end: onDemand.initSizeBytes - 1,
      });
      assert.equal(init.status, 206);
      const live = indexes.get('shaka-live-profile')!;
      const subtitles = live.renditions.find((r) => r.container === 'text')!;
      assert.equal(subtitles.pacing.paced, false);
      const vtt = await fetchBytes('shaka-live-profile', 't/1.vtt');
      assert.equal(vtt.status, 200);
      assert.match(vtt.body.toString(), /WEBVTT/);
      const iframes = (await readFile(join(root, 'shaka-live-profile', 'v0_iframe.m3u8'), 'utf8')).match(
        /#EXT-X-BYTERANGE:(\d+)@(\d+)\s+(\S+)/,
      )!;
      const [, length, offset, file] = iframes;
      const iframe = await fetchBytes('shaka-live-profile', file!, {
        start: Number(offset),
        end: Number(offset) + Number(length) - 1,
      });
      assert.equal(iframe.status, 206);
      const liveRecords = await recordsOf('shaka-live-profile');
      assert.ok(
        !liveRecords.some(
          (f) =>
            f.file === file && f.range.start === Number(offset) && f.range.end === Number(offset) + Number(length) - 1,
        ),
        'the I-frame range is not paced',
      );
      assert.ok(
        !(await recordsOf('shaka-on-demand')).some(
          (f) => f.range.start === 0 && f.range.end === onDemand.initSizeBytes - 1,
        ),
        'the init range is not paced',
      );

      const aliased = await fetchBytes('ffmpeg-dash-time-timeline', 'chunk-2-0.m4s');
      assert.equal(aliased.status, 200);
      assert.ok(aliased.body.equals(await readFile(join(root, 'ffmpeg-dash-time-timeline', 'chunk-2--1024.m4s'))));
    },
  );

  it('paces progressive files with the moov at the end and fragmented ones by VBR block', async () => {
    for (const asset of ['ffmpeg-progressive-moov-at-end', 'ffmpeg-progressive-fragmented']) {
      const { status, body } = await fetchBytes(asset, 'clip.mp4', { start: 0, end: 199_999 });
      assert.equal(status, 206);
      assert.equal(body.length, 200_000);
      const record = await recordOf(asset, (f) => f.file === 'clip.mp4');
      assert.equal(record?.role, 'progressive', asset);
      assert.ok((record?.mediaRateBps?.mean ?? 0) > 100_000, `${asset}: ${JSON.stringify(record?.mediaRateBps)}`);
    }
  });
});
