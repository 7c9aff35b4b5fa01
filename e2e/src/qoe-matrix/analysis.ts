/**
 * From the matrix's runs to figures per cell, each with a 95 % interval: what viewers saw (mean
 * bitrate, switches, startup, rebuffering chance and frequency, abandoned requests) and what the
 * network saw (throttling-phase retransmission rate, the interactive probe's queueing delay);
 * the issue's goals against bulk and application pacing; sammy's own change against bulk; and how
 * far the simulator agrees with dash.js on identical links. Below `minimumSessions` a cell's
 * verdicts say "too few". Pure.
 */
import type { SessionResult } from '@trickle/player-sim';
import {
  bootstrap,
  bootstrapComparison,
  intervalsOverlap,
  mean,
  percentile,
  wilsonInterval,
  type Estimate,
} from '../experiment/statistics.js';
import type { MatrixCell } from './config.js';

/** One viewer's session, in the simulator's terms (browser sessions converted). */
export interface MatrixSession {
  readonly result: SessionResult;
  /**
   * Media responses the origin saw abandoned before the session's end (null where viewers share a link and cannot be
   * told apart).
   */
  readonly abandonedRequests: number | null;
  readonly errors: readonly string[];
}

export interface RunNetwork {
  readonly flows: number;
  readonly throttledFlows: number;
  readonly throttledRetransmittedSegments: number;
  readonly throttledDataSegments: number;
  /** Queueing delay of each probe reply (its RTT - the run's smallest), ms; and of those after the startup window. */
  readonly queueingMs: readonly number[];
  readonly queueingAfterStartupMs: readonly number[];
  /** Wall seconds of the session after its startup window (absent in runs written before it was recorded). */
  readonly afterStartupSec?: number | undefined;
  /**
   * Retransmitted and data segments of every response begun after the startup window, whatever its policy (absent in
   * runs written before): the same bytes for bulk, Sammy and Trickle, where "throttled" counts each policy's own phase.
   */
  readonly afterStartupRetransmittedSegments?: number | undefined;
  readonly afterStartupDataSegments?: number | undefined;
  readonly bottleneckDrops: number;
}

export interface MatrixRunData {
  readonly version: 1;
  readonly key: string;
  readonly cell: MatrixCell;
  readonly index: number;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly sessions: readonly MatrixSession[];
  readonly network: RunNetwork;
  /**
   * The most labs that ran at once while this session ran, and the machine's cores (absent in runs written before they
   * were recorded): labs sharing cores skew a browser's startup and the probe's queueing.
   */
  readonly labsAtOnce?: number | undefined;
  readonly cores?: number | undefined;
  /** How often the harness retried this session before it ran through (absent in runs written before it was kept). */
  readonly harnessRetries?: number | undefined;
}

/**
 * What the machine did while a set of sessions ran, from their own records: a work directory can hold sessions of
 * several invocations (resumed, or cells added later), so the invocation that reports them cannot say.
 */
export interface RunConditions {
  readonly sessions: number;
  /** The most labs that ran at once during any of them (null when none recorded it), and in how many it is unknown. */
  readonly labsAtOnce: number | null;
  readonly labsUnrecorded: number;
  /** The fewest cores any of them ran on (null when none recorded it). */
  readonly cores: number | null;
  readonly harnessRetries: number;
  readonly retriesUnrecorded: number;
}

export function runConditions(runs: Iterable<MatrixRunData>): RunConditions {
  let sessions = 0;
  let labsAtOnce: number | null = null;
  let labsUnrecorded = 0;
  let cores: number | null = null;
  let harnessRetries = 0;
  let retriesUnrecorded = 0;
  for (const run of runs) {
    sessions++;
    if (run.labsAtOnce === undefined) labsUnrecorded++;
    else labsAtOnce = Math.max(labsAtOnce ?? 0, run.labsAtOnce);
    if (run.cores !== undefined) cores = Math.min(cores ?? Number.POSITIVE_INFINITY, run.cores);
    if (run.harnessRetries === undefined) retriesUnrecorded++;
    else harnessRetries += run.harnessRetries;
  }
  return { sessions, labsAtOnce, labsUnrecorded, cores, harnessRetries, retriesUnrecorded };
}

