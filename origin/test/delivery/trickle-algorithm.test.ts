import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { trickleDecision, type TrickleInput } from '../../src/delivery/trickle-algorithm.js';

const base: TrickleInput = {
  rateBytesPerSec: 250_000,
  rttUs: 40_000,
  mssBytes: 1448,
  goodputBytesPerSec: undefined,
  appLimited: false,
  gain: 1.2,
  floorPackets: 10,
};

describe('Algorithm 1 decision', () => {
  const table: [
    string,
    Partial<TrickleInput>,
    ReturnType<typeof trickleDecision>['action'],
    number | undefined,
    boolean | undefined,
  ][] = [
    // 1.2 x 1.25 MB/s x 40 ms / 1448 = 41.4 -> 42 packets
    ['normal', { rateBytesPerSec: 1_250_000, goodputBytesPerSec: 1_300_000 }, 'clamp', 42, false],
    // 1.2 x 250 kB/s x 40 ms / 1448 = 8.3 -> floor 10 and throttle writes
    ['tiny clamp -> floor + write throttle', { goodputBytesPerSec: 260_000 }, 'clamp', 10, true],
    ['first block: no goodput yet, clamp', {}, 'clamp', 10, true],
    ['goodput below R -> unclamp (catch up)', { goodputBytesPerSec: 200_000 }, 'unclamp', undefined, undefined],
    [
      'goodput below R while app-limited (our own write throttle) -> keep the clamp',
      { goodputBytesPerSec: 249_000, appLimited: true },
      'clamp',
      10,
      true,
    ],
    [
      "VBR: goodput above the R of the media sent so far, below this block's R -> keep the clamp",
      { rateBytesPerSec: 1_250_000, goodputTargetBytesPerSec: 600_000, goodputBytesPerSec: 700_000 },
      'clamp',
      42,
      false,
    ],
    [
      'VBR: goodput below the R of the media sent so far -> unclamp',
      { rateBytesPerSec: 1_250_000, goodputTargetBytesPerSec: 600_000, goodputBytesPerSec: 500_000 },
      'unclamp',
      undefined,
      undefined,
    ],
    ['recovered: goodput back at R -> clamp again', { goodputBytesPerSec: 250_000 }, 'clamp', 10, true],
    [
      'longer RTT -> bigger clamp',
      { rateBytesPerSec: 1_250_000, rttUs: 80_000, goodputBytesPerSec: 1_300_000 },
      'clamp',
      83,
      false,
    ],
    ['5% headroom', { rateBytesPerSec: 1_250_000, gain: 1.05, goodputBytesPerSec: 1_300_000 }, 'clamp', 37, false],
  ];
  for (const [name, overrides, action, packets, throttle] of table) {
    it(name, () => {
      const decision = trickleDecision({ ...base, ...overrides });
      assert.equal(decision.action, action);
      if (decision.action === 'clamp') {
        assert.equal(decision.clampPackets, packets);
        assert.equal(decision.throttleWrites, throttle);
      }
      assert.ok(decision.reason.length > 0);
    });
  }
});
