/**
 * From runs to the paper's tables, per profile and per kind of transfer (progressive downloads,
 * the paper's flows; segment responses of DASH players): per A/B group the control variables
 * (flows, srtt and goodput at the end of startup), the outcome metrics over the throttling phase
 * (retransmission rate and its improvement over the baseline, srtt, goodput and goodput/target,
 * burst sizes) and the viewers' QoE (rebuffering chance and frequency), each with a 95 % interval;
 * the A/A control's agreement; where segment losses happen; the probe's queueing delay. Pure.
 */
import type { FlowRecord } from '@trickle/origin';
import { aggregate, type SessionResult } from '@trickle/player-sim';
import { queueingDelaysMs } from '../lab/analysis/flows.js';
import type { ExperimentConfig } from './config.js';
import type { LossPhase } from './responses.js';
import { asSessionResult } from '../qoe/session-record.js';
import type { ResponseCaptureSummary, RunData, TimeSequence } from './run-data.js';
import { summarizePopulation, type PopulationSummary } from './population-analysis.js';
import {
  bootstrap,
  bootstrapComparison,
  ecdfPoints,
  intervalsOverlap,
  mean,
  median,
  quantileSorted,
  wilsonInterval,
  type Estimate,
} from './statistics.js';

export type TransferKind = 'progressive' | 'segment';

/** One response, as the analysis sees it. */
export interface FlowSample {
  readonly run: string;
  readonly group: string;
  /** run + connection: the bootstrap's cluster. */
  readonly connection: string;
  readonly record: FlowRecord;
  readonly capture: ResponseCaptureSummary | undefined;
}

export interface SessionSample {
  readonly run: string;
  readonly group: string;
  readonly result: SessionResult;
}

export interface GroupRow {
  readonly group: string;
  readonly policy: string;
  readonly flows: number;
  readonly connections: number;
  readonly throttledFlows: number;
  readonly meanSizeMB: number;
  readonly meanDurationSec: number;
  readonly srttAtStartupEndMs: Estimate;
  readonly startupGoodputMbps: Estimate;
  readonly throttledGoodputMbps: Estimate;
  /** Throttled goodput / R, the media's own rate (the paper's Figure 3: the same under every policy). */
  readonly goodputToTarget: Estimate;
  /**
   * Throttled goodput / the rate the policy aimed at (its pace rate: 1.25 x R for application pacing, 1.2 x R for
   * trickle's clamp, R at its floor): rate accuracy.
   */
  readonly goodputToPaceRate: Estimate;
  /** Share of throttled flows whose goodput is within ±3 % of the rate their policy aimed at. */
  readonly goodputWithin3Percent: number;
  readonly retransmissionRatePercent: Estimate;
  readonly retransmissionImprovementPercent: Estimate;
  readonly wholeResponseRetransmissionRatePercent: Estimate;
  /**
   * Against unpaced delivery (the experiment's group whose policy is `bulk`, Sammy's and a CDN's baseline), over whole
   * responses, since bulk has no throttling phase: whole-response retransmission rate and the srtt at the response's
   * end, each as % lower than bulk's (1 - group mean / bulk mean). Undefined without a bulk group.
   */
  readonly versusBulk?: { readonly retransmissionLowerPercent: Estimate; readonly srttLowerPercent: Estimate };
  readonly srttEndMs: Estimate;
  readonly srttThrottledMs: Estimate;
  readonly srttImprovementPercent: Estimate;
  readonly throttledBursts: number;
  readonly burstsAtMost10Percent: number;
  readonly sessions: number;
  readonly rebufferChancePercent: Estimate;
  readonly rebufferFrequencyPerSec: Estimate;
  readonly startupDelayMs: number;
  readonly meanBitrateMbps: number;
}

export interface AaCheck {
  readonly groups: readonly [string, string];
  /**
   * null: too few connections in a group to judge (intervals from fewer than minimumAaClusters are not worth
   * comparing).
   */
  readonly metrics: readonly {
    readonly metric: string;
    readonly a: Estimate;
    readonly b: Estimate;
    readonly agree: boolean | null;
  }[];
  readonly agree: boolean | null;
}