/**
 * Why a probe-queueing figure of sessions run under `conditions` cannot be judged, or null when it can: only sessions
 * known to have had the machine to one lab can. On 2 cores the delay line and the ping wait behind other labs'
 * browsers for milliseconds, as much as a paced flow's queue (fast-20mbit, dash.js, 2026-12-06: trickle-abr's p95
 * after startup 8.1 ms with 3 labs at once, 0.8-1.2 ms one at a time).
 */
export function sharedCoresReason(conditions: RunConditions): string | null {
  if (conditions.labsUnrecorded > 0)
    return `labs at once not recorded for ${conditions.labsUnrecorded} of ${conditions.sessions} sessions`;
  if (conditions.labsAtOnce !== null && conditions.labsAtOnce > 1) return `up to ${conditions.labsAtOnce} labs at once`;
  return null;
}

export interface CellSummary {
  readonly cell: MatrixCell;
  readonly runs: number;
  readonly sessions: number;
  readonly tooFew: boolean;
  readonly meanBitrateMbps: Estimate;
  readonly switchesPerMinute: Estimate;
  readonly startupMs: Estimate;
  readonly neverStarted: number;
  readonly failedSessions: number;
  readonly rebufferChancePercent: Estimate;
  readonly rebufferPerMinute: Estimate;
  readonly abandonedPerSession: Estimate;
  readonly throttledRetransmissionPercent: Estimate;
  /** Every response begun after the startup window: retransmitted over data segments, runs pooled, %. */
  readonly retransmissionAfterStartupPercent: Estimate;
  readonly queueingP95Ms: Estimate;
  readonly queueingP95AfterStartupMs: Estimate;
  /** Wall seconds per session after the startup window: how much of it was paced steady state. */
  readonly afterStartupSec: Estimate;
}

/** Fewer sessions than this in a cell, and its comparisons say "too few" rather than met or missed. */
export const minimumSessions = 8;
/** A cell long enough to judge a player's steady state (buffer full, ABR settled): its sessions, and their paced part. */
export const minimumCellSessionSec = 180;
export const minimumAfterStartupSec = 120;
/** Rebuffering chance on the 3G-like trace is judged only when its 95 % interval is at most this wide each way. */
export const maximumChanceHalfWidthPoints = 20;
const resamples = 2000;

/** p95 of the runs' samples pooled. */
const pooledP95Of =
  (pick: (n: RunNetwork) => readonly number[]) =>
  (runs: readonly MatrixRunData[]): number =>
    percentile(
      runs.flatMap((r) => pick(r.network)),
      95,
    );

/** A run that has samples of the figure `pick` reads (runs without are left out of its bootstraps). */
const hasSamplesOf = (pick: (n: RunNetwork) => readonly number[]) => (r: MatrixRunData) => pick(r.network).length > 0;

/** Retransmitted over data segments of the segments `pick` counts in each run, the runs pooled, %. */
const pooledPercentOf =
  (pick: (n: RunNetwork) => { readonly retransmitted: number; readonly segments: number }) =>
  (runs: readonly MatrixRunData[]): number => {
    const counts = runs.map((r) => pick(r.network));
    const segments = counts.reduce((sum, c) => sum + c.segments, 0);
    return segments > 0 ? (100 * counts.reduce((sum, c) => sum + c.retransmitted, 0)) / segments : Number.NaN;
  };

/** The throttling phases' retransmissions (each policy's own phase). */
const pooledRetransmissionPercent = pooledPercentOf((n) => ({
  retransmitted: n.throttledRetransmittedSegments,
  segments: n.throttledDataSegments,
}));

