/**
 * What a population profile adds to the paper's tables: its Table 2 (the retransmission
 * improvement of trickle over the baseline bucketed by each flow's bandwidth, the goodput of its
 * startup phase, as the paper measured it), the links the runs met, and how the simulated DASH
 * players agree with real dash.js sessions on identical links (each browser shares its link's
 * draw with the simulated player of its index, in the same run). Pure.
 */
import { aggregate, type SessionResult } from '@trickle/player-sim';
import type { LinkPopulation } from '../lab/population.js';
import { asSessionResult } from '../qoe/session-record.js';
import type { RunData } from './run-data.js';
import { bootstrap, bootstrapComparison, median, wilsonInterval, type Estimate } from './statistics.js';

/** Table 2's bandwidth buckets, Mbit/s. */
export const bandwidthBuckets: readonly {
  readonly label: string;
  readonly lowMbps: number;
  readonly highMbps: number;
}[] = [
  { label: '< 0.5', lowMbps: 0, highMbps: 0.5 },
  { label: '0.5 - 1', lowMbps: 0.5, highMbps: 1 },
  { label: '1 - 2', lowMbps: 1, highMbps: 2 },
  { label: '2 - 4', lowMbps: 2, highMbps: 4 },
  { label: '4 - 8', lowMbps: 4, highMbps: 8 },
  { label: '>= 8', lowMbps: 8, highMbps: Number.POSITIVE_INFINITY },
];

export interface BucketRow {
  readonly label: string;
  /** Share of the bucketed flows (all groups) in this bucket, %. */
  readonly flowsPercent: number;
  readonly trickleFlows: number;
  readonly baselineFlows: number;
  /** 1 - mean retransmission rate of trickle / that of the baseline, %, with its 95 % interval. */
  readonly improvementPercent: Estimate;
}

export interface SimBrowserAgreement {
  /** Pairs of (simulated DASH player, dash.js session) on identical links in the same run. */
  readonly pairs: number;
  readonly simulated: {
    readonly rebufferChancePercent: Estimate;
    readonly rebufferFrequencyPerMin: Estimate;
    readonly meanBitrateMbps: Estimate;
  };
  readonly browser: {
    readonly rebufferChancePercent: Estimate;
    readonly rebufferFrequencyPerMin: Estimate;
    readonly meanBitrateMbps: Estimate;
  };
  /** Browser minus simulated, in points, and the ratios browser / simulated, each with a paired-bootstrap interval. */
  readonly chanceDifferencePoints: Estimate;
  readonly frequencyRatio: Estimate;
  readonly bitrateRatio: Estimate;
}

export interface PopulationSummary {
  readonly source: string;
  readonly viewersPerRun: number;
  readonly links: {
    readonly count: number;
    readonly medianRateMbps: number;
    readonly medianRttMs: number;
    readonly medianBufferMs: number;
  };
  /** Progressive flows by their startup goodput (the paper's BW); null without a trickle group and a baseline. */
  readonly buckets: readonly BucketRow[] | null;
  readonly simVsBrowser: SimBrowserAgreement | null;
}

/** Fewer pairs than this and the agreement is "too few" to judge. */
export const minimumPairs = 10;

const retransmissionPercent = (record: RunData['records'][number]) =>
  record.throttling?.retransmissionRate == null ? null : record.throttling.retransmissionRate * 100;

function meanRetransmission(flows: readonly RunData['records'][number][][]): number {
  const values = flows
    .flat()
    .map(retransmissionPercent)
    .filter((v): v is number => v !== null);
  return values.length === 0 ? Number.NaN : values.reduce((s, v) => s + v, 0) / values.length;
}

function sessionEstimates(
  results: readonly SessionResult[],
  options: { resamples: number; seed: number },
): SimBrowserAgreement['simulated'] {
  const chance = wilsonInterval(results.filter((r) => r.rebuffers.length > 0).length, results.length);
  return {
    rebufferChancePercent: { value: chance.value * 100, low: chance.low * 100, high: chance.high * 100, n: chance.n },
    rebufferFrequencyPerMin: bootstrap(results, (sample) => aggregateFrequency(sample), options),
    meanBitrateMbps: bootstrap(results, (sample) => aggregate(sample).meanBitrateBps / 1e6, options),
  };
}

function aggregateFrequency(results: readonly SessionResult[]): number {
  const seconds = results.reduce((sum, r) => sum + r.sessionSec, 0);
  return seconds > 0 ? (results.reduce((sum, r) => sum + r.rebuffers.length, 0) / seconds) * 60 : Number.NaN;
}

