/**
 * Bandwidth traces: a piecewise-constant downlink rate (and optionally delay) over time. Readers
 * for the formats the field uses (Sabre JSON, Pensieve "cooked" text, Mahimahi delivery
 * opportunities) and seeded synthetic generators. Pure: text in, points out. The player
 * lab (e2e) replays the same traces on its links.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { mersenne } from 'pure-rand/generator/mersenne';
import { SimError } from './errors.js';

export interface TracePoint {
  /** When this rate starts, from the start of the trace. */
  readonly atMs: number;
  readonly rateBps: number;
  /** One-way delay from this point on, when the trace has one. */
  readonly delayMs?: number | undefined;
}

export interface Trace {
  readonly name: string;
  readonly points: readonly TracePoint[];
  /** Length of one pass; the replay loops. */
  readonly durationMs: number;
}

function fail(message: string): never {
  throw new SimError('SIM_ERR_TRACE', message);
}

function finish(name: string, points: TracePoint[], durationMs: number): Trace {
  if (points.length === 0) fail(`trace ${name} has no points`);
  if (!(durationMs > 0)) fail(`trace ${name} has no duration`);
  for (const point of points) {
    if (!Number.isFinite(point.rateBps) || point.rateBps < 0)
      fail(`trace ${name}: rate ${point.rateBps} at ${point.atMs} ms`);
  }
  return { name, points, durationMs };
}

/** Sabre: `[{"duration_ms": 1000, "bandwidth_kbps": 4000, "latency_ms": 20}, ...]`. */
export function parseSabreTrace(text: string, name = 'sabre'): Trace {
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch (error) {
    fail(`trace ${name} is not JSON: ${(error as Error).message}`);
  }
  if (!Array.isArray(entries))
    fail(`trace ${name}: expected a JSON array of {duration_ms, bandwidth_kbps, latency_ms}`);
  const points: TracePoint[] = [];
  let atMs = 0;
  for (const [i, entry] of entries.entries()) {
    const e = entry as Record<string, unknown>;
    const durationMs = Number(e.duration_ms);
    const kbps = Number(e.bandwidth_kbps);
    if (!(durationMs > 0) || !(kbps >= 0))
      fail(`trace ${name}: entry ${i} lacks a positive duration_ms or bandwidth_kbps`);
    // Sabre's latency_ms is the round trip; the lab's delays are one way.
    points.push({
      atMs,
      rateBps: kbps * 1000,
      delayMs: e.latency_ms === undefined ? undefined : Number(e.latency_ms) / 2,
    });
    atMs += durationMs;
  }
  return finish(name, points, atMs);
}

/** Pensieve "cooked": lines `<seconds> <Mbit/s>`, each rate holding until the next timestamp. */
export function parseCookedTrace(text: string, name = 'cooked'): Trace {
  const rows = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line, i) => {
      const [seconds, mbit] = line.split(/[\s,]+/).map(Number);
      if (!Number.isFinite(seconds) || !Number.isFinite(mbit) || mbit! < 0)
        fail(`trace ${name}: line ${i + 1} is not "<seconds> <Mbit/s>"`);
      return { seconds: seconds!, mbit: mbit! };
    });
  if (rows.length < 2) fail(`trace ${name} needs at least two lines`);
  const start = rows[0]!.seconds;
  const points = rows.slice(0, -1).map((row) => ({ atMs: (row.seconds - start) * 1000, rateBps: row.mbit * 1e6 }));
  return finish(name, points, (rows[rows.length - 1]!.seconds - start) * 1000);
}

/**
 * Mahimahi: one line per 1500-byte delivery opportunity, its millisecond timestamp. Converted to
 * a rate per `binMs` window.
 */
export function parseMahimahiTrace(text: string, name = 'mahimahi', binMs = 100): Trace {
  const stamps = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '')
    .map((line, i) => {
      const value = Number(line);
      if (!Number.isInteger(value) || value < 0) fail(`trace ${name}: line ${i + 1} is not a millisecond timestamp`);
      return value;
    });
  if (stamps.length === 0) fail(`trace ${name} is empty`);
  const durationMs = Math.max(binMs, Math.ceil((stamps[stamps.length - 1]! + 1) / binMs) * binMs);
  const bins = new Array<number>(durationMs / binMs).fill(0);
  for (const stamp of stamps) bins[Math.floor(stamp / binMs)]! += 1;
  return finish(
    name,
    bins.map((count, i) => ({ atMs: i * binMs, rateBps: (count * 1500 * 8 * 1000) / binMs })),
    durationMs,
  );
}