/** Every response's after the startup window (absent in runs written before it was recorded: none counted). */
const pooledAfterStartupRetransmissionPercent = pooledPercentOf((n) => ({
  retransmitted: n.afterStartupRetransmittedSegments ?? 0,
  segments: n.afterStartupDataSegments ?? 0,
}));

const hasAfterStartupSegments = (r: MatrixRunData) => (r.network.afterStartupDataSegments ?? 0) > 0;

function pooledP95(runs: readonly MatrixRunData[], pick: (n: RunNetwork) => readonly number[], seed: number): Estimate {
  return bootstrap(runs.filter(hasSamplesOf(pick)), pooledP95Of(pick), { resamples, seed });
}

export function summarizeCell(cell: MatrixCell, runs: readonly MatrixRunData[], seed = 1): CellSummary {
  const sessions = runs.flatMap((r) => r.sessions);
  const started = sessions.filter((s) => s.result.startupDelayMs !== null);
  const options = { resamples, seed };
  const rebuffered = sessions.filter((s) => s.result.rebuffers.length > 0).length;
  const chance = wilsonInterval(rebuffered, sessions.length);
  const abandoned = sessions.filter((s) => s.abandonedRequests !== null);
  return {
    cell,
    runs: runs.length,
    sessions: sessions.length,
    tooFew: sessions.length < minimumSessions,
    meanBitrateMbps: bootstrap(started, (s) => mean(s.map((x) => x.result.meanBitrateBps / 1e6)), options),
    switchesPerMinute: bootstrap(
      started,
      (s) => {
        const playedSec = s.reduce((sum, x) => sum + x.result.playedSec, 0);
        return playedSec > 0 ? (60 * s.reduce((sum, x) => sum + x.result.switches, 0)) / playedSec : Number.NaN;
      },
      options,
    ),
    startupMs: bootstrap(started, (s) => mean(s.map((x) => x.result.startupDelayMs!)), options),
    neverStarted: sessions.length - started.length,
    failedSessions: sessions.filter((s) => s.errors.length > 0).length,
    rebufferChancePercent: { value: 100 * chance.value, low: 100 * chance.low, high: 100 * chance.high, n: chance.n },
    rebufferPerMinute: bootstrap(
      sessions,
      (s) => {
        const sessionSec = s.reduce((sum, x) => sum + x.result.sessionSec, 0);
        return sessionSec > 0
          ? (60 * s.reduce((sum, x) => sum + x.result.rebuffers.length, 0)) / sessionSec
          : Number.NaN;
      },
      options,
    ),
    abandonedPerSession: bootstrap(abandoned, (s) => mean(s.map((x) => x.abandonedRequests!)), options),
    throttledRetransmissionPercent: bootstrap(
      runs.filter((r) => r.network.throttledDataSegments > 0),
      pooledRetransmissionPercent,
      options,
    ),
    retransmissionAfterStartupPercent: bootstrap(
      runs.filter(hasAfterStartupSegments),
      pooledAfterStartupRetransmissionPercent,
      options,
    ),
    queueingP95Ms: pooledP95(runs, (n) => n.queueingMs, seed),
    queueingP95AfterStartupMs: pooledP95(runs, (n) => n.queueingAfterStartupMs, seed),
    afterStartupSec: bootstrap(
      runs.filter((r) => r.network.afterStartupSec !== undefined),
      (r) => mean(r.map((x) => x.network.afterStartupSec!)),
      options,
    ),
  };
}

/**
 * `undecided`: a difference whose interval holds 0 (the goal asks for it to lie at or below 0). `not judged`: the
 * run cannot measure it (probe queueing with labs sharing cores).
 */
export type Verdict = 'met' | 'missed' | 'undecided' | 'too few' | 'no data' | 'not judged';