export interface KindSummary {
  readonly kind: TransferKind;
  readonly rows: readonly GroupRow[];
  readonly aa: AaCheck | null;
  /** CDF points per group. */
  readonly cdfs: Readonly<
    Record<
      'retransmissionRatePercent' | 'srttThrottledMs' | 'throttledBurstPackets' | 'goodputToTarget',
      readonly { group: string; value: number; fraction: number }[]
    >
  >;
  readonly lossPhases: readonly { group: string; phase: LossPhase; retransmissions: number; share: number }[];
  /** Sessions not attributed to one group (their connection met two groups, or no group header). */
  readonly unattributedSessions: number;
}

export interface QueueingDistribution {
  readonly samples: number;
  readonly p50Ms: number;
  readonly p95Ms: number;
  readonly p99Ms: number;
  readonly cdf: readonly { value: number; fraction: number }[];
}

export interface QueueingRow {
  readonly run: string;
  readonly label: string;
  /** Every probe reply of the run. */
  readonly all: QueueingDistribution;
  /**
   * Replies while no response was in its startup phase (full speed, the same for every policy): the policies' own
   * queueing.
   */
  readonly throttling: QueueingDistribution;
}

export interface ProfileSummary {
  readonly profile: string;
  readonly runs: readonly {
    id: string;
    kind: string;
    seed: number;
    group: string | null;
    flows: number;
    viewers: number;
    errors: number;
    bottleneckDrops: number;
    bottleneckPackets: number;
  }[];
  readonly kinds: readonly KindSummary[];
  readonly queueing: readonly QueueingRow[];
  readonly timeSequences: readonly TimeSequence[];
  readonly browsers: {
    readonly sessions: number;
    readonly rebufferChancePercent: Estimate;
    readonly startupDelayMs: number;
    readonly meanBitrateMbps: number;
  } | null;
  /** A population profile's links, its Table 2 and the simulated players against dash.js on identical links. */
  readonly population: PopulationSummary | null;
}

const mbps = (bps: number | null | undefined) => (bps == null ? Number.NaN : bps / 1e6);

function byCluster<T extends { connection: string }>(samples: readonly T[]): T[][] {
  const clusters = new Map<string, T[]>();
  for (const sample of samples) {
    let list = clusters.get(sample.connection);
    if (list === undefined) {
      list = [];
      clusters.set(sample.connection, list);
    }
    list.push(sample);
  }
  return [...clusters.values()];
}

/** Mean of a per-flow value over clustered flows (flows without the value left out). */
function meanOf(pick: (f: FlowSample) => number | null | undefined): (clusters: readonly FlowSample[][]) => number {
  return (clusters) => {
    let sum = 0;
    let count = 0;
    for (const cluster of clusters) {
      for (const flow of cluster) {
        const v = pick(flow);
        if (v == null || !Number.isFinite(v)) continue;
        sum += v;
        count++;
      }
    }
    return count === 0 ? Number.NaN : sum / count;
  };
}

function medianOf(pick: (f: FlowSample) => number | null | undefined): (clusters: readonly FlowSample[][]) => number {
  return (clusters) =>
    median(
      clusters
        .flat()
        .map(pick)
        .filter((v): v is number => v != null && Number.isFinite(v)),
    );
}

/**
 * Rates are judged only over phases long enough for them to mean something: at least four 64 kB
 * blocks. A one-block audio segment leaves at line speed under every policy (the first block is
 * never held back), so its "goodput / target" is the link's speed over its bitrate, not pacing.
 */
export const minimumRatedBytes = 4 * 65_536;
const ratedStartup = (f: FlowSample) => f.record.startup.bytes >= minimumRatedBytes;
const ratedThrottling = (f: FlowSample) =>
  f.record.throttling !== null && f.record.throttling.bytes >= minimumRatedBytes;
const goodputToPaceRate = (f: FlowSample) => {
  const goodputBps = f.record.throttling?.goodputBps;
  const paceBps = f.record.paceRateBps?.mean;
  return !ratedThrottling(f) || goodputBps == null || paceBps === undefined || paceBps <= 0
    ? null
    : goodputBps / paceBps;
};