export function summarizePopulation(
  runs: readonly RunData[],
  options: { resamples: number; trickleGroup: string | undefined; baselineGroup: string },
): PopulationSummary | null {
  const withLinks = runs.filter(
    (r): r is RunData & { population: LinkPopulation } => r.population !== undefined && r.kind === 'mixed',
  );
  if (withLinks.length === 0) return null;
  const bootstrapOptions = { resamples: options.resamples, seed: 1 };
  const links = withLinks.flatMap((r) => r.population.links);
  const progressive = withLinks.flatMap((run) =>
    run.records
      .filter(
        (r) =>
          r.role === 'progressive' &&
          r.group !== null &&
          r.status < 400 &&
          r.startup.goodputBps != null &&
          r.throttling !== null,
      )
      .map((record) => ({ run: run.id, record })),
  );
  const bucketOf = (bps: number) => bandwidthBuckets.find((b) => bps / 1e6 >= b.lowMbps && bps / 1e6 < b.highMbps)!;
  const buckets =
    options.trickleGroup === undefined
      ? null
      : bandwidthBuckets.map((bucket) => {
          const inBucket = progressive.filter((f) => bucketOf(f.record.startup.goodputBps!) === bucket);
          // One flow per connection for progressive viewers: each flow is its own cluster.
          const trickle = inBucket.filter((f) => f.record.group === options.trickleGroup).map((f) => [f.record]);
          const baseline = inBucket.filter((f) => f.record.group === options.baselineGroup).map((f) => [f.record]);
          return {
            label: bucket.label,
            flowsPercent: progressive.length === 0 ? Number.NaN : (100 * inBucket.length) / progressive.length,
            trickleFlows: trickle.length,
            baselineFlows: baseline.length,
            improvementPercent: bootstrapComparison(
              trickle,
              baseline,
              (a, b) => (1 - meanRetransmission(a) / meanRetransmission(b)) * 100,
              bootstrapOptions,
            ),
          };
        });
  // Browser i and simulated DASH player i of the same run met identical links.
  const pairs = withLinks.flatMap((run) =>
    run.browsers.flatMap((browser) => {
      const twin = run.viewers.find((v) => v.kind === 'dash' && v.index === browser.index);
      return twin !== undefined && 'result' in twin
        ? [{ simulated: twin.result, browser: asSessionResult(browser) }]
        : [];
    }),
  );
  const simVsBrowser: SimBrowserAgreement | null =
    pairs.length === 0
      ? null
      : {
          pairs: pairs.length,
          simulated: sessionEstimates(
            pairs.map((p) => p.simulated),
            bootstrapOptions,
          ),
          browser: sessionEstimates(
            pairs.map((p) => p.browser),
            bootstrapOptions,
          ),
          chanceDifferencePoints: bootstrap(
            pairs,
            (sample) =>
              (100 *
                (sample.filter((p) => p.browser.rebuffers.length > 0).length -
                  sample.filter((p) => p.simulated.rebuffers.length > 0).length)) /
              sample.length,
            bootstrapOptions,
          ),
          frequencyRatio: bootstrap(
            pairs,
            (sample) =>
              aggregateFrequency(sample.map((p) => p.browser)) / aggregateFrequency(sample.map((p) => p.simulated)),
            bootstrapOptions,
          ),
          bitrateRatio: bootstrap(
            pairs,
            (sample) =>
              aggregate(sample.map((p) => p.browser)).meanBitrateBps /
              aggregate(sample.map((p) => p.simulated)).meanBitrateBps,
            bootstrapOptions,
          ),
        };
  return {
    source: withLinks[0]!.population.source,
    viewersPerRun: withLinks[0]!.population.links.length,
    links: {
      count: links.length,
      medianRateMbps: median(links.map((l) => l.down.rateBps / 1e6)),
      medianRttMs: median(links.map((l) => l.down.delayMs + l.up.delayMs)),
      medianBufferMs: median(links.map((l) => (l.down.bufferBytes * 8 * 1000) / l.down.rateBps)),
    },
    buckets,
    simVsBrowser,
  };
}

/**
 * The sim-vs-browser goals of a population: chance within ±5 points, frequency within 20 %, bitrate within 10 %; null:
 * too few pairs.
 */
export function simBrowserVerdicts(agreement: SimBrowserAgreement): {
  chance: boolean | null;
  frequency: boolean | null;
  bitrate: boolean | null;
} {
  if (agreement.pairs < minimumPairs) return { chance: null, frequency: null, bitrate: null };
  return {
    chance: Math.abs(agreement.chanceDifferencePoints.value) <= 5,
    frequency: Number.isFinite(agreement.frequencyRatio.value)
      ? Math.abs(agreement.frequencyRatio.value - 1) <= 0.2
      : null,
    bitrate: Math.abs(agreement.bitrateRatio.value - 1) <= 0.1,
  };
}
