/**
 * The kernel's schedule from a rate plan: cut at the plan's steps, equal neighbours merged, at most N pieces by the
 * cheapest merges, the plan's time kept exactly at every piece edge.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kernelSchedule, type FilePiece } from '../../src/delivery/kernel-schedule.js';

/** A plan whose R is `rates[i]` over [edges[i], edges[i + 1]). */
function steppedPlan(edges: readonly number[], rates: readonly number[]) {
  const runAt = (offset: number) => {
    let i = 0;
    while (i + 1 < rates.length && offset >= edges[i + 1]!) i++;
    return i;
  };
  return {
    // Exact over any run: its bytes over the seconds they take at each step's own R.
    rateAt: (offset: number, sizeBytes: number) => {
      let seconds = 0;
      for (let at = offset; at < offset + sizeBytes; ) {
        const i = runAt(at);
        const to = Math.min(offset + sizeBytes, edges[i + 1]!);
        seconds += (to - at) / rates[i]!;
        at = to;
      }
      return sizeBytes / seconds;
    },
    stepsWithin: (start: number, end: number) => edges.filter((edge) => edge > start && edge < end),
    /** The plan's seconds from `from` to `offset`. */
    secondsTo: (from: number, offset: number) => {
      let seconds = 0;
      for (let at = from; at < offset; ) {
        const i = runAt(at);
        const to = Math.min(offset, edges[i + 1]!);
        seconds += (to - at) / rates[i]!;
        at = to;
      }
      return seconds;
    },
  };
}

/** The schedule's seconds from its start to `offset`. */
function scheduleSecondsTo(pieces: readonly FilePiece[], offset: number): number {
  let seconds = 0;
  for (const piece of pieces) {
    const to = Math.min(offset, piece.endOffset);
    if (to > piece.startOffset) seconds += (to - piece.startOffset) / piece.rateBytesPerSec;
  }
  return seconds;
}

/** The most the schedule strays from the plan's time at any of the plan's steps (seconds). */
function straying(
  plan: ReturnType<typeof steppedPlan>,
  pieces: readonly FilePiece[],
  edges: readonly number[],
): number {
  const start = pieces[0]!.startOffset;
  return Math.max(...edges.map((edge) => Math.abs(scheduleSecondsTo(pieces, edge) - plan.secondsTo(start, edge))));
}

/** Deterministic VBR rates (a linear congruential generator): 60-300 kB/s. */
function vbrRates(count: number, seed: number): number[] {
  let state = seed;
  return Array.from({ length: count }, () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31;
    return 60_000 + (state / 2 ** 31) * 240_000;
  });
}