const retransmissionPercent = (f: FlowSample) =>
  f.record.throttling?.retransmissionRate == null ? null : f.record.throttling.retransmissionRate * 100;
const wholeRetransmissionPercent = (f: FlowSample) =>
  f.record.retransmissionRate === null ? null : f.record.retransmissionRate * 100;
const srttEndMs = (f: FlowSample) => (f.record.srttUs === null ? null : f.record.srttUs / 1000);
const srttThrottledMs = (f: FlowSample) =>
  f.record.throttling === null || f.record.srttUs === null ? null : f.record.srttUs / 1000;

function sessionStats(
  sessions: readonly SessionSample[],
  options: { resamples: number; seed: number },
): { chance: Estimate; frequency: Estimate } {
  const rebuffered = sessions.filter((s) => s.result.rebuffers.length > 0).length;
  const chance = wilsonInterval(rebuffered, sessions.length);
  const frequency = bootstrap(
    sessions,
    (sample) => {
      const seconds = sample.reduce((sum, s) => sum + s.result.sessionSec, 0);
      return seconds > 0 ? sample.reduce((sum, s) => sum + s.result.rebuffers.length, 0) / seconds : Number.NaN;
    },
    options,
  );
  return {
    chance: { value: chance.value * 100, low: chance.low * 100, high: chance.high * 100, n: chance.n },
    frequency,
  };
}

function improvement(
  pick: (f: FlowSample) => number | null | undefined,
  group: readonly FlowSample[][],
  baseline: readonly FlowSample[][],
  options: { resamples: number; seed: number },
): Estimate {
  const meanPick = meanOf(pick);
  return bootstrapComparison(group, baseline, (a, b) => (1 - meanPick(a) / meanPick(b)) * 100, options);
}