export interface GoalCheck {
  readonly goal: string;
  readonly scope: string;
  readonly measured: string;
  readonly verdict: Verdict;
}

const fmt = (e: Estimate, digits = 2) =>
  Number.isFinite(e.value)
    ? `${e.value.toFixed(digits)}` +
      `${Number.isFinite(e.low) ? ` [${e.low.toFixed(digits)}, ${e.high.toFixed(digits)}]` : ''}`
    : '-';

/** A ratio's estimate in per cent. */
const asPercent = (e: Estimate): Estimate => ({ ...e, value: 100 * e.value, low: 100 * e.low, high: 100 * e.high });

function verdictOf(cells: readonly (CellSummary | undefined)[], value: number, ok: boolean): Verdict {
  if (cells.some((c) => c === undefined || c.sessions === 0) || !Number.isFinite(value)) return 'no data';
  if (cells.some((c) => c!.tooFew)) return 'too few';
  return ok ? 'met' : 'missed';
}

/** Mean bitrate of `a` over `b`'s, with a bootstrap interval over both cells' sessions. */
export function bitrateRatio(a: readonly MatrixRunData[], b: readonly MatrixRunData[], seed = 1): Estimate {
  const sessions = (runs: readonly MatrixRunData[]) =>
    runs.flatMap((r) => r.sessions).filter((s) => s.result.startupDelayMs !== null);
  return bootstrapComparison(
    sessions(a),
    sessions(b),
    (x, y) => mean(x.map((s) => s.result.meanBitrateBps)) / mean(y.map((s) => s.result.meanBitrateBps)),
    { resamples, seed },
  );
}

/** Two cells' runs compared by `combine` of a run-level figure of each, with a bootstrap interval over both. */
function runComparison(
  a: readonly MatrixRunData[],
  b: readonly MatrixRunData[],
  statistic: (runs: readonly MatrixRunData[]) => number,
  hasSamples: (run: MatrixRunData) => boolean,
  combine: (x: number, y: number) => number,
  seed: number,
): Estimate {
  return bootstrapComparison(
    a.filter(hasSamples),
    b.filter(hasSamples),
    (x, y) => combine(statistic(x), statistic(y)),
    {
      resamples,
      seed,
    },
  );
}

/**
 * A run-level figure of `a` minus `b`'s, with a bootstrap interval over both cells' runs (runs without
 * samples of the figure left out).
 */
export function runDifference(
  a: readonly MatrixRunData[],
  b: readonly MatrixRunData[],
  statistic: (runs: readonly MatrixRunData[]) => number,
  hasSamples: (run: MatrixRunData) => boolean,
  seed = 1,
): Estimate {
  return runComparison(a, b, statistic, hasSamples, (x, y) => x - y, seed);
}

/** The same figure of `a` against `b`'s as a change, % (-40: 40 % less), with the same interval. */
export function runChangePercent(
  a: readonly MatrixRunData[],
  b: readonly MatrixRunData[],
  statistic: (runs: readonly MatrixRunData[]) => number,
  hasSamples: (run: MatrixRunData) => boolean,
  seed = 1,
): Estimate {
  return runComparison(a, b, statistic, hasSamples, (x, y) => 100 * (x / y - 1), seed);
}

/** Met when the whole interval of the difference is at or below 0, missed when it is above, else undecided. */
function differenceVerdict(cells: readonly (CellSummary | undefined)[], difference: Estimate): Verdict {
  const base = verdictOf(cells, difference.value, true);
  if (base !== 'met') return base;
  return difference.high <= 0 ? 'met' : difference.low > 0 ? 'missed' : 'undecided';
}

export interface MatrixData {
  readonly cells: readonly CellSummary[];
  readonly runsByCell: ReadonlyMap<string, readonly MatrixRunData[]>;
}

/** A link, and where playback began on it: the goals are checked, and the report has a section, per place. */
export interface Place {
  readonly link: string;
  readonly startSec: number;
  /** How the report names it: the link, or "<link> from <start> s". */
  readonly title: string;
}

