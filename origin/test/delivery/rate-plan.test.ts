/**
 * Per-VBR-block rates, and their invariant: for any range, the time to deliver its throttled bytes
 * at R (as the paced body cuts them into blocks) equals the media time they carry, by ffprobe's
 * packet list (within 2 %), on the demo and on a file packaged with `trickle package` from a source
 * whose scenes swing from busy to still.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { kernelSchedule } from '../../src/delivery/kernel-schedule.js';
import { segmentRateBytesPerSec, startupEndByte, vbrBlocksOf } from '../../src/delivery/rate-plan.js';
import { mediaRatePlan } from '../../src/delivery/rates/media-rate.js';
import type { MediaResponse } from '../../src/delivery/rates/rate-rule.js';
import { ffprobe } from '../../src/media/ffmpeg.js';
import { buildAssetIndex, type AssetIndex, type ProgressiveIndex } from '../../src/media/media-index.js';
import { packageInput } from '../../src/media/packager.js';
import { demoDir } from '../helpers/media.js';

const exec = promisify(execFile);

interface ProbePacket {
  readonly stream_index: number;
  readonly pos: string;
  readonly size: string;
  readonly duration_time: string;
}

/** The video packets of a file (byte position, end, duration), from ffprobe, by position. */
async function videoPackets(path: string): Promise<{ start: number; end: number; durationSec: number }[]> {
  const probe = (await ffprobe(path, [
    '-select_streams',
    'v:0',
    '-show_packets',
    '-show_entries',
    'packet=stream_index,pos,size,duration_time',
  ])) as unknown as { packets: ProbePacket[] };
  return probe.packets
    .map((p) => ({ start: Number(p.pos), end: Number(p.pos) + Number(p.size), durationSec: Number(p.duration_time) }))
    .sort((a, b) => a.start - b.start);
}

/** Media seconds the bytes [start, end) carry by the packet list: the video packets wholly inside them. */
function carriedSec(
  packets: readonly { start: number; end: number; durationSec: number }[],
  start: number,
  end: number,
): number {
  return packets.reduce((sum, p) => (p.start >= start && p.end <= end ? sum + p.durationSec : sum), 0);
}

function progressiveResponse(progressive: ProgressiveIndex, rangeStart: number, rangeEnd: number): MediaResponse {
  return {
    asset: 'a',
    file: progressive.file,
    role: 'progressive',
    rangeStart,
    rangeEnd,
    cmcd: undefined,
    progressive: { blocks: vbrBlocksOf(progressive.byteTime, 2, progressive.sizeBytes) },
  };
}

/**
 * Seconds to deliver the throttled bytes of a plan at R, block by block as the paced body cuts them (64 kB from the
 * throttling start).
 */
function throttledSeconds(plan: ReturnType<typeof mediaRatePlan>, rangeEnd: number, blockBytes = 65_536): number {
  let seconds = 0;
  for (let offset = plan.startupEndOffset; offset <= rangeEnd; offset += blockBytes) {
    const size = Math.min(blockBytes, rangeEnd + 1 - offset);
    seconds += size / plan.rateAt(offset, size);
  }
  return seconds;
}

/** Checks the invariant on random ranges and startup lengths (seeded); returns the worst relative error seen. */
/** The byte at which a plan's time from `start` reaches `seconds` (bisection over a monotone clock). */
function byteAtPlanSeconds(secondsTo: (offset: number) => number, start: number, end: number, seconds: number): number {
  let [low, high] = [start, end];
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (secondsTo(middle) < seconds) low = middle;
    else high = middle;
  }
  return low;
}

function checkInvariant(
  progressive: ProgressiveIndex,
  packets: Awaited<ReturnType<typeof videoPackets>>,
  seed: number,
): number {
  const size = progressive.sizeBytes;
  let worst = 0;
  let judged = 0;
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: size - 1 }),
      fc.integer({ min: 0, max: size - 1 }),
      fc.constantFrom(0, 5, 10, 35),
      (a, b, startupSec) => {
        const [rangeStart, rangeEnd] = a <= b ? [a, b] : [b, a];
        const plan = mediaRatePlan(progressiveResponse(progressive, rangeStart, rangeEnd), { startupSec });
        if (plan.startupEndOffset > rangeEnd) return;
        const truth = carriedSec(packets, plan.startupEndOffset, rangeEnd + 1);
        const atR = throttledSeconds(plan, rangeEnd);
        // A few frames straddle the ends (a frame the map counts once complete, ffprobe once wholly inside).
        assert.ok(
          Math.abs(atR - truth) <= 0.15,
          `range ${rangeStart}-${rangeEnd}, startup ${startupSec} s: ${atR.toFixed(3)} s at R ` +
            `for ${truth.toFixed(3)} s of media`,
        );
        if (truth >= 5) {
          judged++;
          const error = Math.abs(atR / truth - 1);
          worst = Math.max(worst, error);
          assert.ok(
            error <= 0.02,
            `range ${rangeStart}-${rangeEnd}, startup ${startupSec} s: ${atR.toFixed(3)} s at R ` +
              `for ${truth.toFixed(3)} s of media`,
          );
        }
      },
    ),
    { seed, numRuns: 300 },
  );
  assert.ok(judged >= 50, `only ${judged} of 300 ranges carried 5 s or more`);
  return worst;
}

