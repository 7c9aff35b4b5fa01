/**
 * The statistics of the report, pure and seeded: estimates with 95 % intervals. Responses of one
 * connection are not independent (they share a path, a cwnd and a viewer), so intervals come from
 * a cluster bootstrap: connections (or sessions) are resampled with replacement, with all their
 * responses. Proportions of sessions use the Wilson score interval.
 */
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { mersenne } from 'pure-rand/generator/mersenne';
import { quantileSorted } from '@trickle/player-sim';

// Quantiles and medians: player-sim's statistics.ts, the repository's one definition.
export { median, percentile, quantileSorted } from '@trickle/player-sim';

export interface Estimate {
  readonly value: number;
  /** 95 % interval; NaN when it cannot be computed (no data). */
  readonly low: number;
  readonly high: number;
  /** Observations behind the estimate (clusters for bootstrapped ones). */
  readonly n: number;
}

export const z95 = 1.959964;

export function mean(values: readonly number[]): number {
  return values.length === 0 ? Number.NaN : values.reduce((sum, v) => sum + v, 0) / values.length;
}

/** Wilson score interval of `successes` out of `n` (as a fraction 0..1). */
export function wilsonInterval(successes: number, n: number, z = z95): Estimate {
  if (n === 0) return { value: Number.NaN, low: Number.NaN, high: Number.NaN, n };
  const p = successes / n;
  const denominator = 1 + (z * z) / n;
  const centre = (p + (z * z) / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + (z * z) / (4 * n * n))) / denominator;
  return { value: p, low: Math.max(0, centre - half), high: Math.min(1, centre + half), n };
}

export interface BootstrapOptions {
  readonly resamples: number;
  readonly seed: number;
}

function resampler(seed: number): (count: number) => number {
  const generator = mersenne(seed);
  return (count) => uniformInt(generator, 0, count - 1);
}

/**
 * `statistic` over all clusters, with a 95 % percentile interval from resampling the clusters.
 * Resamples whose statistic is not finite (e.g. a mean over no values) are left out.
 */
export function bootstrap<T>(
  clusters: readonly T[],
  statistic: (sample: readonly T[]) => number,
  options: BootstrapOptions,
): Estimate {
  const value = statistic(clusters);
  if (clusters.length === 0 || !Number.isFinite(value))
    return { value, low: Number.NaN, high: Number.NaN, n: clusters.length };
  const pick = resampler(options.seed);
  const stats: number[] = [];
  const sample: T[] = new Array(clusters.length);
  for (let r = 0; r < options.resamples; r++) {
    for (let i = 0; i < clusters.length; i++) sample[i] = clusters[pick(clusters.length)]!;
    const s = statistic(sample);
    if (Number.isFinite(s)) stats.push(s);
  }
  stats.sort((a, b) => a - b);
  return { value, low: quantileSorted(stats, 0.025), high: quantileSorted(stats, 0.975), n: clusters.length };
}

/**
 * A statistic comparing two independent groups (e.g. the relative improvement 1 - a/b), each
 * resampled by its clusters.
 */
export function bootstrapComparison<T>(
  a: readonly T[],
  b: readonly T[],
  statistic: (sampleA: readonly T[], sampleB: readonly T[]) => number,
  options: BootstrapOptions,
): Estimate {
  const value = statistic(a, b);
  const n = Math.min(a.length, b.length);
  if (n === 0 || !Number.isFinite(value)) return { value, low: Number.NaN, high: Number.NaN, n };
  const pick = resampler(options.seed);
  const stats: number[] = [];
  const sampleA: T[] = new Array(a.length);
  const sampleB: T[] = new Array(b.length);
  for (let r = 0; r < options.resamples; r++) {
    for (let i = 0; i < a.length; i++) sampleA[i] = a[pick(a.length)]!;
    for (let i = 0; i < b.length; i++) sampleB[i] = b[pick(b.length)]!;
    const s = statistic(sampleA, sampleB);
    if (Number.isFinite(s)) stats.push(s);
  }
  stats.sort((x, y) => x - y);
  return { value, low: quantileSorted(stats, 0.025), high: quantileSorted(stats, 0.975), n };
}

/**
 * a - b for two estimates from independent samples (different runs), with a 95 % interval from their own intervals
 * by MOVER (Zou and Donner, "Construction of confidence limits about effect measures", 2008): each side's distance to
 * its bound, combined in quadrature. No interval when either has none.
 */
export function differenceOfIndependent(a: Estimate, b: Estimate): Estimate {
  const value = a.value - b.value;
  const n = Math.min(a.n, b.n);
  if ([a.value, a.low, a.high, b.value, b.low, b.high].some((v) => !Number.isFinite(v)))
    return { value, low: Number.NaN, high: Number.NaN, n };
  return {
    value,
    low: value - Math.hypot(a.value - a.low, b.high - b.value),
    high: value + Math.hypot(a.high - a.value, b.value - b.low),
    n,
  };
}

/** Two-sided 95 % quantiles of Student's t by degrees of freedom (1-10); z beyond. */
const t95 = [Number.NaN, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228];

/**
 * The mean of independent runs with its 95 % Student-t interval (for a few repeated benchmark
 * runs, where a bootstrap has too few values to resample). Fewer than two values: no interval.
 */
export function meanInterval(values: readonly number[]): Estimate {
  const finite = values.filter(Number.isFinite);
  const n = finite.length;
  const value = mean(finite);
  if (n < 2) return { value, low: Number.NaN, high: Number.NaN, n };
  const variance = finite.reduce((sum, v) => sum + (v - value) ** 2, 0) / (n - 1);
  const half = (t95[n - 1] ?? z95) * Math.sqrt(variance / n);
  return { value, low: value - half, high: value + half, n };
}

/** Whether two estimates' intervals overlap (the A/A check: identical groups should). */
export function intervalsOverlap(a: Estimate, b: Estimate): boolean {
  if ([a.low, a.high, b.low, b.high].some((v) => Number.isNaN(v)))
    return a.value === b.value || (Number.isNaN(a.value) && Number.isNaN(b.value));
  return a.low <= b.high && b.low <= a.high;
}

/** Points of an empirical CDF (value, fraction <= value), at most `maxPoints` (evenly spaced in rank). */
export function ecdfPoints(values: readonly number[], maxPoints = 200): { value: number; fraction: number }[] {
  const sorted = [...values].filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) return [];
  const step = Math.max(1, Math.ceil(sorted.length / maxPoints));
  const points: { value: number; fraction: number }[] = [];
  for (let i = step - 1; i < sorted.length; i += step)
    points.push({ value: sorted[i]!, fraction: (i + 1) / sorted.length });
  if (points[points.length - 1]!.fraction < 1) points.push({ value: sorted[sorted.length - 1]!, fraction: 1 });
  return points;
}

/** The number with `digits` decimals, "-" for no value (NaN, infinite). */
export function formatNumber(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '-';
}

/** "value [low, high]", "value" without an interval, "-" without a value. */
export function formatEstimate(e: Estimate, digits = 2): string {
  if (!Number.isFinite(e.value) || !Number.isFinite(e.low)) return formatNumber(e.value, digits);
  return `${e.value.toFixed(digits)} [${e.low.toFixed(digits)}, ${e.high.toFixed(digits)}]`;
}