export function placeTitle(link: string, startSec: number): string {
  return startSec > 0 ? `${link} from ${startSec} s` : link;
}

/** The places of the cells, each once, in the cells' order (so a link's mid-asset starts follow its own). */
export function placesOf(cells: readonly CellSummary[]): Place[] {
  const places = new Map<string, Place>();
  for (const { cell } of cells) {
    const key = `${cell.link}@${cell.startSec}`;
    if (!places.has(key))
      places.set(key, { link: cell.link, startSec: cell.startSec, title: placeTitle(cell.link, cell.startSec) });
  }
  return [...places.values()];
}

/** The browser players whose bitrate goals are checked, and every player of the matrix. */
const realPlayers = ['dashjs', 'hlsjs', 'shaka'] as const;
const allPlayers = [...realPlayers, 'sim'] as const;

/** The cell of `policy` and `player` at `place` (with or without CMCD), if the matrix has it. */
function findCell(
  data: MatrixData,
  place: Place,
  policy: string,
  player: string,
  cmcd: boolean,
): CellSummary | undefined {
  return data.cells.find(
    (c) =>
      c.cell.link === place.link &&
      c.cell.startSec === place.startSec &&
      c.cell.policy.label === policy &&
      c.cell.player === player &&
      c.cell.cmcd === cmcd,
  );
}

const runsOfCell = (data: MatrixData, cell: CellSummary | undefined): readonly MatrixRunData[] =>
  cell === undefined ? [] : (data.runsByCell.get(cell.cell.id) ?? []);

/**
 * The issue's goals, for `defaultPolicy` (the segment default) against bulk and application pacing. The probe's
 * queueing goal is judged only from sessions that ran one lab at a time (`sharedCoresReason`).
 */
