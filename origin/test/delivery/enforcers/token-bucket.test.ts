/**
 * The token-bucket enforcer over VBR media: it releases the media at headroom x real time whatever
 * the blocks' rates, and a long wait for the socket saves time, not bytes of whichever block was
 * current (tokens saved at a block's high rate and spent on low-rate blocks would release media
 * faster than its schedule).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Block, Enforcement, Observation } from '../../../src/delivery/enforcers/enforcer.js';
import { tokenBucketEnforcer } from '../../../src/delivery/enforcers/token-bucket.js';

const blockBytes = 65_536;
const headroom = 1.25;
const observation: Observation = { reading: undefined, progress: undefined, schedule: { startMs: 0, handedSec: 0 } };

function start(): Enforcement {
  const enforcement = tokenBucketEnforcer('app-pacing', { headroom, blockBytes }).start({
    socket: {} as never,
    control: {} as never,
    socketError: () => assert.fail('a token bucket touches no socket'),
  });
  enforcement.startThrottling({ nowMs: 0, reading: undefined, unsent: { sizeBytes: 0, rateBytesPerSec: 50_000 } });
  return enforcement;
}

/**
 * Writes `rates` (bytes/s, one 64 kB block each) as the engine does: each block waits what
 * beforeBlock says, plus `stallMs[i]` for the socket before block i is asked for. Returns each
 * block's write time.
 */
function drive(enforcement: Enforcement, rates: readonly number[], stallMs: ReadonlyMap<number, number>): number[] {
  let nowMs = 0;
  let offset = 0;
  const writesMs: number[] = [];
  rates.forEach((rateBytesPerSec, index) => {
    nowMs += stallMs.get(index) ?? 0;
    const block = (at: number): Block => ({ offset, sizeBytes: blockBytes, rateBytesPerSec, nowMs: at });
    nowMs += enforcement.beforeBlock(block(nowMs), observation);
    assert.equal(enforcement.beforeBlock(block(nowMs), observation), 0, 'the wait it asked for is enough');
    enforcement.afterBlock(block(nowMs));
    writesMs.push(nowMs);
    offset += blockBytes;
  });
  return writesMs;
}

/** Media seconds of the blocks written by each write time. */
function mediaSecBy(rates: readonly number[]): number[] {
  let sum = 0;
  return rates.map((rate) => (sum += blockBytes / rate));
}

describe('token-bucket enforcer', () => {
  it('releases constant-rate media at headroom x R, the first block at once', () => {
    const rate = 50_000;
    const writesMs = drive(start(), Array(5).fill(rate), new Map());
    const intervalMs = (blockBytes / (headroom * rate)) * 1000;
    writesMs.forEach((writeMs, index) => assert.ok(Math.abs(writeMs - index * intervalMs) < 1e-6, `block ${index}`));
  });

  it('never releases VBR media ahead of headroom x real time, even after a long wait at a high-rate block', () => {
    // A VBR stream: two blocks at twice the mean rate, then low-rate blocks. The socket holds the
    // writer 1.6 s while the high-rate block is current (the case the delivery-engine test caught:
    // the phase 1.6 s short).
    const rates = [100_000, 100_000, ...Array<number>(12).fill(25_000)];
    const writesMs = drive(start(), rates, new Map([[1, 1600]]));
    const mediaSec = mediaSecBy(rates);
    const firstBlockSec = blockBytes / rates[0]!;
    writesMs.forEach((writeMs, index) => {
      const allowedSec = firstBlockSec + (headroom * writeMs) / 1000;
      assert.ok(
        mediaSec[index]! <= allowedSec + 1e-9,
        `block ${index}: ${mediaSec[index]!.toFixed(3)} s of media out by ${writeMs.toFixed(0)} ms (at most ${allowedSec.toFixed(3)} s)`,
      );
    });
    // And it catches up what the wait cost: the wall time is the media's at headroom, not more.
    const lastMs = writesMs.at(-1)!;
    const scheduleMs = ((mediaSec.at(-1)! - firstBlockSec) / headroom) * 1000;
    assert.ok(Math.abs(lastMs - scheduleMs) < 1e-6, `last block at ${lastMs} ms, schedule ${scheduleMs} ms`);
  });

  it('spends time saved in a stall back to back on recovery (catch-up), as ustreamer did', () => {
    const rate = 50_000;
    const rates = Array<number>(8).fill(rate);
    const writesMs = drive(start(), rates, new Map([[1, 5000]]));
    // 5 s at 1.25 x 50 kB/s holds 4.77 blocks: blocks 1-4 leave at the stall's end together.
    assert.deepEqual(writesMs.slice(1, 5), [5000, 5000, 5000, 5000]);
    assert.ok(writesMs[5]! > 5000);
  });
});