export function summarizeKind(
  kind: TransferKind,
  flows: readonly FlowSample[],
  sessions: readonly SessionSample[],
  config: ExperimentConfig,
  unattributedSessions: number,
): KindSummary {
  const options = { resamples: config.bootstrapResamples, seed: 1 };
  const baselineName = config.baseline ?? config.groups[0]!.name;
  const clustersOf = (group: string) => byCluster(flows.filter((f) => f.group === group));
  const baseline = clustersOf(baselineName);
  const bulkGroup = config.groups.find((g) => g.policy === 'bulk');
  const bulk = bulkGroup === undefined ? undefined : clustersOf(bulkGroup.name);
  const rows: GroupRow[] = config.groups.map((group) => {
    const clusters = clustersOf(group.name);
    const mine = clusters.flat();
    const throttled = mine.filter((f) => f.record.throttling !== null);
    const ratios = throttled.map(goodputToPaceRate).filter((v): v is number => v !== null);
    const bursts = mine.flatMap((f) => f.capture?.throttledBursts ?? []);
    const groupSessions = sessions.filter((s) => s.group === group.name);
    const qoe = sessionStats(groupSessions, options);
    const agg = aggregate(groupSessions.map((s) => s.result));
    return {
      group: group.name,
      policy: group.policy,
      flows: mine.length,
      connections: clusters.length,
      throttledFlows: throttled.length,
      meanSizeMB: mean(mine.map((f) => f.record.bytes / 1e6)),
      meanDurationSec: mean(mine.map((f) => f.record.durationMs / 1000)),
      srttAtStartupEndMs: bootstrap(
        clusters,
        meanOf((f) => (f.record.srttAtStartupEndUs === null ? null : f.record.srttAtStartupEndUs / 1000)),
        options,
      ),
      startupGoodputMbps: bootstrap(
        clusters,
        medianOf((f) => (ratedStartup(f) ? mbps(f.record.startup.goodputBps) : null)),
        options,
      ),
      throttledGoodputMbps: bootstrap(
        clusters,
        medianOf((f) => (ratedThrottling(f) ? mbps(f.record.throttling?.goodputBps) : null)),
        options,
      ),
      goodputToTarget: bootstrap(
        clusters,
        medianOf((f) => (ratedThrottling(f) ? f.record.throttledGoodputToTarget : null)),
        options,
      ),
      goodputToPaceRate: bootstrap(clusters, medianOf(goodputToPaceRate), options),
      goodputWithin3Percent:
        ratios.length === 0 ? Number.NaN : (100 * ratios.filter((r) => Math.abs(r - 1) <= 0.03).length) / ratios.length,
      retransmissionRatePercent: bootstrap(clusters, meanOf(retransmissionPercent), options),
      retransmissionImprovementPercent:
        group.name === baselineName
          ? { value: 0, low: 0, high: 0, n: clusters.length }
          : improvement(retransmissionPercent, clusters, baseline, options),
      wholeResponseRetransmissionRatePercent: bootstrap(clusters, meanOf(wholeRetransmissionPercent), options),
      ...(bulk === undefined || bulkGroup?.name === group.name
        ? {}
        : {
            versusBulk: {
              retransmissionLowerPercent: improvement(wholeRetransmissionPercent, clusters, bulk, options),
              srttLowerPercent: improvement(srttEndMs, clusters, bulk, options),
            },
          }),
      srttEndMs: bootstrap(clusters, meanOf(srttEndMs), options),
      srttThrottledMs: bootstrap(clusters, meanOf(srttThrottledMs), options),
      srttImprovementPercent:
        group.name === baselineName
          ? { value: 0, low: 0, high: 0, n: clusters.length }
          : improvement(srttThrottledMs, clusters, baseline, options),
      throttledBursts: bursts.length,
      burstsAtMost10Percent:
        bursts.length === 0 ? Number.NaN : (100 * bursts.filter((b) => b <= 10).length) / bursts.length,
      sessions: groupSessions.length,
      rebufferChancePercent: qoe.chance,
      rebufferFrequencyPerSec: qoe.frequency,
      startupDelayMs: agg.startupDelayMs.mean,
      meanBitrateMbps: agg.meanBitrateBps / 1e6,
    };
  });
  const cdf = (pick: (f: FlowSample) => number | null | undefined) =>
    config.groups.flatMap((g) =>
      ecdfPoints(
        flows
          .filter((f) => f.group === g.name)
          .map(pick)
          .filter((v): v is number => v != null),
      ).map((p) => ({ group: g.name, ...p })),
    );
  const lossPhases = config.groups.flatMap((g) => {
    const counts: Record<LossPhase, number> = { initialBurst: 0, ackClocking: 0, trailingAcks: 0 };
    for (const f of flows) {
      if (f.group !== g.name || f.capture === undefined) continue;
      for (const phase of Object.keys(counts) as LossPhase[]) counts[phase] += f.capture.lossPhases[phase];
    }
    const total = counts.initialBurst + counts.ackClocking + counts.trailingAcks;
    return (Object.keys(counts) as LossPhase[]).map((phase) => ({
      group: g.name,
      phase,
      retransmissions: counts[phase],
      share: total === 0 ? 0 : counts[phase] / total,
    }));
  });
  return {
    kind,
    rows,
    aa: config.control === undefined ? null : aaCheck(config.control, rows),
    cdfs: {
      retransmissionRatePercent: cdf(retransmissionPercent),
      srttThrottledMs: cdf(srttThrottledMs),
      throttledBurstPackets: config.groups.flatMap((g) =>
        ecdfPoints(flows.filter((f) => f.group === g.name).flatMap((f) => f.capture?.throttledBursts ?? [])).map(
          (p) => ({ group: g.name, ...p }),
        ),
      ),
      goodputToTarget: cdf((f) => (ratedThrottling(f) ? f.record.throttledGoodputToTarget : null)),
    },
    lossPhases,
    unattributedSessions,
  };
}

const aaMetrics: readonly [string, (row: GroupRow) => Estimate][] = [
  ['srtt at end of startup (ms)', (r) => r.srttAtStartupEndMs],
  ['startup goodput (Mbit/s)', (r) => r.startupGoodputMbps],
  ['throttled goodput (Mbit/s)', (r) => r.throttledGoodputMbps],
  ['retransmission rate (%)', (r) => r.retransmissionRatePercent],
  ['srtt, throttling (ms)', (r) => r.srttThrottledMs],
  ['rebuffering chance (%)', (r) => r.rebufferChancePercent],
  ['rebuffering frequency (1/s)', (r) => r.rebufferFrequencyPerSec],
];

