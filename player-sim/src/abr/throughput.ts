/**
 * Throughput rules, one implementation for the families players ship: an estimate of download
 * throughput (two exponentially weighted moving averages, the smaller taken, or a sliding weighted
 * percentile), times a factor for switching up and one for staying or going down, with optional
 * buffer guards. The families' parameters are their players' documented defaults (quoted, not
 * measured here); each rule follows the family's estimator and margins, not every detail of the
 * player (hls.js's fetch-time check and Shaka's switch interval are left out):
 * - dash.js: EWMA half-lives 3 s and 8 s weighted by download time, x 0.9 both ways.
 * - hls.js: EWMA 3 s and 9 s (VoD), x 0.7 to go up (abrBandWidthUpFactor), x 0.95 otherwise.
 * - Shaka: EWMA 2 s and 5 s, x 0.85 to go up (bandwidthUpgradeTarget), x 0.95 down.
 * - ExoPlayer: the weighted median of recent samples (weight sqrt(bytes), 2,000 of weight kept),
 *   x 0.7 (bandwidthFraction); no switch up below 10 s of buffer, no switch down from 25 s.
 * Reaction to a step down (dash.js): the fast average crosses below a rung within about one
 * half-life of downloading time.
 */
import { highestAtMost, type AbrContext, type AbrDecision, type AbrRule } from './abr-rule.js';

export type ThroughputEstimatorOptions =
  | { readonly kind: 'ewma'; readonly fastHalfLifeSec: number; readonly slowHalfLifeSec: number }
  | { readonly kind: 'sliding-percentile'; readonly percentile: number; readonly maxWeight: number };

export interface ThroughputRuleOptions {
  /** The family, as reasons and tables name it. */
  readonly family: string;
  readonly estimator: ThroughputEstimatorOptions;
  /** The share of the estimate a rung above the last one may take. */
  readonly upFactor: number;
  /** The share of the estimate the last rung, or one below it, may take. */
  readonly downFactor: number;
  /** No switch up with less buffer than this, s. */
  readonly minBufferForUpSec?: number;
  /** No switch down with at least this much buffer, s. */
  readonly maxBufferForDownSec?: number;
}

export const throughputFamilies = {
  'dash.js': {
    family: 'dash.js',
    estimator: { kind: 'ewma', fastHalfLifeSec: 3, slowHalfLifeSec: 8 },
    upFactor: 0.9,
    downFactor: 0.9,
  },
  'hls.js': {
    family: 'hls.js',
    estimator: { kind: 'ewma', fastHalfLifeSec: 3, slowHalfLifeSec: 9 },
    upFactor: 0.7,
    downFactor: 0.95,
  },
  shaka: {
    family: 'shaka',
    estimator: { kind: 'ewma', fastHalfLifeSec: 2, slowHalfLifeSec: 5 },
    upFactor: 0.85,
    downFactor: 0.95,
  },
  exoplayer: {
    family: 'exoplayer',
    estimator: { kind: 'sliding-percentile', percentile: 0.5, maxWeight: 2000 },
    upFactor: 0.7,
    downFactor: 0.7,
    minBufferForUpSec: 10,
    maxBufferForDownSec: 25,
  },
} as const satisfies Readonly<Record<string, ThroughputRuleOptions>>;

/** dash.js's factor, the `throughput` rule's. */
export const throughputSafetyFactor = throughputFamilies['dash.js'].upFactor;

/** A family with one safety factor for both ways (the sweep's axis). */
export function withSafetyFactor(options: ThroughputRuleOptions, safetyFactor: number): ThroughputRuleOptions {
  return {
    ...options,
    family: `${options.family} x ${safetyFactor}`,
    upFactor: safetyFactor,
    downFactor: safetyFactor,
  };
}

/** One EWMA step; the first sample seeds the average, so early estimates are not dragged towards 0. */
function ewmaStep(previous: number | undefined, bps: number, durationMs: number, halfLifeSec: number): number {
  const alpha = 0.5 ** (durationMs / 1000 / halfLifeSec);
  return previous === undefined ? bps : alpha * previous + (1 - alpha) * bps;
}

/** An estimate kept up to date as samples arrive, so each decision costs O(new samples). */
interface Estimator {
  update(samples: AbrContext['throughput']): number | undefined;
}

class EwmaEstimator implements Estimator {
  private seen = 0;
  private fast: number | undefined;
  private slow: number | undefined;

  constructor(private readonly options: Extract<ThroughputEstimatorOptions, { kind: 'ewma' }>) {}

