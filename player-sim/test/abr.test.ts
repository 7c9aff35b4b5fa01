/** Each ABR rule's decision function, table-tested. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  abrRules,
  bbaRateMapBps,
  bolaParameters,
  highestAtMost,
  createThroughputRule,
  throughputEstimateBps,
  throughputFamilies,
  withSafetyFactor,
  type AbrContext,
} from '../src/index.js';

const bitrates = [400e3, 800e3, 1.4e6, 2.8e6];
const context = (overrides: Partial<AbrContext>): AbrContext => ({
  bitratesBps: bitrates,
  bufferSec: 0,
  maxBufferSec: 30,
  lastIndex: undefined,
  segmentDurationSec: 2,
  throughput: [],
  ...overrides,
});
/** A download of `seconds` at `bps`. */
const sample = (bps: number, seconds = 1) => ({ bytes: (bps / 8) * seconds, durationMs: seconds * 1000 });

describe('ABR rules', () => {
  it('highestAtMost picks the highest rendition within a budget', () => {
    assert.equal(highestAtMost(bitrates, 1e6), 1);
    assert.equal(highestAtMost(bitrates, 100), 0);
    assert.equal(highestAtMost(bitrates, 1e9), 3);
  });

  it('throughput: EWMA estimate x 0.9, lowest with no sample', () => {
    const rule = abrRules.throughput!();
    assert.equal(rule.choose(context({})).index, 0);
    assert.match(rule.choose(context({})).reason, /no download yet/);
    const cases: [number, number][] = [
      [5e6, 3],
      [3e6, 2],
      [1.6e6, 2],
      [1.5e6, 1],
      [1e6, 1],
      [0.5e6, 0],
    ];
    // A rule instance follows one session's growing history: a fresh one per case.
    for (const [bps, expected] of cases)
      assert.equal(abrRules.throughput!().choose(context({ throughput: [sample(bps)] })).index, expected, `${bps}`);
    const growing = abrRules.throughput!();
    const history = [sample(5e6)];
    assert.equal(growing.choose(context({ throughput: history })).index, 3);
    history.push(sample(0.5e6, 20));
    assert.equal(
      growing.choose(context({ throughput: history })).index,
      0,
      'a long slow download pulls the estimate down',
    );
    assert.equal(
      throughputEstimateBps([sample(4e6, 10), sample(1e6, 1)])! < 4e6,
      true,
      'the fast average reacts to a drop',
    );
    // The two averages by hand: the first sample seeds both; a 1 s sample weighs 1 - 0.5^(1/3) in the
    // fast one (half-life 3 s) and 1 - 0.5^(1/8) in the slow one (8 s); the estimate is the smaller.
    const fast = 0.5 ** (1 / 3) * 1e6 + (1 - 0.5 ** (1 / 3)) * 4e6;
    const slow = 0.5 ** (1 / 8) * 1e6 + (1 - 0.5 ** (1 / 8)) * 4e6;
    assert.ok(
      Math.abs(throughputEstimateBps([sample(1e6, 10), sample(4e6, 1)])! - Math.min(fast, slow)) < 1e-6,
      'a rise: the slow average holds the estimate back',
    );
    const fastDown = 0.5 ** (1 / 3) * 4e6 + (1 - 0.5 ** (1 / 3)) * 1e6;
    assert.ok(
      Math.abs(throughputEstimateBps([sample(4e6, 10), sample(1e6, 1)])! - fastDown) < 1e-6,
      'a drop: the fast average sets the estimate',
    );
  });

  it('bola: low buffer -> lowest, growing buffer -> higher, full buffer -> top', () => {
    const rule = abrRules.bola!();
    const pick = (bufferSec: number) => rule.choose(context({ bufferSec })).index;
    assert.equal(pick(0), 0);
    const picks = [0, 5, 10, 15, 20, 25, 30].map(pick);
    for (let i = 1; i < picks.length; i++) assert.ok(picks[i]! >= picks[i - 1]!, `non-decreasing in buffer: ${picks}`);
    assert.equal(pick(30), 3);
    const { utilities, gp, v } = bolaParameters(bitrates, 30);
    assert.equal(utilities[0], 1);
    assert.ok(Math.abs(utilities[3]! - (Math.log(7) + 1)) < 1e-12);
    assert.ok(Math.abs(gp - Math.log(7) / 2) < 1e-12, 'buffer target 30 s: gp = (u_max - 1) / (30/10 - 1)');
    assert.ok(Math.abs(v - 10 / gp) < 1e-12);
  });

  it('bba: the rate map and its neighbour rule', () => {
    const at = (bufferSec: number, lastIndex: number) =>
      abrRules.bba!().choose(context({ bufferSec, lastIndex })).index;
    // Reservoir 7.5 s (25% of 30), cushion 18 s: the map runs from 0.4 Mbit/s at 7.5 s to 2.8 at 25.5 s.
    assert.equal(bbaRateMapBps(context({ bufferSec: 5 })), 400e3);
    assert.equal(bbaRateMapBps(context({ bufferSec: 30 })), 2.8e6);
    assert.ok(Math.abs(bbaRateMapBps(context({ bufferSec: 16.5 })) - 1.6e6) < 1e-6);
    assert.equal(at(5, 2), 1, 'below the reservoir the map is R_min: step down to the lowest rate above it');
    assert.equal(at(30, 0), 3, 'above reservoir + cushion the map is R_max, and R_max is chosen');
    assert.equal(at(16.5, 2), 2, 'f(B)=1.6 Mbit/s between the neighbours 0.8 and 2.8: stay');
    assert.equal(at(16.5, 0), 2, 'f(B) above the upper neighbour: jump to the highest rate below f(B)');
  });

  it('dynamic: throughput at low buffer, BOLA above 12 s, back below 6 s', () => {
    const rule = abrRules.dynamic!();
    assert.match(rule.choose(context({ bufferSec: 2, throughput: [sample(5e6)] })).reason, /^dynamic \(throughput\)/);
    assert.match(rule.choose(context({ bufferSec: 12, throughput: [sample(5e6)] })).reason, /^dynamic \(bola\)/);
    assert.match(
      rule.choose(context({ bufferSec: 8, throughput: [sample(5e6)] })).reason,
      /^dynamic \(bola\)/,
      'hysteresis',
    );
    assert.match(rule.choose(context({ bufferSec: 5, throughput: [sample(5e6)] })).reason, /^dynamic \(throughput\)/);
  });

  it('hls.js family: going up takes x 0.7 of the estimate, staying takes x 0.95', () => {
    // One 2.1 Mbit/s download: x 0.7 = 1.47 Mbit/s reaches rung 2 (1.4), x 0.95 = 2.0 does not reach rung 3.
    const fresh = () => abrRules['throughput-hlsjs']!();
    const history = [sample(2.1e6)];
    assert.equal(fresh().choose(context({ lastIndex: 0, throughput: history })).index, 2, 'up to what x 0.7 allows');
    // 1.5 Mbit/s: x 0.7 = 1.05 (rung 1), x 0.95 = 1.425 (rung 2): from rung 2 it stays, from rung 1 it does not climb.
    const slower = [sample(1.5e6)];
    assert.equal(fresh().choose(context({ lastIndex: 2, throughput: slower })).index, 2, 'stays within x 0.95');
    assert.equal(fresh().choose(context({ lastIndex: 1, throughput: slower })).index, 1, 'no climb past x 0.7');
    // 1 Mbit/s: x 0.95 = 0.95 Mbit/s: rung 2 no longer fits, down to rung 1.
    assert.equal(fresh().choose(context({ lastIndex: 2, throughput: [sample(1e6)] })).index, 1, 'down');
  });

  it('exoplayer family: the weighted median x 0.7, no switch up under 10 s of buffer, none down from 25 s', () => {
    const fresh = () => abrRules['throughput-exoplayer']!();
    // Equal sizes: the plain median (3 Mbit/s of 1, 3 and 5), x 0.7 = 2.1 Mbit/s: rung 2.
    const history = [sample(1e6), sample(5e6, 0.2), sample(3e6, 1 / 3)].map((s) => ({ ...s, bytes: 125_000 }));
    assert.equal(fresh().choose(context({ lastIndex: 0, bufferSec: 12, throughput: history })).index, 2);
    const kept = fresh().choose(context({ lastIndex: 0, bufferSec: 5, throughput: history }));
    assert.equal(kept.index, 0, 'under 10 s of buffer it does not go up');
    assert.match(kept.reason, /under 10 s to go up/);
    const slow = [sample(0.5e6)];
    assert.equal(
      fresh().choose(context({ lastIndex: 3, bufferSec: 26, throughput: slow })).index,
      3,
      'from 25 s it stays',
    );
    assert.equal(
      fresh().choose(context({ lastIndex: 3, bufferSec: 20, throughput: slow })).index,
      0,
      'below, it goes down',
    );
  });

  it('dash.js family is the `throughput` rule, and a safety factor sets both ways', () => {
    assert.deepEqual(
      createThroughputRule(throughputFamilies['dash.js']).choose(context({ throughput: [sample(1.6e6)] })),
      abrRules.throughput!().choose(context({ throughput: [sample(1.6e6)] })),
    );
    const strict = withSafetyFactor(throughputFamilies.shaka, 0.7);
    assert.equal(strict.upFactor, 0.7);
    assert.equal(strict.downFactor, 0.7);
    assert.equal(strict.family, 'shaka x 0.7');
    // 2.1 Mbit/s x 0.7 = 1.47: rung 2; 1.9 x 0.7 = 1.33: rung 1.
    assert.equal(createThroughputRule(strict).choose(context({ throughput: [sample(2.1e6)] })).index, 2);
    assert.equal(createThroughputRule(strict).choose(context({ throughput: [sample(1.9e6)] })).index, 1);
  });
});
