/**
 * The Trickle paper's own figures (Ghobadi et al., ATC 2012: sections 5.1-5.4, Tables 2-3) and a
 * side-by-side reading of a population profile's against them: the paper's figure, ours with its
 * 95 % interval, and whether the interval reaches it. Pure.
 */
import type { KindSummary } from './analysis.js';
import { minimumVerdictConnections, minimumVerdictSessions } from './analysis.js';
import type { BucketRow } from './population-analysis.js';
import { formatEstimate, intervalsOverlap, type Estimate } from './statistics.js';

export type DataCentre = 'DC1' | 'DC2';

interface PaperFigures {
  /** Trickle's mean retransmission rate against baseline1's, % lower (DC2: "similar", Table 2's weighted mean). */
  readonly retransmissionImprovementPercent: number;
  readonly srttImprovementPercent: number;
  /** Share of Trickle's bursts of at most 10 packets (Figure 5; DC1 only). */
  readonly trickleBurstsAtMost10Percent: number | null;
  /** Table 3: the same for every group. */
  readonly rebufferChancePercent: number;
  readonly rebufferFrequencyPerSec: number;
  /** Table 2: flows per bandwidth bucket and Trickle's retransmission improvement in it, %. */
  readonly buckets: readonly { readonly flowsPercent: number; readonly improvementPercent: number }[];
}

export const paperFigures: Readonly<Record<DataCentre, PaperFigures>> = {
  DC1: {
    retransmissionImprovementPercent: 43,
    srttImprovementPercent: 28,
    trickleBurstsAtMost10Percent: 94,
    rebufferChancePercent: 2.5,
    rebufferFrequencyPerSec: 0.0005,
    buckets: [
      { flowsPercent: 1, improvementPercent: 5 },
      { flowsPercent: 3, improvementPercent: 23 },
      { flowsPercent: 10, improvementPercent: 40 },
      { flowsPercent: 28, improvementPercent: 53 },
      { flowsPercent: 35, improvementPercent: 56 },
      { flowsPercent: 23, improvementPercent: 53 },
    ],
  },
  DC2: {
    retransmissionImprovementPercent: 17,
    srttImprovementPercent: 7,
    trickleBurstsAtMost10Percent: null,
    rebufferChancePercent: 26,
    rebufferFrequencyPerSec: 0.005,
    buckets: [
      { flowsPercent: 39, improvementPercent: 3 },
      { flowsPercent: 26, improvementPercent: 8 },
      { flowsPercent: 17, improvementPercent: 32 },
      { flowsPercent: 9, improvementPercent: 47 },
      { flowsPercent: 6, improvementPercent: 47 },
      { flowsPercent: 3, improvementPercent: 44 },
    ],
  },
};

/** dc1-like -> DC1, dc2-like -> DC2; other populations have no paper column. */
export function dataCentreOf(source: string): DataCentre | undefined {
  return source === 'dc1-like' ? 'DC1' : source === 'dc2-like' ? 'DC2' : undefined;
}

export interface PaperRow {
  readonly metric: string;
  readonly paper: string;
  readonly ours: string;
  readonly reading: string;
}

/** Where an estimate stands against the paper's figure: inside its interval, above or below it, or too few. */
function against(estimate: Estimate, paper: number, enough: boolean): string {
  if (!Number.isFinite(estimate.value)) return 'no data';
  if (!enough) return 'too few to decide';
  if (!Number.isFinite(estimate.low))
    return estimate.value >= paper ? 'at or above the paper (no interval)' : 'below the paper (no interval)';
  if (estimate.low > paper) return 'above the paper (its interval excludes it)';
  if (estimate.high < paper) return 'below the paper (its interval excludes it)';
  return "consistent with the paper (its interval holds the paper's figure)";
}

/**
 * The paper's progressive-flow figures beside ours (the paper's flows were progressive
 * downloads), trickle against the baseline; `buckets` adds Table 2 when there are some.
 */
