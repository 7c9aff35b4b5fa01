/**
 * The index against what real packagers wrote (the corpus scripts/test.js makes with
 * `trickle media corpus`: ffmpeg's DASH and HLS muxers, Shaka Packager v3.8): every shape indexed
 * the way its manifests address it, and every segment's rate within 1 % of what ffprobe's packet
 * list gives for the same bytes.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { corpusShapes } from '../../src/media/corpus.js';
import { inspectAsset } from '../../src/media/inspect.js';
import type { AssetIndex, RenditionIndex, SegmentEntry } from '../../src/media/media-index.js';
import { testCorpusRoot } from '../helpers/media.js';

const run = promisify(execFile);

/** What each shape must come out as: how its paced renditions are addressed and timed, and what is served plain. */
const expected: Record<
  string,
  {
    paced: number;
    addressing: RenditionIndex['addressing'];
    timing: string;
    container: string;
    plain?: RegExp[];
    periods?: number;
    encryption?: string;
    progressive?: { faststart: boolean; fragmented: boolean };
    note?: RegExp;
  }
> = {
  'ffmpeg-dash-number-timeline': { paced: 3, addressing: 'files', timing: 'moof', container: 'fmp4' },
  'ffmpeg-dash-time-timeline': {
    paced: 3,
    addressing: 'files',
    timing: 'moof',
    container: 'fmp4',
    note: /chunk-2-0\.m4s from chunk-2--1024\.m4s/,
  },
  'ffmpeg-dash-number-duration': { paced: 3, addressing: 'files', timing: 'moof', container: 'fmp4' },
  'ffmpeg-dash-single-file': { paced: 3, addressing: 'byte-ranges', timing: 'moof', container: 'fmp4' },
  'ffmpeg-hls-ts': { paced: 2, addressing: 'files', timing: 'pes', container: 'ts' },
  'ffmpeg-hls-ts-single-file': { paced: 2, addressing: 'byte-ranges', timing: 'pes', container: 'ts' },
  'ffmpeg-hls-fmp4-alt-audio': { paced: 3, addressing: 'files', timing: 'moof', container: 'fmp4' },
  'ffmpeg-hls-fmp4-single-file': { paced: 2, addressing: 'byte-ranges', timing: 'moof', container: 'fmp4' },
  'ffmpeg-hls-lone-playlist': { paced: 1, addressing: 'files', timing: 'pes', container: 'ts' },
  'ffmpeg-progressive-moov-at-end': {
    paced: 0,
    addressing: 'files',
    timing: '',
    container: '',
    progressive: { faststart: false, fragmented: false },
  },
  'ffmpeg-progressive-fragmented': {
    paced: 0,
    addressing: 'files',
    timing: '',
    container: '',
    progressive: { faststart: true, fragmented: true },
  },
  'shaka-on-demand': { paced: 3, addressing: 'sidx', timing: 'moof', container: 'fmp4' },
  'shaka-live-profile': {
    paced: 3,
    addressing: 'files',
    timing: 'moof',
    container: 'fmp4',
    plain: [/subtitles .* served, not paced/, /trick play/, /trick play/],
  },
  'shaka-hls-ts': {
    paced: 3,
    addressing: 'files',
    timing: 'pes',
    container: 'ts',
    plain: [/trick play/, /trick play/],
  },
  'shaka-multi-period': { paced: 6, addressing: 'files', timing: 'moof', container: 'fmp4', periods: 2 },
  'shaka-cenc-on-demand': { paced: 3, addressing: 'sidx', timing: 'moof', container: 'fmp4', encryption: 'cenc' },
  'shaka-cbcs-templates': { paced: 3, addressing: 'files', timing: 'moof', container: 'fmp4', encryption: 'cbcs' },
};

interface Probed {
  readonly packets: { readonly stream_index: number; readonly duration_time?: string; readonly pts_time?: string }[];
  readonly streams: { readonly index: number; readonly codec_type: string }[];
}

/** The segment's bytes as ffprobe can read them on their own: the init segment first for fMP4. */
async function segmentBytes(dir: string, rendition: RenditionIndex, segment: SegmentEntry): Promise<Buffer> {
  const file = await readFile(join(dir, segment.sourceFile ?? segment.file));
  const bytes = file.subarray(segment.offsetBytes, segment.offsetBytes + segment.sizeBytes);
  if (rendition.container === 'ts') return bytes;
  // An init segment that is the head of the media file (on-demand, single files) is that many bytes of it.
  const init = await readFile(join(dir, rendition.initFile!));
  return Buffer.concat([init.subarray(0, rendition.initSizeBytes), bytes]);
}

/**
 * Seconds of media in the file by ffprobe's packet list: the sum of its packets' durations, of the
 * video stream where there is one. The packet list, not the presentation: with -ignore_editlist, an
 * AAC track's priming samples (which an edit list hides at the presentation's start) count, as
 * they are bytes the segment carries. Where ffprobe gives no duration (encrypted audio), the step to
 * the next packet's time, and the usual step for the last one.
 */
