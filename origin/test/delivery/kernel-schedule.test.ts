/** The kernel's schedule from a rate plan: equal neighbours merged, at most N pieces, the plan's time kept exactly. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kernelSchedule } from '../../src/delivery/kernel-schedule.js';

const seconds = (pieces: readonly { startOffset: number; endOffset: number; rateBytesPerSec: number }[]) =>
  pieces.reduce((sum, p) => sum + (p.endOffset - p.startOffset) / p.rateBytesPerSec, 0);

describe('kernelSchedule', () => {
  it('makes one piece of a constant-rate range, ending at the range end', () => {
    assert.deepEqual(kernelSchedule({ rateAt: () => 250_000 }, 1000, 300_999, 65_536, 32), [
      { startOffset: 1000, endOffset: 301_000, rateBytesPerSec: 250_000 },
    ]);
  });

  it("keeps per-block rates while they fit, and merges beyond that without changing the phase's time", () => {
    // A VBR file: R per 64 kB block alternates over 200 blocks.
    const rateAt = (offset: number) => 100_000 + ((offset / 65_536) % 7) * 40_000;
    const blocks = kernelSchedule({ rateAt }, 0, 65_536 * 20 - 1, 65_536, 32);
    assert.equal(blocks.length, 20);
    const merged = kernelSchedule({ rateAt }, 0, 65_536 * 200 - 1, 65_536, 32);
    assert.ok(merged.length <= 32 && merged.length >= 25, `${merged.length} pieces`);
    const exact = Array.from({ length: 200 }, (_, i) => 65_536 / rateAt(i * 65_536)).reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(seconds(merged) - exact) < 1e-9, `${seconds(merged)} s vs ${exact} s`);
    for (let i = 1; i < merged.length; i++) assert.equal(merged[i]!.startOffset, merged[i - 1]!.endOffset);
    assert.equal(merged.at(-1)!.endOffset, 65_536 * 200);
  });

  it('merges neighbours whose rates differ only by float noise, keeping the time', () => {
    // One media block's rate computed over 64 kB cuts at different offsets (seen on the demo: 364369.0000000002 and
    // 364368.99999999924).
    const rateAt = (offset: number) =>
      offset < 65_536 * 3 ? (offset % 131_072 === 0 ? 364369.0000000002 : 364368.99999999924) : 30_948;
    const pieces = kernelSchedule({ rateAt }, 0, 65_536 * 4 - 1, 65_536, 32);
    assert.equal(pieces.length, 2);
    assert.deepEqual(
      pieces.map((p) => p.endOffset),
      [65_536 * 3, 65_536 * 4],
    );
    const exact = (65_536 * 2) / 364369.0000000002 + 65_536 / 364368.99999999924 + 65_536 / 30_948;
    assert.ok(Math.abs(seconds(pieces) - exact) < 1e-12, `${seconds(pieces)} s vs ${exact} s`);
  });

  it('is empty when the throttling phase begins past the range', () => {
    assert.deepEqual(kernelSchedule({ rateAt: () => 1 }, 5000, 4999, 65_536, 32), []);
  });
});
