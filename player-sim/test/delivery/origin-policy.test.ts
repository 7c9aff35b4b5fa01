/**
 * The simulator's model of a policy comes from the origin's own rules: sammy's cap is Algorithm 1's rate, with no
 * headroom, and none in the initial phase.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultDeliveryConfig, sammyDecision } from '@trickle/origin/rules';
import { originPolicyModel } from '../../src/delivery/origin-policy.js';
import type { DeliveryRequest } from '../../src/delivery/delivery-model.js';

const request = (overrides: Partial<DeliveryRequest>): DeliveryRequest => ({
  nowMs: 100_000,
  segmentNumber: 40,
  mediaStartSec: 80,
  durationSec: 2,
  segmentBitrateBps: 900e3,
  ladderBps: [400e3, 800e3, 1.4e6, 2.8e6],
  renditionBps: 800e3,
  bufferSec: 12,
  maxBufferSec: 30,
  cmcd: true,
  startedUp: true,
  idleMs: 0,
  rttMs: 40,
  firstRequest: false,
  ...overrides,
});

describe("the simulator's sammy model", () => {
  it("caps a segment at the rule's own rate (kernel pacing with no headroom), with the buffer the player says", () => {
    const model = originPolicyModel('sammy');
    const { capBps } = model.transfer(request({}));
    const expected = sammyDecision(
      {
        segment: { presentationSec: 80, ladderBps: [400e3, 800e3, 1.4e6, 2.8e6] },
        cmcd: { su: false, bl: 12_000 },
        viewer: undefined,
      },
      { ...defaultDeliveryConfig.sammy, startupSec: defaultDeliveryConfig.startupSec },
    );
    assert.equal(expected.initial, false);
    assert.equal(capBps, (expected as { rateBps: number }).rateBps);
    assert.ok(Math.abs(capBps! - (2.8 * 0.4 + 3.2 * 0.6) * 2.8e6) < 1e-6);
  });

  it('leaves the initial phase unpaced', () => {
    assert.equal(originPolicyModel('sammy').transfer(request({ startedUp: false })).capBps, undefined);
    assert.equal(originPolicyModel('sammy').transfer(request({ cmcd: false, mediaStartSec: 4 })).capBps, undefined);
  });
});