/** Picks the reader by content: JSON array -> Sabre, one integer per line -> Mahimahi, else cooked. */
export function parseTrace(text: string, name: string): Trace {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) return parseSabreTrace(trimmed, name);
  if (/^\d+(\n\d+)*$/.test(trimmed)) return parseMahimahiTrace(trimmed, name);
  return parseCookedTrace(trimmed, name);
}

/** Rate and delay in force `atMs` into the trace (looping). */
export function traceAt(trace: Trace, atMs: number): TracePoint {
  const t = ((atMs % trace.durationMs) + trace.durationMs) % trace.durationMs;
  let current = trace.points[0]!;
  for (const point of trace.points) {
    if (point.atMs > t) break;
    current = point;
  }
  return current;
}

/** A seeded uniform [0, 1) generator (Mersenne Twister from pure-rand), so synthetic traces are reproducible. */
export function seededRandom(seed: number): () => number {
  const generator = mersenne(seed);
  return () => uniformFloat64(generator);
}

export function constantTrace(rateBps: number, durationMs = 60_000): Trace {
  return finish(`constant-${rateBps}`, [{ atMs: 0, rateBps }], durationMs);
}

/** `fromBps` until `atMs`, then `toBps` (a step down or up). */
export function stepTrace(fromBps: number, toBps: number, atMs: number, durationMs = 2 * atMs): Trace {
  return finish(
    `step-${fromBps}-${toBps}`,
    [
      { atMs: 0, rateBps: fromBps },
      { atMs, rateBps: toBps },
    ],
    durationMs,
  );
}

/**
 * A bounded multiplicative random walk, one step per `stepMs`: the shape of cellular traces
 * (slow drifts, sudden dips), with parameters chosen per network kind below.
 */
export function randomWalkTrace(options: {
  name: string;
  seed: number;
  meanBps: number;
  minBps: number;
  maxBps: number;
  volatility: number;
  stepMs: number;
  durationMs: number;
  dipProbability: number;
}): Trace {
  const random = seededRandom(options.seed);
  const points: TracePoint[] = [];
  let rate = options.meanBps;
  for (let atMs = 0; atMs < options.durationMs; atMs += options.stepMs) {
    const drift = Math.log(options.meanBps / rate) * 0.1;
    rate *= Math.exp(drift + options.volatility * (random() * 2 - 1));
    rate = Math.min(options.maxBps, Math.max(options.minBps, rate));
    const dip = random() < options.dipProbability;
    points.push({ atMs, rateBps: Math.round(dip ? options.minBps : rate) });
  }
  return finish(options.name, points, options.durationMs);
}

export function lteLikeTrace(seed = 1, durationMs = 300_000): Trace {
  return randomWalkTrace({
    name: `lte-like-${seed}`,
    seed,
    meanBps: 12e6,
    minBps: 1e6,
    maxBps: 40e6,
    volatility: 0.25,
    stepMs: 500,
    durationMs,
    dipProbability: 0.02,
  });
}

export function threeGLikeTrace(seed = 1, durationMs = 300_000): Trace {
  return randomWalkTrace({
    name: `3g-like-${seed}`,
    seed,
    meanBps: 1.2e6,
    minBps: 150e3,
    maxBps: 3e6,
    volatility: 0.3,
    stepMs: 1000,
    durationMs,
    dipProbability: 0.03,
  });
}

/** Cooked text (`<seconds> <Mbit/s>`) of a trace, the format checked into the repository. */
export function formatCookedTrace(trace: Trace): string {
  const lines = trace.points.map((p) => `${(p.atMs / 1000).toFixed(3)} ${(p.rateBps / 1e6).toFixed(4)}`);
  lines.push(
    `${(trace.durationMs / 1000).toFixed(3)} ${(trace.points[trace.points.length - 1]!.rateBps / 1e6).toFixed(4)}`,
  );
  return `${lines.join('\n')}\n`;
}