export function paperComparison(
  kind: KindSummary,
  dc: DataCentre,
  trickleGroup: string,
  baselineGroup: string,
  buckets: readonly BucketRow[] | null,
): PaperRow[] {
  const paper = paperFigures[dc];
  const t = kind.rows.find((r) => r.group === trickleGroup);
  const b = kind.rows.find((r) => r.group === baselineGroup);
  if (t === undefined || b === undefined) return [];
  const enoughFlows = Math.min(t.connections, b.connections) >= minimumVerdictConnections;
  const enoughSessions = Math.min(t.sessions, b.sessions) >= minimumVerdictSessions;
  const rows: PaperRow[] = [
    {
      metric: 'retransmission rate, trickle vs baseline (% lower)',
      paper:
        dc === 'DC1'
          ? `${paper.retransmissionImprovementPercent} %`
          : `"similar" (Table 2's flow-weighted mean: ${paper.retransmissionImprovementPercent} %)`,
      ours: `${formatEstimate(t.retransmissionImprovementPercent, 0)} % (${t.connections} vs ${b.connections} flows)`,
      reading: against(t.retransmissionImprovementPercent, paper.retransmissionImprovementPercent, enoughFlows),
    },
    {
      metric: 'mean srtt in the throttling phase, trickle vs baseline (% lower)',
      paper: `${paper.srttImprovementPercent} %`,
      ours:
        `${formatEstimate(t.srttImprovementPercent, 0)} % ` +
        `(${formatEstimate(t.srttThrottledMs, 0)} vs ${formatEstimate(b.srttThrottledMs, 0)} ` +
        `ms)`,
      reading: against(t.srttImprovementPercent, paper.srttImprovementPercent, enoughFlows),
    },
    {
      metric: "trickle's bursts of at most 10 packets",
      paper: paper.trickleBurstsAtMost10Percent === null ? 'not reported' : `${paper.trickleBurstsAtMost10Percent} %`,
      ours: Number.isFinite(t.burstsAtMost10Percent)
        ? `${t.burstsAtMost10Percent.toFixed(1)} % of ${t.throttledBursts}`
        : 'no bursts captured',
      reading:
        paper.trickleBurstsAtMost10Percent === null || !Number.isFinite(t.burstsAtMost10Percent)
          ? '-'
          : t.burstsAtMost10Percent >= paper.trickleBurstsAtMost10Percent
            ? 'at or above the paper'
            : 'below the paper',
    },
    {
      metric: 'rebuffering chance, trickle / baseline (%)',
      paper: `${paper.rebufferChancePercent} % / ${paper.rebufferChancePercent} % (the same)`,
      ours:
        `${formatEstimate(t.rebufferChancePercent, 1)} ` +
        `/ ${formatEstimate(b.rebufferChancePercent, 1)} (${t.sessions} / ${b.sessions} ` +
        `sessions)`,
      reading: !enoughSessions
        ? 'too few to decide'
        : intervalsOverlap(t.rebufferChancePercent, b.rebufferChancePercent)
          ? 'the same within the intervals, as the paper'
          : t.rebufferChancePercent.value < b.rebufferChancePercent.value
            ? 'trickle lower'
            : 'trickle higher (worse)',
    },
    {
      metric: 'rebuffering frequency, trickle / baseline (1/s)',
      paper: `${paper.rebufferFrequencyPerSec} / ${paper.rebufferFrequencyPerSec} (the same)`,
      ours: `${formatEstimate(t.rebufferFrequencyPerSec, 4)} / ${formatEstimate(b.rebufferFrequencyPerSec, 4)}`,
      reading: !enoughSessions
        ? 'too few to decide'
        : intervalsOverlap(t.rebufferFrequencyPerSec, b.rebufferFrequencyPerSec)
          ? 'the same within the intervals, as the paper'
          : t.rebufferFrequencyPerSec.value < b.rebufferFrequencyPerSec.value
            ? 'trickle lower'
            : 'trickle higher (worse)',
    },
  ];
  if (kind.aa !== null) {
    const disagree = kind.aa.metrics.filter((m) => m.agree === false).map((m) => m.metric);
    rows.push({
      metric: `A/A control (${kind.aa.groups.join(' vs ')})`,
      paper: "agree (the paper's two baselines)",
      ours:
        kind.aa.agree === null
          ? 'too few to judge'
          : disagree.length === 0
            ? 'agree on every judged metric'
            : `disagree on ${disagree.join(', ')}`,
      reading:
        kind.aa.agree === true
          ? 'as the paper'
          : kind.aa.agree === null
            ? 'too few to decide'
            : 'the control disagrees: differences of that size are noise',
    });
  }
  for (const [index, bucket] of (buckets ?? []).entries()) {
    const figure = paper.buckets[index]!;
    const enough = Math.min(bucket.trickleFlows, bucket.baselineFlows) >= minimumVerdictConnections;
    rows.push({
      metric: `Table 2, BW ${bucket.label} Mbit/s: flows; retransmission improvement`,
      paper: `${figure.flowsPercent} %; ${figure.improvementPercent} %`,
      ours:
        `${bucket.flowsPercent.toFixed(0)} ` +
        `%; ${formatEstimate(bucket.improvementPercent, 0)} % (${bucket.trickleFlows} ` +
        `vs ${bucket.baselineFlows} flows)`,
      reading: against(bucket.improvementPercent, figure.improvementPercent, enough),
    });
  }
  return rows;
}
