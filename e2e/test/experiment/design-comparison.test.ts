/** The unbiased (population) and naive (shared bottleneck) designs' effects side by side, on hand-made summaries. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GroupRow, KindSummary, ProfileSummary } from '../../src/experiment/analysis.js';
import { compareDesigns, designReading, designTable } from '../../src/experiment/design-comparison.js';
import type { Estimate } from '../../src/experiment/statistics.js';

const none: Estimate = { value: Number.NaN, low: Number.NaN, high: Number.NaN, n: 0 };
const estimate = (value: number, half: number, n = 30): Estimate => ({
  value,
  low: value - half,
  high: value + half,
  n,
});

function row(group: string, policy: string, effects: Partial<GroupRow> = {}): GroupRow {
  return {
    group,
    policy,
    flows: 30,
    connections: 30,
    throttledFlows: 30,
    meanSizeMB: 1,
    meanDurationSec: 60,
    srttAtStartupEndMs: none,
    startupGoodputMbps: none,
    throttledGoodputMbps: none,
    goodputToTarget: none,
    goodputToPaceRate: none,
    goodputWithin3Percent: 0,
    retransmissionRatePercent: none,
    retransmissionImprovementPercent: none,
    wholeResponseRetransmissionRatePercent: none,
    srttEndMs: none,
    srttThrottledMs: none,
    srttImprovementPercent: none,
    throttledBursts: 0,
    burstsAtMost10Percent: 0,
    sessions: 0,
    rebufferChancePercent: none,
    rebufferFrequencyPerSec: none,
    startupDelayMs: 0,
    meanBitrateMbps: 0,
    ...effects,
  };
}

function kind(kindName: 'progressive' | 'segment', rows: GroupRow[]): KindSummary {
  const cdfs = { retransmissionRatePercent: [], srttThrottledMs: [], throttledBurstPackets: [], goodputToTarget: [] };
  return { kind: kindName, rows, aa: null, cdfs, lossPhases: [], unattributedSessions: 0 };
}

function profile(name: string, kinds: KindSummary[]): ProfileSummary {
  return { profile: name, runs: [], kinds, queueing: [], timeSequences: [], browsers: null, population: null };
}

const versusBulk = (retransmission: Estimate, srtt: Estimate) => ({
  versusBulk: { retransmissionLowerPercent: retransmission, srttLowerPercent: srtt },
});

describe('unbiased and naive designs side by side', () => {
  const population = profile('dc2-like', [
    kind('progressive', [
      row('baseline1', 'app-pacing', versusBulk(estimate(20, 10), estimate(5, 5))),
      row('trickle', 'trickle', {
        retransmissionImprovementPercent: estimate(60, 10),
        srttImprovementPercent: estimate(10, 5),
        ...versusBulk(estimate(40, 10), estimate(8, 4)),
      }),
      row('bulk', 'bulk'),
    ]),
    kind('segment', [row('baseline1', 'app-pacing'), row('trickle', 'trickle')]),
  ]);
  const shared = profile('dc2-like-shared', [
    kind('progressive', [
      row('baseline1', 'app-pacing', versusBulk(estimate(25, 10), estimate(4, 3, 6))),
      row('trickle', 'trickle', {
        retransmissionImprovementPercent: estimate(10, 10),
        srttImprovementPercent: estimate(12, 5),
        ...versusBulk(none, estimate(9, 4)),
      }),
      row('bulk', 'bulk'),
    ]),
  ]);
  const design = compareDesigns(population, shared, 'baseline1');

  it('sets each group effect from both designs; a reference group against itself and unmeasured effects go', () => {
    assert.equal(design.population, 'dc2-like');
    assert.equal(design.shared, 'dc2-like-shared');
    // Segments: no shared kind. Bulk: no effect either design measured. baseline1: only against bulk.
    assert.deepEqual(
      design.effects.map((e) => `${e.kind} ${e.group}: ${e.effect}`),
      [
        'progressive baseline1: retransmissions (whole responses), % lower than bulk',
        'progressive baseline1: srtt at the end, % lower than bulk',
        'progressive trickle: retransmissions (throttling), % lower than baseline1',
        'progressive trickle: srtt (throttling), % lower than baseline1',
        'progressive trickle: retransmissions (whole responses), % lower than bulk',
        'progressive trickle: srtt at the end, % lower than bulk',
      ],
    );
  });

  it('judges shared - population by its interval: differ, agree, too few, no data', () => {
    const verdicts = Object.fromEntries(design.effects.map((e) => [`${e.group}: ${e.effect}`, e]));
    // 10 [0, 20] - 60 [50, 70]: -50, half-width sqrt(10^2 + 10^2) = 14.1.
    const retransmissions = verdicts['trickle: retransmissions (throttling), % lower than baseline1']!;
    assert.equal(retransmissions.difference.value, -50);
    assert.ok(Math.abs(retransmissions.difference.high - (-50 + Math.SQRT2 * 10)) < 1e-9);
    assert.equal(retransmissions.verdict, 'differ');
    assert.equal(verdicts['trickle: srtt (throttling), % lower than baseline1']!.verdict, 'agree');
    assert.equal(verdicts['baseline1: retransmissions (whole responses), % lower than bulk']!.verdict, 'agree');
    // 6 connections behind the shared side.
    const few = verdicts['baseline1: srtt at the end, % lower than bulk']!;
    assert.equal(few.connections, 6);
    assert.equal(few.verdict, 'too few');
    assert.equal(verdicts['trickle: retransmissions (whole responses), % lower than bulk']!.verdict, 'no data');
  });

  it('counts the judged effects, those that differ, the median distance, and tables them for the reports', () => {
    // Judged: -50 (differ), 2, 5, 1 (agree): median |difference| of 1, 2, 5, 50 is 3.5.
    assert.equal(design.judged, 4);
    assert.equal(design.differ, 1);
    assert.equal(design.medianAbsoluteDifferencePoints, 3.5);
    const table = designTable(design);
    assert.equal(table.rows.length, design.effects.length);
    assert.deepEqual(table.rows[2], [
      'progressive',
      'trickle (trickle)',
      'retransmissions (throttling), % lower than baseline1',
      '60 [50, 70]',
      '10 [0, 20]',
      '-50 [-64, -36]',
      'differ',
    ]);
    assert.match(
      designReading(design),
      /1 of 4 judged effects differ between the designs; the median effect moved 4 points/,
    );
  });
});