describe('kernelSchedule', () => {
  it('makes one piece of a constant-rate range, ending at the range end', () => {
    assert.deepEqual(kernelSchedule({ rateAt: () => 250_000, stepsWithin: () => [] }, 1000, 300_999, 32), [
      { startOffset: 1000, endOffset: 301_000, rateBytesPerSec: 250_000 },
    ]);
  });

  it("cuts at the plan's steps, from where the phase begins, with each run's own rate while they fit", () => {
    const edges = [0, 30_000, 55_000, 90_000, 120_000];
    const plan = steppedPlan(edges, [12_000, 30_000, 9_000, 20_000]);
    assert.deepEqual(kernelSchedule(plan, 40_000, 119_999, 32), [
      { startOffset: 40_000, endOffset: 55_000, rateBytesPerSec: 30_000 },
      { startOffset: 55_000, endOffset: 90_000, rateBytesPerSec: 9_000 },
      { startOffset: 90_000, endOffset: 120_000, rateBytesPerSec: 20_000 },
    ]);
  });

  it('merges the most alike neighbours first: two runs of near rates, not a scene change', () => {
    // Rates 100, 101 | 300, 302 | 100, 100.5 kB/s over 100 kB runs: three pieces, one per scene.
    const edges = [0, 1e5, 2e5, 3e5, 4e5, 5e5, 6e5];
    const plan = steppedPlan(edges, [100e3, 101e3, 300e3, 302e3, 100e3, 100.5e3]);
    assert.deepEqual(
      kernelSchedule(plan, 0, 6e5 - 1, 3).map((piece) => [piece.startOffset, piece.endOffset]),
      [
        [0, 2e5],
        [2e5, 4e5],
        [4e5, 6e5],
      ],
    );
  });

  it("keeps the phase's time at every piece edge, and strays less than merging equal numbers of runs", () => {
    const edges = Array.from({ length: 201 }, (_, i) => i * 25_000 + (i % 3) * 1000);
    const plan = steppedPlan(edges, vbrRates(200, 7));
    const rangeEnd = edges.at(-1)! - 1;
    const pieces = kernelSchedule(plan, 0, rangeEnd, 32);
    assert.equal(pieces.length, 32);
    for (let i = 1; i < pieces.length; i++) assert.equal(pieces[i]!.startOffset, pieces[i - 1]!.endOffset);
    assert.equal(pieces.at(-1)!.endOffset, rangeEnd + 1);
    for (const piece of pieces) {
      assert.ok(edges.includes(piece.endOffset), `piece edge ${piece.endOffset} is one of the plan's steps`);
      const error = scheduleSecondsTo(pieces, piece.endOffset) - plan.secondsTo(0, piece.endOffset);
      assert.ok(Math.abs(error) < 1e-9, `at ${piece.endOffset}: ${error} s off the plan`);
    }
    // Today's rival: 200 runs in groups of ceil(200 / 32) = 7, each at its bytes over its seconds.
    const byCount: FilePiece[] = [];
    for (let i = 0; i < 200; i += 7) {
      const startOffset = edges[i]!;
      const endOffset = edges[Math.min(200, i + 7)]!;
      byCount.push({
        startOffset,
        endOffset,
        rateBytesPerSec: (endOffset - startOffset) / plan.secondsTo(startOffset, endOffset),
      });
    }
    const cheapest = straying(plan, pieces, edges);
    const equalCounts = straying(plan, byCount, edges);
    assert.ok(
      cheapest < 0.6 * equalCounts,
      `strays ${cheapest.toFixed(4)} s, by equal counts ${equalCounts.toFixed(4)} s`,
    );
  });

  it("merges thousands of runs down to the program's pieces (a two-hour file cut at 2 s blocks)", () => {
    const edges = Array.from({ length: 3601 }, (_, i) => i * 50_000);
    const plan = steppedPlan(edges, vbrRates(3600, 11));
    const pieces = kernelSchedule(plan, 0, edges.at(-1)! - 1, 64);
    assert.equal(pieces.length, 64);
    const total = plan.secondsTo(0, edges.at(-1)!);
    assert.ok(Math.abs(scheduleSecondsTo(pieces, edges.at(-1)!) - total) < 1e-6);
  });

  it('merges neighbours whose rates differ only by float noise, keeping the time', () => {
    // One media block's rate computed over cuts at different offsets (seen on the demo: 364369.0000000002 and
    // 364368.99999999924).
    const rates = [364369.0000000002, 364368.99999999924, 364369.0000000002, 30_948];
    const rateAt = (offset: number) => rates[Math.floor(offset / 65_536)]!;
    const stepsWithin = (start: number, end: number) =>
      [65_536, 131_072, 196_608].filter((edge) => edge > start && edge < end);
    const pieces = kernelSchedule({ rateAt, stepsWithin }, 0, 65_536 * 4 - 1, 32);
    assert.deepEqual(
      pieces.map((p) => p.endOffset),
      [65_536 * 3, 65_536 * 4],
    );
    const exact = rates.reduce((sum, rate) => sum + 65_536 / rate, 0);
    const seconds = pieces.reduce((sum, p) => sum + (p.endOffset - p.startOffset) / p.rateBytesPerSec, 0);
    assert.ok(Math.abs(seconds - exact) < 1e-12, `${seconds} s vs ${exact} s`);
  });

  it('is empty when the throttling phase begins past the range', () => {
    assert.deepEqual(kernelSchedule({ rateAt: () => 1, stepsWithin: () => [] }, 5000, 4999, 32), []);
  });
});