describe('per-VBR-block rates', () => {
  let index: AssetIndex;
  let packets: Awaited<ReturnType<typeof videoPackets>>;
  before(async () => {
    index = await buildAssetIndex('demo', demoDir(), {
      mpdFiles: ['manifest.mpd'],
      playlistFiles: [],
      mp4Files: ['progressive.mp4'],
    });
    packets = await videoPackets(join(demoDir(), 'progressive.mp4'));
  });

  it('gives each segment its own rate, which varies like the content', () => {
    const top = index.renditions.find((r) => r.height === 720)!;
    const rates = top.segments.map(segmentRateBytesPerSec);
    top.segments.forEach((s, i) => assert.equal(rates[i], s.sizeBytes / s.durationSec));
    assert.ok(Math.max(...rates) > 3 * Math.min(...rates), 'a per-file rate would be wrong for most segments');
  });

  it('cuts the progressive file into 2 s blocks whose rates follow the scenes and add up to its duration', () => {
    const progressive = index.progressive!;
    const blocks = vbrBlocksOf(progressive.byteTime, 2, progressive.sizeBytes);
    assert.ok(
      Math.abs(blocks.count - progressive.durationSec / 2) <= 1,
      `${blocks.count} blocks for ${progressive.durationSec} s`,
    );
    assert.equal(blocks.startBytes[0], 0);
    assert.equal(blocks.startBytes[blocks.count], progressive.sizeBytes);
    let seconds = 0;
    const rates: number[] = [];
    for (let k = 0; k < blocks.count; k++) {
      const rate = blocks.rateOf(k)!;
      rates.push(rate);
      seconds += (blocks.startBytes[k + 1]! - blocks.startBytes[k]!) / rate;
      assert.ok(Math.abs(blocks.startSec[k]! - 2 * k) < 0.05, `block ${k} starts at ${blocks.startSec[k]} s of media`);
    }
    assert.ok(
      Math.abs(seconds - progressive.byteTime.mediaTimeAtByte(progressive.sizeBytes)) < 1e-6,
      "whole blocks at their rates take the file's media time exactly",
    );
    assert.ok(
      Math.max(...rates) > 3 * Math.min(...rates),
      `block rates follow the scenes: ${rates.map((r) => Math.round((r * 8) / 1000)).join(' ')} kbit/s`,
    );
    // Startup boundaries in bytes, and a seek starts its own startup phase.
    const map = progressive.byteTime;
    assert.ok(Math.abs(map.mediaTimeAtByte(startupEndByte(map, 0, 10)) - 10) < 0.1);
    assert.ok(Math.abs(map.mediaTimeAtByte(startupEndByte(map, map.byteAtMediaTime(12), 6)) - 18) < 0.1);
    // A startup phase longer than the rest of the media covers all of it, bytes after the last sample too.
    assert.equal(startupEndByte(map, 0, 1000, progressive.sizeBytes), progressive.sizeBytes);
    const plan = mediaRatePlan(progressiveResponse(progressive, 0, progressive.sizeBytes - 1), { startupSec: 1000 });
    assert.equal(plan.startupEndOffset, progressive.sizeBytes);
  });

  it("steps where a block or the range's own cuts begin, uniform between steps; the kernel's schedule keeps the per-block time", () => {
    const progressive = index.progressive!;
    const blocks = vbrBlocksOf(progressive.byteTime, 2, progressive.sizeBytes);
    const [rangeStart, rangeEnd] = [1_000_001, progressive.sizeBytes - 2_000_001];
    const plan = mediaRatePlan(progressiveResponse(progressive, rangeStart, rangeEnd), { startupSec: 10 });
    const steps = plan.stepsWithin(rangeStart, rangeEnd + 1);
    const blockStarts = Array.from(blocks.startBytes).filter((byte) => byte > rangeStart && byte <= rangeEnd);
    assert.deepEqual(
      steps,
      [...blockStarts, plan.startupEndOffset].sort((a, b) => a - b),
    );
    for (const [from, to] of steps.slice(0, -1).map((step, i) => [step, steps[i + 1]!] as const)) {
      const half = Math.floor((from + to) / 2);
      const whole = plan.rateAt(from, to - from);
      assert.ok(Math.abs(plan.rateAt(from, half - from) / whole - 1) < 1e-9, `uniform over [${from}, ${to})`);
    }
    // The whole file at the program's 64 pieces (60 blocks: each its own piece) and at 16 (merged): every 12 s of
    // the plan's time gets 12 s of the schedule's within 1 % at 16 pieces (by 64 kB cuts merged evenly: -36 .. +125 %).
    const whole = mediaRatePlan(progressiveResponse(progressive, 0, progressive.sizeBytes - 1), { startupSec: 0 });
    const phaseStart = whole.startupEndOffset;
    const planSecondsTo = (offset: number) =>
      whole.stepsWithin(phaseStart, offset).reduce(
        (acc, step) => ({
          from: step,
          seconds: acc.seconds + (step - acc.from) / whole.rateAt(acc.from, step - acc.from),
        }),
        { from: phaseStart, seconds: 0 },
      );
    const secondsTo = (offset: number) => {
      const { from, seconds } = planSecondsTo(offset);
      return offset > from ? seconds + (offset - from) / whole.rateAt(from, offset - from) : seconds;
    };
    for (const maxPieces of [64, 16]) {
      const pieces = kernelSchedule(whole, phaseStart, progressive.sizeBytes - 1, maxPieces);
      const scheduleTo = (offset: number) =>
        pieces.reduce(
          (sum, p) => sum + Math.max(0, Math.min(offset, p.endOffset) - p.startOffset) / p.rateBytesPerSec,
          0,
        );
      let worst = 0;
      for (let startSec = 0; startSec + 12 <= secondsTo(progressive.sizeBytes); startSec += 1) {
        const [from, to] = [startSec, startSec + 12].map((seconds) =>
          byteAtPlanSeconds(secondsTo, phaseStart, progressive.sizeBytes, seconds),
        );
        worst = Math.max(
          worst,
          Math.abs((secondsTo(to!) - secondsTo(from!)) / (scheduleTo(to!) - scheduleTo(from!)) - 1),
        );
      }
      assert.ok(pieces.length <= maxPieces);
      assert.ok(
        worst < (maxPieces === 64 ? 1e-9 : 0.01),
        `${maxPieces} pieces: 12 s windows off by up to ${(worst * 100).toFixed(2)} %`,
      );
    }
  });

  it("delivers any range's throttled bytes at R in the media time they carry (within 2 %), on the demo", () => {
    const worst = checkInvariant(index.progressive!, packets, 20261123);
    console.log(`# demo: worst error over ranges carrying 5 s or more: ${(worst * 100).toFixed(2)} %`);
  });
});