export const minimumAaClusters = 5;

/** The A/A control: the two identical groups should agree (overlapping intervals) on every metric. */
export function aaCheck(control: readonly [string, string], rows: readonly GroupRow[]): AaCheck {
  const a = rows.find((r) => r.group === control[0])!;
  const b = rows.find((r) => r.group === control[1])!;
  const metrics = aaMetrics.map(([metric, pick]) => {
    const [ea, eb] = [pick(a), pick(b)];
    const judged = Math.min(ea.n, eb.n) >= minimumAaClusters && Number.isFinite(ea.value) && Number.isFinite(eb.value);
    return { metric, a: ea, b: eb, agree: judged ? intervalsOverlap(ea, eb) : null };
  });
  const judged = metrics.filter((m) => m.agree !== null);
  return { groups: control, metrics, agree: judged.length === 0 ? null : judged.every((m) => m.agree === true) };
}

export function summarizeProfile(profile: string, runs: readonly RunData[], config: ExperimentConfig): ProfileSummary {
  const mixed = runs.filter((r) => r.kind === 'mixed');
  const flows: FlowSample[] = [];
  for (const run of mixed) {
    const captures = new Map(run.captures.map((c) => [c.recordId, c]));
    // In a population, responses to no viewer's address are the harness's own (the players' content index, the origin's
    // readiness check).
    const viewers =
      run.population === undefined ? undefined : new Set(run.population.links.map((link) => link.address));
    for (const record of run.records) {
      // Responses the viewer left before their end (a progressive download at the session's end) count, as the paper's
      // flows did.
      if (record.group === null || record.status >= 400) continue;
      if (viewers !== undefined && !viewers.has(record.client.address ?? '')) continue;
      flows.push({
        run: run.id,
        group: record.group,
        connection: `${run.id}/${record.connectionId}`,
        record,
        capture: captures.get(record.id),
      });
    }
  }
  const kinds: KindSummary[] = [];
  for (const kind of ['progressive', 'segment'] as const) {
    const viewerKind = kind === 'progressive' ? 'progressive' : 'dash';
    const reports = mixed.flatMap((run) =>
      run.viewers.filter((v) => v.kind === viewerKind).map((v) => ({ run: run.id, v })),
    );
    const sessions: SessionSample[] = reports.flatMap(({ run, v }) =>
      'result' in v && v.group !== null && v.group !== 'mixed' ? [{ run, group: v.group, result: v.result }] : [],
    );
    const kindFlows = flows.filter((f) => f.record.role === kind);
    if (kindFlows.length === 0 && sessions.length === 0) continue;
    kinds.push(summarizeKind(kind, kindFlows, sessions, config, reports.length - sessions.length));
  }
  const queueing: QueueingRow[] = runs
    .filter((r) => r.probe.length > 0)
    .map((run) => ({
      run: run.id,
      label: run.kind === 'isolated' ? `${run.group} alone` : `all groups (seed ${run.seed})`,
      ...queueingOfRun(run),
    }));
  // One sample transfer per group: from the group's isolated run when there is one (no other group's traffic), else the
  // first mixed run.
  const timeSequences = config.groups.flatMap((g) => {
    const isolated = runs
      .find((r) => r.kind === 'isolated' && r.group === g.name)
      ?.timeSequences.find((t) => t.group === g.name);
    return isolated ?? mixed.flatMap((r) => r.timeSequences).find((t) => t.group === g.name) ?? [];
  });
  const browserSessions = runs.flatMap((r) => r.browsers);
  const browserResults = browserSessions.map(asSessionResult);
  const browserAgg = aggregate(browserResults);
  const browserChance = wilsonInterval(
    browserResults.filter((r) => r.rebuffers.length > 0).length,
    browserResults.length,
  );
  return {
    profile,
    runs: runs.map((r) => ({
      id: r.id,
      kind: r.kind,
      seed: r.seed,
      group: r.group,
      flows: r.records.length,
      viewers: r.viewers.length + r.browsers.length,
      errors: r.viewers.filter((v) => 'error' in v).length,
      bottleneckDrops: r.bottleneck.drops,
      bottleneckPackets: r.bottleneck.sentPackets,
    })),
    kinds,
    queueing,
    timeSequences,
    browsers:
      browserSessions.length === 0
        ? null
        : {
            sessions: browserSessions.length,
            rebufferChancePercent: {
              value: browserChance.value * 100,
              low: browserChance.low * 100,
              high: browserChance.high * 100,
              n: browserChance.n,
            },
            startupDelayMs: browserAgg.startupDelayMs.mean,
            meanBitrateMbps: browserAgg.meanBitrateBps / 1e6,
          },
    population: summarizePopulation(runs, {
      resamples: config.bootstrapResamples,
      trickleGroup: config.groups.find((g) => g.policy === 'trickle')?.name,
      baselineGroup: config.baseline ?? config.groups[0]!.name,
    }),
  };
}

