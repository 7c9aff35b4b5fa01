/**
 * The flow meter (pure, readings passed in): phases, the startup bytes left in the socket, and goodput against the
 * schedule.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TcpInfo } from '@trickle/native';
import { FlowMeter } from '../../src/delivery/flow-meter.js';
import type { RatePlan } from '../../src/delivery/rates/rate-rule.js';

/** A meter whose every reading is whatever `state.info` holds. */
function meter(limitsInSocket: boolean) {
  const state: { info: TcpInfo } = {
    info: { kernelLengthBytes: 280, bytesAcked: 0, unacked: 0, mss: 1000, notsentBytes: 0, rttUs: 40_000, cwnd: 10 },
  };
  const flow = new FlowMeter(() => state.info, { atMs: 0, info: state.info }, { goodputGraceRtts: 10, limitsInSocket });
  return { state, flow };
}

/**
 * R of 100 kB/s before byte 1,000,000 and 200 kB/s after (VBR); the media at half those rates (an ABR rule's target
 * above it).
 */
const plan: RatePlan = {
  startupEndOffset: 500_000,
  rateAt: (offset) => (offset < 1_000_000 ? 100_000 : 200_000),
  stepsWithin: (start, end) => (start < 1_000_000 && end > 1_000_000 ? [1_000_000] : []),
  media: {
    rateAt: (offset) => (offset < 1_000_000 ? 50_000 : 100_000),
    stepsWithin: (start, end) => (start < 1_000_000 && end > 1_000_000 ? [1_000_000] : []),
  },
  reason: 'test',
  headers: {},
};

describe('flow meter', () => {
  it(
    'counts startup bytes still unsent when throttling begins toward the throttled ' +
      'phase under a limit in the socket',
    () => {
      const { state, flow } = meter(true);
      flow.written({ offset: 0, sizeBytes: 500_000, rateBytesPerSec: 100_000, nowMs: 0 }, 'startup', 50_000);
      // At the phase's start 300 kB are acknowledged, 100 kB in flight (100 packets), 100 kB unsent.
      state.info = { ...state.info, bytesAcked: 300_000, unacked: 100, notsentBytes: 100_000 };
      const start = flow.startThrottling(1000, 500_000, plan);
      assert.deepEqual(start.unsent, { sizeBytes: 100_000, rateBytesPerSec: 100_000 });
      const facts = flow.facts();
      assert.equal(facts.startupBacklogBytes, 100_000, 'in flight: startup goodput');
      assert.equal(facts.throttledTargetMeanBps, 800_000, "the unsent bytes are the phase's first, at their own R");
      assert.equal(facts.mediaRateBps?.mean, 400_000);
    },
  );

  it('judges goodput only after the grace, against R of what the kernel has taken (VBR)', () => {
    const { state, flow } = meter(true);
    flow.startThrottling(0, 500_000, plan);
    // Within 10 RTTs (400 ms): not judged.
    assert.equal(flow.observe(300).progress, undefined);
    flow.written({ offset: 500_000, sizeBytes: 500_000, rateBytesPerSec: 100_000, nowMs: 300 }, 'throttling', 50_000);
    flow.written(
      { offset: 1_000_000, sizeBytes: 400_000, rateBytesPerSec: 200_000, nowMs: 4000 },
      'throttling',
      100_000,
    );
    // By 5 s the kernel took 700 kB: the 500 kB at 100 kB/s (5 s) and 200 kB of the 400 kB at 200 kB/s (1 s).
    state.info = { ...state.info, bytesAcked: 600_000, unacked: 50, notsentBytes: 50_000 };
    const progress = flow.observe(5000).progress!;
    assert.equal(progress.goodputBytesPerSec, 140_000);
    assert.ok(Math.abs(progress.targetBytesPerSec! - 700_000 / 6) < 1e-6, `target ${progress.targetBytesPerSec}`);
    // A drained socket: the shortfall, if any, is the sender's own; not judged.
    state.info = { ...state.info, bytesAcked: 650_000, unacked: 50, notsentBytes: 0 };
    assert.equal(flow.observe(5000).progress, undefined);
    // The cwnd read before each throttled block is the block's.
    flow.written(
      { offset: 1_400_000, sizeBytes: 100_000, rateBytesPerSec: 200_000, nowMs: 5000 },
      'throttling',
      100_000,
    );
    assert.deepEqual(flow.facts().cwndPackets, { min: 10, mean: 10, max: 10 });
  });

  it('gives a response that never throttled the rates of all its bytes and no throttled figures', () => {
    const { flow } = meter(false);
    flow.written({ offset: 0, sizeBytes: 400_000, rateBytesPerSec: 100_000, nowMs: 0 }, 'startup', 50_000);
    flow.written({ offset: 400_000, sizeBytes: 200_000, rateBytesPerSec: 200_000, nowMs: 10 }, 'startup', 100_000);
    const facts = flow.facts();
    assert.equal(facts.throttlingStart, undefined);
    assert.equal(facts.startupBytes, 600_000);
    // Byte-weighted harmonic means: 600 kB over 4 s + 1 s at R, over 8 s + 2 s at the media's rate.
    assert.deepEqual(facts.targetRateBps, { min: 800_000, mean: 960_000, max: 1_600_000 });
    assert.deepEqual(facts.mediaRateBps, { min: 400_000, mean: 480_000, max: 800_000 });
    assert.equal(facts.throttledTargetMeanBps, undefined);
    assert.equal(facts.cwndPackets, null);
  });
});