  update(samples: AbrContext['throughput']): number | undefined {
    // A shorter history than seen means a new session: start over.
    if (samples.length < this.seen) {
      this.seen = 0;
      this.fast = undefined;
      this.slow = undefined;
    }
    for (; this.seen < samples.length; this.seen++) {
      const sample = samples[this.seen]!;
      if (sample.durationMs <= 0) continue;
      const bps = (sample.bytes * 8 * 1000) / sample.durationMs;
      this.fast = ewmaStep(this.fast, bps, sample.durationMs, this.options.fastHalfLifeSec);
      this.slow = ewmaStep(this.slow, bps, sample.durationMs, this.options.slowHalfLifeSec);
    }
    return this.fast === undefined || this.slow === undefined ? undefined : Math.min(this.fast, this.slow);
  }
}

/** The weighted percentile of the latest samples, weight sqrt(bytes), the oldest dropped past `maxWeight`. */
class SlidingPercentileEstimator implements Estimator {
  private seen = 0;
  private window: { bps: number; weight: number }[] = [];

  constructor(private readonly options: Extract<ThroughputEstimatorOptions, { kind: 'sliding-percentile' }>) {}

  update(samples: AbrContext['throughput']): number | undefined {
    if (samples.length < this.seen) {
      this.seen = 0;
      this.window = [];
    }
    for (; this.seen < samples.length; this.seen++) {
      const sample = samples[this.seen]!;
      if (sample.durationMs <= 0) continue;
      this.window.push({ bps: (sample.bytes * 8 * 1000) / sample.durationMs, weight: Math.sqrt(sample.bytes) });
      let total = this.window.reduce((sum, entry) => sum + entry.weight, 0);
      while (total > this.options.maxWeight && this.window.length > 1) total -= this.window.shift()!.weight;
    }
    if (this.window.length === 0) return undefined;
    const sorted = [...this.window].sort((a, b) => a.bps - b.bps);
    const target = this.options.percentile * sorted.reduce((sum, entry) => sum + entry.weight, 0);
    let below = 0;
    for (const entry of sorted) {
      below += entry.weight;
      if (below >= target) return entry.bps;
    }
    return sorted.at(-1)!.bps;
  }
}

function createEstimator(options: ThroughputEstimatorOptions): Estimator {
  return options.kind === 'ewma' ? new EwmaEstimator(options) : new SlidingPercentileEstimator(options);
}

/** dash.js's estimate (min of the 3 s and 8 s averages) over a whole history. */
export function throughputEstimateBps(samples: AbrContext['throughput']): number | undefined {
  return createEstimator(throughputFamilies['dash.js'].estimator).update(samples);
}

export function createThroughputRule(options: ThroughputRuleOptions = throughputFamilies['dash.js']): AbrRule {
  const estimator = createEstimator(options.estimator);
  return {
    name: options.family === 'dash.js' ? 'throughput' : `throughput (${options.family})`,
    choose(context: AbrContext): AbrDecision {
      const estimate = estimator.update(context.throughput);
      if (estimate === undefined)
        return { index: 0, reason: `throughput (${options.family}): no download yet, start at the lowest rendition` };
      const last = context.lastIndex ?? 0;
      const up = highestAtMost(context.bitratesBps, estimate * options.upFactor);
      const down = highestAtMost(context.bitratesBps, estimate * options.downFactor);
      // A rung above the last one must fit the up factor; otherwise the last one stays while it fits the down factor.
      let index = up > last ? up : Math.min(down, last);
      let guard = '';
      if (index > last && context.bufferSec < (options.minBufferForUpSec ?? 0)) {
        index = last;
        guard = `, kept: ${context.bufferSec.toFixed(1)} s of buffer is under ${options.minBufferForUpSec} s to go up`;
      } else if (index < last && context.bufferSec >= (options.maxBufferForDownSec ?? Number.POSITIVE_INFINITY)) {
        index = last;
        guard = `, kept: ${context.bufferSec.toFixed(1)} s of buffer is over ${options.maxBufferForDownSec} s to go down`;
      }
      return {
        index,
        reason:
          `throughput (${options.family}): estimate ${(estimate / 1e6).toFixed(2)} Mbit/s, ` +
          `x ${options.upFactor} up / x ${options.downFactor} down -> ` +
          `${(context.bitratesBps[index]! / 1e6).toFixed(2)} Mbit/s${guard}`,
      };
    },
  };
}