function distribution(delaysMs: readonly number[]): QueueingDistribution {
  const sorted = [...delaysMs].sort((a, b) => a - b);
  return {
    samples: sorted.length,
    p50Ms: quantileSorted(sorted, 0.5),
    p95Ms: quantileSorted(sorted, 0.95),
    p99Ms: quantileSorted(sorted, 0.99),
    cdf: ecdfPoints(sorted),
  };
}

/**
 * The probe's queueing delay (RTT - the run's smallest RTT), over the whole run and over the
 * moments when no response was in its startup phase: startup is full speed under every policy
 * and fills the queue alike, so the policies differ only outside it.
 */
export function queueingOfRun(run: Pick<RunData, 'probe' | 'records'>): {
  all: QueueingDistribution;
  throttling: QueueingDistribution;
} {
  const delays = queueingDelaysMs(run.probe.map((s) => s.rttMs));
  const startups = run.records
    .filter((r) => r.startup.bytes > 0)
    .map((r) => [r.startedAtEpochMs, r.startedAtEpochMs + r.startup.durationMs] as const);
  const inStartup = (atMs: number) => startups.some(([from, to]) => atMs >= from && atMs <= to);
  return {
    all: distribution(delays),
    throttling: distribution(delays.filter((_, i) => !inStartup(run.probe[i]!.atEpochMs))),
  };
}

export interface CompassCheck {
  readonly goal: string;
  readonly measured: string;
  /** The comparison on the estimates (null: no data). */
  readonly met: boolean | null;
  /** What the report says: below the minimum sample a comparison is "too few", whatever the estimates. */
  readonly verdict: 'met' | 'missed' | 'too few' | 'no data';
}

/**
 * Fewer connections a group (flow metrics) or sessions (rebuffering) than these, and a compass goal is "too few" to
 * call.
 */
export const minimumVerdictConnections = 10;
export const minimumVerdictSessions = 8;