async function probedSeconds(path: string): Promise<number> {
  const { stdout } = await run(
    'ffprobe',
    [
      '-v',
      'quiet',
      '-ignore_editlist',
      '1',
      '-show_entries',
      'packet=stream_index,duration_time,pts_time:stream=index,codec_type',
      '-of',
      'json',
      path,
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  const probed = JSON.parse(stdout) as Probed;
  const reference =
    probed.streams.find((s) => s.codec_type === 'video') ?? probed.streams.find((s) => s.codec_type === 'audio');
  const packets = probed.packets.filter((p) => p.stream_index === reference?.index);
  const times = packets.map((p) => Number(p.pts_time)).sort((a, b) => a - b);
  const steps = times
    .slice(1)
    .map((t, i) => t - times[i]!)
    .sort((a, b) => a - b);
  const usualStep = steps[Math.floor(steps.length / 2)] ?? 0;
  return packets.reduce((sum, p) => sum + (p.duration_time !== undefined ? Number(p.duration_time) : usualStep), 0);
}

describe('the packaging corpus: what ffmpeg and Shaka Packager wrote', () => {
  const root = testCorpusRoot();
  const indexes = new Map<string, AssetIndex>();
  let scratch: string;

  before(async () => {
    scratch = await mkdtemp(join(tmpdir(), 'trickle-corpus-probe-'));
    for (const shape of corpusShapes) indexes.set(shape.name, await inspectAsset(join(root, shape.name)));
  });

  after(() => rm(scratch, { recursive: true, force: true }));

  it('has every shape the corpus command knows, each with its expectation here', () => {
    assert.deepEqual(corpusShapes.map((s) => s.name).sort(), Object.keys(expected).sort());
  });

  for (const shape of corpusShapes) {
    it(`${shape.name} (${shape.tool}): ${shape.description}: indexed and paced as its manifests address it`, () => {
      const index = indexes.get(shape.name)!;
      const want = expected[shape.name]!;
      assert.deepEqual(index.issues, [], 'nothing left unread');
      const paced = index.renditions.filter((r) => r.pacing.paced);
      assert.equal(
        paced.length,
        want.paced,
        index.renditions.map((r) => `${r.id}: ${JSON.stringify(r.pacing)}`).join('; '),
      );
      for (const rendition of paced) {
        assert.equal(rendition.addressing, want.addressing, rendition.id);
        assert.equal(rendition.pacing.paced && rendition.pacing.timing, want.timing, rendition.id);
        assert.equal(rendition.container, want.container, rendition.id);
        // A 6 s clip in 2 s segments (Shaka's multi-Period shape: 4 s in the first Period, 2 s in the second).
        const periodSec = want.periods === undefined ? 6 : rendition.period === 0 ? 4 : 2;
        assert.ok(rendition.segments.length >= periodSec / 2, `${rendition.id}: ${rendition.segments.length} segments`);
        assert.ok(
          Math.abs(rendition.durationSec - periodSec) < 0.15,
          `${rendition.id}: ${rendition.durationSec} s of ${periodSec} s`,
        );
        if (want.encryption !== undefined) assert.equal(rendition.encryption, want.encryption, rendition.id);
      }
      const plain = index.renditions.filter((r) => !r.pacing.paced).map((r) => (r.pacing.paced ? '' : r.pacing.reason));
      assert.equal(plain.length, want.plain?.length ?? 0, plain.join('; '));
      want.plain?.forEach((reason, i) => assert.match(plain[i]!, reason));
      if (want.periods !== undefined) assert.equal(new Set(paced.map((r) => r.period)).size, want.periods);
      if (want.note !== undefined)
        assert.ok(
          paced.some((r) => r.pacing.paced && want.note!.test(r.pacing.note ?? '')),
          'the misnamed segment is said',
        );
      if (want.progressive === undefined) {
        assert.equal(index.progressive, undefined, 'no rendition file is taken for a progressive one');
      } else {
        assert.equal(index.progressive?.faststart, want.progressive.faststart);
        assert.equal(index.progressive?.fragmented, want.progressive.fragmented);
        assert.ok(
          Math.abs(index.progressive!.durationSec - 6) < 0.15,
          `progressive ${index.progressive!.durationSec} s`,
        );
      }
    });
  }

  it(
    "gives every segment of every shape its rate within 1 % of what ffprobe's packet " +
      'list gives for the same bytes',
    async () => {
      const checks: { label: string; indexBps: number; probedBps: number }[] = [];
      let n = 0;
      await Promise.all(
        corpusShapes.map(async (shape) => {
          for (const rendition of indexes.get(shape.name)!.renditions.filter((r) => r.pacing.paced)) {
            for (const segment of rendition.segments) {
              const path = join(scratch, `${n++}.${rendition.container === 'ts' ? 'ts' : 'mp4'}`);
              await writeFile(path, await segmentBytes(join(root, shape.name), rendition, segment));
              checks.push({
                label: `${shape.name} ${rendition.id} #${segment.number}`,
                indexBps: segment.bitrateBps,
                probedBps: (segment.sizeBytes * 8) / (await probedSeconds(path)),
              });
            }
          }
        }),
      );
      const off = checks.filter((c) => !(Math.abs(c.indexBps / c.probedBps - 1) <= 0.01));
      const worst = Math.max(...checks.map((c) => Math.abs(c.indexBps / c.probedBps - 1)));
      console.log(
        `# ${checks.length} segments of ${corpusShapes.length} shapes: worst rate ` +
          `difference to ffprobe ${(worst * 100).toFixed(3)} %`,
      );
      assert.ok(checks.length > 100, `${checks.length} segments checked`);
      assert.deepEqual(
        off.map((c) => `${c.label}: ${Math.round(c.indexBps)} vs ${Math.round(c.probedBps)}`),
        [],
      );
    },
  );
});