export function goalChecks(data: MatrixData, defaultPolicy: string): GoalCheck[] {
  const checks: GoalCheck[] = [];
  // The goals hold wherever playback begins: each link at each start is a place of its own.
  const places = placesOf(data.cells);
  const find = (place: Place, policy: string, player: string, cmcd: boolean) =>
    findCell(data, place, policy, player, cmcd);
  const at = (link: string) => places.find((p) => p.link === link && p.startSec === 0);
  const runs = (cell: CellSummary | undefined) => runsOfCell(data, cell);
  for (const place of places) {
    for (const player of realPlayers) {
      const bulk = find(place, 'bulk', player, false);
      for (const cmcd of [false, true]) {
        const mine = find(place, defaultPolicy, player, cmcd);
        if (mine === undefined || bulk === undefined) continue;
        const scope = `${place.title}, ${player}${cmcd ? ', CMCD on' : ''}`;
        const ratio = bitrateRatio(runs(mine), runs(bulk));
        const bulkMbps = fmt(bulk.meanBitrateMbps);
        checks.push({
          goal: `${defaultPolicy} mean bitrate >= 95 % of bulk's`,
          scope,
          measured: `${fmt(asPercent(ratio), 1)} % (${fmt(mine.meanBitrateMbps)} vs ${bulkMbps} Mbit/s)`,
          verdict: verdictOf([mine, bulk], ratio.value, ratio.value >= 0.95),
        });
        const a = mine.rebufferChancePercent;
        const b = bulk.rebufferChancePercent;
        checks.push({
          goal: `${defaultPolicy} rebuffering chance not worse than bulk's`,
          scope,
          measured: `${fmt(a, 1)} % vs ${fmt(b, 1)} %`,
          verdict: verdictOf([mine, bulk], a.value, a.value <= b.value || intervalsOverlap(a, b)),
        });
      }
    }
    for (const player of allPlayers) {
      const cmcdOff = find(place, 'cmcd', player, false);
      const bulk = find(place, 'bulk', player, false);
      if (cmcdOff !== undefined && bulk !== undefined) {
        const a = cmcdOff.startupMs;
        const b = bulk.startupMs;
        checks.push({
          goal: 'cmcd without CMCD no worse than bulk on startup',
          scope: `${place.title}, ${player}`,
          measured: `${fmt(a, 0)} ms vs ${fmt(b, 0)} ms`,
          verdict: verdictOf([cmcdOff, bulk], a.value, a.value <= b.value || intervalsOverlap(a, b)),
        });
      }
    }
  }
  const fast = at('fast-20mbit');
  const shallow = at('shallow-100mbit');
  for (const player of allPlayers) {
    const mine = fast === undefined ? undefined : find(fast, defaultPolicy, player, false);
    const app = fast === undefined ? undefined : find(fast, 'app-pacing', player, false);
    if (mine !== undefined && app !== undefined) {
      const sharedCores = sharedCoresReason(runConditions([...runs(mine), ...runs(app)]));
      for (const [label, pick, samples] of [
        ['whole session', (c: CellSummary) => c.queueingP95Ms, (n: RunNetwork) => n.queueingMs],
        [
          'after the startup window',
          (c: CellSummary) => c.queueingP95AfterStartupMs,
          (n: RunNetwork) => n.queueingAfterStartupMs,
        ],
      ] as const) {
        // Judged on the point estimate, as the bitrate ratio is; the interval says how firmly.
        const ratio = runComparison(
          runs(mine),
          runs(app),
          pooledP95Of(samples),
          hasSamplesOf(samples),
          (x, y) => x / y,
          1,
        );
        checks.push({
          goal: `${defaultPolicy} probe queueing p95 <= 25 % of app-pacing's (${label})`,
          scope: `fast-20mbit, ${player}`,
          measured:
            `${fmt(pick(mine), 1)} ms vs ${fmt(pick(app), 1)} ms (${fmt(asPercent(ratio), 0)} %)` +
            (sharedCores === null ? '' : `; ${sharedCores}: judge with \`--parallel 1\``),
          verdict: sharedCores === null ? verdictOf([mine, app], ratio.value, ratio.value <= 0.25) : 'not judged',
        });
      }
    }
    const pacing = shallow === undefined ? undefined : find(shallow, 'pacing', player, false);
    const bulk = shallow === undefined ? undefined : find(shallow, 'bulk', player, false);
    if (pacing !== undefined && bulk !== undefined) {
      const a = pacing.rebufferChancePercent;
      const b = bulk.rebufferChancePercent;
      checks.push({
        goal: 'pacing no more rebuffering than bulk on the shallow buffer',
        scope: `shallow-100mbit, ${player}`,
        measured:
          `${fmt(a, 1)} % vs ${fmt(b, 1)} % of sessions; ${fmt(pacing.rebufferPerMinute, 3)} ` +
          `vs ${fmt(bulk.rebufferPerMinute, 3)} per minute`,
        verdict: verdictOf([pacing, bulk], a.value, a.value <= b.value || intervalsOverlap(a, b)),
      });
    }
  }
  // Long enough to judge a steady state, and (on the 3G-like trace, where chance varies most) enough sessions.
  for (const place of places) {
    const here = data.cells.filter(
      (c) => c.cell.link === place.link && c.cell.startSec === place.startSec && c.sessions > 0,
    );
    if (here.length === 0) continue;
    const sessionSec = Math.min(
      ...here.map((c) =>
        mean((data.runsByCell.get(c.cell.id) ?? []).flatMap((r) => r.sessions.map((x) => x.result.sessionSec))),
      ),
    );
    const shortest = here.reduce((a, b) => (b.afterStartupSec.value < a.afterStartupSec.value ? b : a));
    checks.push({
      goal: `sessions >= ${minimumCellSessionSec} s with >= ${minimumAfterStartupSec} s after the startup window`,
      scope: place.title,
      measured:
        `sessions ${sessionSec.toFixed(0)} s (the shortest cell's mean); after the startup window ` +
        `${fmt(shortest.afterStartupSec, 0)} s (the least, ${shortest.cell.policy.label} ${shortest.cell.player})`,
      verdict: verdictOf(
        here,
        shortest.afterStartupSec.value,
        sessionSec >= minimumCellSessionSec - 1 && shortest.afterStartupSec.value >= minimumAfterStartupSec,
      ),
    });
    if (place.link !== '3g-trace') continue;
    const halfWidth = (c: CellSummary) => (c.rebufferChancePercent.high - c.rebufferChancePercent.low) / 2;
    const widest = here.reduce((a, b) => (halfWidth(b) > halfWidth(a) ? b : a));
    checks.push({
      goal: `rebuffering chance known within +-${maximumChanceHalfWidthPoints} points on the 3G-like trace`,
      scope: place.title,
      measured:
        `widest +-${halfWidth(widest).toFixed(2)} points (${widest.cell.policy.label} ${widest.cell.player}, ` +
        `${widest.sessions} sessions: ${fmt(widest.rebufferChancePercent, 1)} %)`,
      verdict: verdictOf(here, halfWidth(widest), halfWidth(widest) <= maximumChanceHalfWidthPoints),
    });
  }
  // The network's side, on every link: against bulk, and Netflix's Sammy (SIGCOMM'23), the strongest published pacer.
  for (const place of places)
    for (const player of allPlayers) {
      const mine = find(place, defaultPolicy, player, false);
      const sammy = find(place, 'sammy', player, false);
      if (mine === undefined) continue;
      const scope = `${place.title}, ${player}`;
      // The same bytes under every policy (each policy's "throttled" phase is its own): against sammy and bulk.
      const bulk = find(place, 'bulk', player, false);
      for (const [name, other] of [
        ['sammy', sammy],
        ['bulk', bulk],
      ] as const) {
        if (other === undefined) continue;
        const difference = runDifference(
          runs(mine),
          runs(other),
          pooledAfterStartupRetransmissionPercent,
          hasAfterStartupSegments,
        );
        checks.push({
          goal: `${defaultPolicy} retransmissions after startup (every response) <= ${name}'s (difference's interval <= 0)`,
          scope,
          measured:
            `${fmt(mine.retransmissionAfterStartupPercent, 2)} % vs ${fmt(other.retransmissionAfterStartupPercent, 2)} %; ` +
            `difference ${fmt(difference, 2)} points`,
          verdict: differenceVerdict([mine, other], difference),
        });
      }
      if (sammy === undefined) continue;
      const retransmissions = runDifference(
        runs(mine),
        runs(sammy),
        pooledRetransmissionPercent,
        (r) => r.network.throttledDataSegments > 0,
      );
      checks.push({
        goal: `${defaultPolicy} throttled retransmissions <= sammy's (difference's interval <= 0)`,
        scope,
        measured:
          `${fmt(mine.throttledRetransmissionPercent, 2)} % vs ${fmt(sammy.throttledRetransmissionPercent, 2)} %; ` +
          `difference ${fmt(retransmissions, 2)} points`,
        verdict: differenceVerdict([mine, sammy], retransmissions),
      });
      const queueing = runDifference(
        runs(mine),
        runs(sammy),
        pooledP95Of((n) => n.queueingAfterStartupMs),
        hasSamplesOf((n) => n.queueingAfterStartupMs),
      );
      checks.push({
        goal: `${defaultPolicy} probe queueing p95 after startup <= sammy's (difference's interval <= 0)`,
        scope,
        measured:
          `${fmt(mine.queueingP95AfterStartupMs, 1)} ms vs ${fmt(sammy.queueingP95AfterStartupMs, 1)} ms; ` +
          `difference ${fmt(queueing, 1)} ms`,
        verdict: differenceVerdict([mine, sammy], queueing),
      });
    }
  return checks;
}