describe('per-VBR-block rates on a file packaged with trickle package', () => {
  let work: string;
  let progressive: ProgressiveIndex;
  let packets: Awaited<ReturnType<typeof videoPackets>>;
  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'trickle-rates-'));
    const source = join(work, 'scenes.mp4');
    // 20 s that swing from busy to still and back: a rate per file would be wrong nearly everywhere.
    await exec('ffmpeg', [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=s=640x360:r=25:d=7',
      '-f',
      'lavfi',
      '-i',
      'color=c=0x336699:s=640x360:r=25:d=6',
      '-f',
      'lavfi',
      '-i',
      'mandelbrot=s=640x360:r=25,trim=duration=7',
      '-f',
      'lavfi',
      '-i',
      'sine=f=440:d=20',
      '-filter_complex',
      '[0:v][1:v][2:v]concat=n=3:v=1:a=0[v]',
      '-map',
      '[v]',
      '-map',
      '3:a',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-qp',
      '10',
      '-c:a',
      'aac',
      source,
    ]);
    await packageInput({
      input: source,
      outDir: join(work, 'asset'),
      ladder: '360p:1200k',
      segmentSeconds: 2,
      force: false,
      overwrite: false,
    });
    const index = await buildAssetIndex('asset', join(work, 'asset'), {
      mpdFiles: ['manifest.mpd'],
      playlistFiles: [],
      mp4Files: ['progressive.mp4'],
    });
    progressive = index.progressive!;
    packets = await videoPackets(join(work, 'asset', 'progressive.mp4'));
  });
  after(async () => {
    if (work !== undefined) await rm(work, { recursive: true, force: true });
  });

  it("delivers any range's throttled bytes at R in the media time they carry (within 2 %)", () => {
    const blocks = vbrBlocksOf(progressive.byteTime, 2, progressive.sizeBytes);
    const rates = Array.from({ length: blocks.count }, (_, k) => blocks.rateOf(k)!);
    assert.ok(
      Math.max(...rates) > 3 * Math.min(...rates),
      `the packaged file is VBR: ${rates.map((r) => Math.round((r * 8) / 1000)).join(' ')} kbit/s`,
    );
    const worst = checkInvariant(progressive, packets, 7);
    console.log(`# packaged file: worst error over ranges carrying 5 s or more: ${(worst * 100).toFixed(2)} %`);
  });
});