/** The compass goals for trickle against the 64 kB application-pacing baseline (issue 8), on one kind of transfer. */
export function compassChecks(kind: KindSummary, trickleGroup: string, baselineGroup: string): CompassCheck[] {
  const t = kind.rows.find((r) => r.group === trickleGroup);
  const b = kind.rows.find((r) => r.group === baselineGroup);
  if (t === undefined || b === undefined) return [];
  const fmt = (e: Estimate, digits = 1) =>
    `${e.value.toFixed(digits)} (${e.low.toFixed(digits)}..${e.high.toFixed(digits)})`;
  const check = (
    goal: string,
    measured: string,
    value: number,
    ok: boolean,
    sample: 'connections' | 'sessions',
  ): CompassCheck => {
    const met = Number.isFinite(value) ? ok : null;
    const enough =
      sample === 'connections'
        ? Math.min(t.connections, b.connections) >= minimumVerdictConnections
        : Math.min(t.sessions, b.sessions) >= minimumVerdictSessions;
    const size =
      sample === 'connections'
        ? `${Math.min(t.connections, b.connections)} connections`
        : `${Math.min(t.sessions, b.sessions)} sessions`;
    return {
      goal,
      measured: enough || met === null ? measured : `${measured} (${size} in the smaller group)`,
      met,
      verdict: met === null ? 'no data' : !enough ? 'too few' : met ? 'met' : 'missed',
    };
  };
  return [
    check(
      'retransmission rate >= 50 % lower',
      `${fmt(t.retransmissionImprovementPercent)} % lower`,
      t.retransmissionImprovementPercent.value,
      t.retransmissionImprovementPercent.value >= 50,
      'connections',
    ),
    check(
      'mean srtt (throttling) >= 30 % lower',
      `${fmt(t.srttImprovementPercent)} % lower`,
      t.srttImprovementPercent.value,
      t.srttImprovementPercent.value >= 30,
      'connections',
    ),
    check(
      '>= 95 % of bursts <= 10 packets',
      `${t.burstsAtMost10Percent.toFixed(1)} % of ${t.throttledBursts}`,
      t.burstsAtMost10Percent,
      t.burstsAtMost10Percent >= 95,
      'connections',
    ),
    check(
      'throttled goodput within ±3 % of the target rate (median goodput / the rate aimed at)',
      `${fmt(t.goodputToPaceRate, 3)}; ${t.goodputWithin3Percent.toFixed(0)} % of flows ` +
        `within ±3 %; goodput / R ${fmt(t.goodputToTarget, 3)}`,
      t.goodputToPaceRate.value,
      Math.abs(t.goodputToPaceRate.value - 1) <= 0.03,
      'connections',
    ),
    check(
      'rebuffering chance not worse than the baseline',
      `${fmt(t.rebufferChancePercent)} % vs ${fmt(b.rebufferChancePercent)} %`,
      t.rebufferChancePercent.value,
      t.rebufferChancePercent.value <= b.rebufferChancePercent.value ||
        intervalsOverlap(t.rebufferChancePercent, b.rebufferChancePercent),
      'sessions',
    ),
  ];
}

/**
 * A group's effect from a population and from its shared-bottleneck twin (design-comparison.ts). agree: the
 * difference's interval holds 0; differ: it does not.
 */
export type DesignVerdict = 'agree' | 'differ' | 'too few' | 'no data';

export interface DesignEffect {
  readonly kind: TransferKind;
  readonly group: string;
  readonly policy: string;
  /** What is compared, e.g. "retransmissions (throttling), % lower than baseline1". */
  readonly effect: string;
  readonly population: Estimate;
  readonly shared: Estimate;
  /** shared - population, in percentage points, with its 95 % interval (MOVER from the two intervals). */
  readonly difference: Estimate;
  readonly verdict: DesignVerdict;
  /** The fewest connections behind either side (a group's or its reference group's, whichever is smaller). */
  readonly connections: number;
}

export interface DesignComparison {
  /** The population profile (per-viewer links) and the shared-bottleneck profile standing for its viewers. */
  readonly population: string;
  readonly shared: string;
  readonly effects: readonly DesignEffect[];
  /** Effects with a verdict of agree or differ. */
  readonly judged: number;
  readonly differ: number;
  /** Median |shared - population| over the judged effects, percentage points (NaN when none). */
  readonly medianAbsoluteDifferencePoints: number;
}

/** An experiment's results: what `trickle experiment` writes as results.json, and its reports read. */
export interface ExperimentResults {
  readonly name: string;
  readonly description: string;
  readonly date: string;
  readonly machine: {
    readonly hostname: string;
    readonly cpus: string;
    readonly cores: number;
    readonly kernel: string;
    readonly node: string;
  };
  readonly config: ExperimentConfig;
  readonly profiles: readonly (ProfileSummary & {
    readonly link: RunData['link'];
    readonly compass: Readonly<Record<string, ReturnType<typeof compassChecks>>>;
  })[];
  /** Each shared-bottleneck profile's effects beside its population's (config: sharedBottleneckOf). */
  readonly designs: readonly DesignComparison[];
}