/** Sammy against bulk in one place, for one player: its reductions beside its paper's. */
export interface SammyAgainstBulk {
  readonly place: Place;
  readonly player: string;
  readonly sessions: { readonly sammy: number; readonly bulk: number };
  /** Every response begun after the startup window: retransmitted segments, and the probe's queueing p95, as %. */
  readonly retransmissionChangePercent: Estimate;
  readonly queueingP95ChangePercent: Estimate;
}

/**
 * Sammy's own effect against unpaced delivery wherever the matrix has both, to read beside the paper's production A/B
 * test (Spang et al., SIGCOMM'23, section 5: retransmissions -35.5 % [-37.8, -33.4], RTT -13.7 % [-16.4, -12.3]).
 */
export function sammyAgainstBulk(data: MatrixData): SammyAgainstBulk[] {
  const out: SammyAgainstBulk[] = [];
  for (const place of placesOf(data.cells))
    for (const player of allPlayers) {
      const sammy = findCell(data, place, 'sammy', player, false);
      const bulk = findCell(data, place, 'bulk', player, false);
      if (sammy === undefined || bulk === undefined || sammy.sessions === 0 || bulk.sessions === 0) continue;
      const [a, b] = [runsOfCell(data, sammy), runsOfCell(data, bulk)];
      out.push({
        place,
        player,
        sessions: { sammy: sammy.sessions, bulk: bulk.sessions },
        retransmissionChangePercent: runChangePercent(
          a,
          b,
          pooledAfterStartupRetransmissionPercent,
          hasAfterStartupSegments,
        ),
        queueingP95ChangePercent: runChangePercent(
          a,
          b,
          pooledP95Of((n) => n.queueingAfterStartupMs),
          hasSamplesOf((n) => n.queueingAfterStartupMs),
        ),
      });
    }
  return out;
}

