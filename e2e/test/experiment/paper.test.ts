/** The paper's figures beside ours: the readings from where an interval stands. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GroupRow, KindSummary } from '../../src/experiment/analysis.js';
import { dataCentreOf, paperComparison, paperFigures } from '../../src/experiment/paper.js';
import type { BucketRow } from '../../src/experiment/population-analysis.js';
import type { Estimate } from '../../src/experiment/statistics.js';

const estimate = (value: number, low: number, high: number, n = 40): Estimate => ({ value, low, high, n });

function row(group: string, overrides: Partial<GroupRow>): GroupRow {
  return {
    group,
    policy: 'x',
    flows: 40,
    connections: 40,
    throttledFlows: 40,
    meanSizeMB: 3,
    meanDurationSec: 50,
    srttAtStartupEndMs: estimate(90, 80, 100),
    startupGoodputMbps: estimate(5, 4, 6),
    throttledGoodputMbps: estimate(0.9, 0.8, 1),
    goodputToTarget: estimate(1.2, 1.1, 1.3),
    goodputToPaceRate: estimate(1, 0.98, 1.02),
    goodputWithin3Percent: 90,
    retransmissionRatePercent: estimate(1, 0.8, 1.2),
    retransmissionImprovementPercent: estimate(0, 0, 0),
    wholeResponseRetransmissionRatePercent: estimate(1, 0.8, 1.2),
    srttEndMs: estimate(80, 70, 90),
    srttThrottledMs: estimate(80, 70, 90),
    srttImprovementPercent: estimate(0, 0, 0),
    throttledBursts: 100,
    burstsAtMost10Percent: 50,
    sessions: 40,
    rebufferChancePercent: estimate(5, 2, 12),
    rebufferFrequencyPerSec: estimate(0.001, 0.0005, 0.002),
    startupDelayMs: 900,
    meanBitrateMbps: 0.7,
    ...overrides,
  };
}

function kind(trickle: Partial<GroupRow>, baseline: Partial<GroupRow> = {}): KindSummary {
  return {
    kind: 'progressive',
    rows: [row('baseline1', baseline), row('baseline2', {}), row('trickle', trickle)],
    aa: {
      groups: ['baseline1', 'baseline2'],
      metrics: [{ metric: 'srtt', a: estimate(1, 0, 2), b: estimate(1, 0, 2), agree: true }],
      agree: true,
    },
    cdfs: { retransmissionRatePercent: [], srttThrottledMs: [], throttledBurstPackets: [], goodputToTarget: [] },
    lossPhases: [],
    unattributedSessions: 0,
  };
}

describe("the paper's figures side by side", () => {
  it('names the data centre of a fitted population only', () => {
    assert.equal(dataCentreOf('dc1-like'), 'DC1');
    assert.equal(dataCentreOf('dc2-like'), 'DC2');
    assert.equal(dataCentreOf('csv:links.csv'), undefined);
  });

  it("reads each estimate against the paper's figure by its interval", () => {
    const rows = paperComparison(
      kind({
        retransmissionImprovementPercent: estimate(60, 50, 70),
        srttImprovementPercent: estimate(20, 10, 35),
        burstsAtMost10Percent: 96,
      }),
      'DC1',
      'trickle',
      'baseline1',
      null,
    );
    const byMetric = new Map(rows.map((r) => [r.metric.split(',')[0]!, r]));
    assert.equal(byMetric.get('retransmission rate')!.paper, '43 %');
    assert.match(byMetric.get('retransmission rate')!.reading, /^above the paper/);
    assert.match(byMetric.get('mean srtt in the throttling phase')!.reading, /^consistent with the paper/);
    assert.equal(byMetric.get("trickle's bursts of at most 10 packets")!.reading, 'at or above the paper');
    assert.match(byMetric.get('rebuffering chance')!.reading, /the same within the intervals/);
    assert.equal(byMetric.get('A/A control (baseline1 vs baseline2)')!.reading, 'as the paper');
    const below = paperComparison(
      kind({ srttImprovementPercent: estimate(5, 1, 9) }),
      'DC1',
      'trickle',
      'baseline1',
      null,
    );
    assert.match(below.find((r) => r.metric.startsWith('mean srtt'))!.reading, /^below the paper/);
  });

  it('says "too few" below ten connections or eight sessions a group', () => {
    const rows = paperComparison(
      kind({ connections: 6, sessions: 5, retransmissionImprovementPercent: estimate(60, 50, 70) }),
      'DC2',
      'trickle',
      'baseline1',
      null,
    );
    assert.equal(rows.find((r) => r.metric.startsWith('retransmission'))!.reading, 'too few to decide');
    assert.equal(rows.find((r) => r.metric.startsWith('rebuffering chance'))!.reading, 'too few to decide');
  });

  it("adds Table 2's buckets with the paper's shares and improvements", () => {
    const buckets: BucketRow[] = paperFigures.DC1.buckets.map((_, index) => ({
      label: ['< 0.5', '0.5 - 1', '1 - 2', '2 - 4', '4 - 8', '>= 8'][index]!,
      flowsPercent: 100 / 6,
      trickleFlows: 12,
      baselineFlows: 11,
      improvementPercent: estimate(50, 40, 60),
    }));
    const rows = paperComparison(kind({}), 'DC1', 'trickle', 'baseline1', buckets).filter((r) =>
      r.metric.startsWith('Table 2'),
    );
    assert.equal(rows.length, 6);
    assert.equal(rows[0]!.paper, '1 %; 5 %');
    assert.match(rows[0]!.reading, /^above the paper/);
    assert.match(rows[4]!.reading, /^consistent with the paper/, '56 % in [40, 60]');
  });
});