export interface Agreement {
  readonly link: string;
  readonly startSec: number;
  readonly policy: string;
  readonly cmcd: boolean;
  readonly rebufferChanceDiffPoints: number;
  readonly meanBitrateRatio: number;
  readonly startupRatio: number;
  readonly within: { readonly rebufferChance: boolean; readonly meanBitrate: boolean };
  readonly sessions: { readonly sim: number; readonly browser: number };
}

/**
 * How far the simulator's cells agree with dash.js's on the same links: ±5 points of rebuffering
 * chance, ±10 % of mean bitrate (both report the video rung's declared bitrate; hls.js reports
 * variants, video and audio, so it is not compared).
 */
export function agreements(cells: readonly CellSummary[]): Agreement[] {
  const out: Agreement[] = [];
  for (const sim of cells.filter((c) => c.cell.player === 'sim')) {
    const other = cells.find(
      (c) =>
        c.cell.player === 'dashjs' &&
        c.cell.link === sim.cell.link &&
        c.cell.startSec === sim.cell.startSec &&
        c.cell.policy.label === sim.cell.policy.label &&
        c.cell.cmcd === sim.cell.cmcd,
    );
    if (other === undefined || other.sessions === 0 || sim.sessions === 0) continue;
    const diff = sim.rebufferChancePercent.value - other.rebufferChancePercent.value;
    const ratio = sim.meanBitrateMbps.value / other.meanBitrateMbps.value;
    out.push({
      link: sim.cell.link,
      startSec: sim.cell.startSec,
      policy: sim.cell.policy.label,
      cmcd: sim.cell.cmcd,
      rebufferChanceDiffPoints: diff,
      meanBitrateRatio: ratio,
      startupRatio: sim.startupMs.value / other.startupMs.value,
      within: { rebufferChance: Math.abs(diff) <= 5, meanBitrate: Math.abs(ratio - 1) <= 0.1 },
      sessions: { sim: sim.sessions, browser: other.sessions },
    });
  }
  return out;
}
