/**
 * Throughput rule (dash.js style): two exponentially weighted moving averages of download
 * throughput, weighted by download time, with half-lives of 3 s (fast) and 8 s (slow); the
 * estimate is the smaller, times a safety factor of 0.9. Reaction to a step down: the fast
 * average crosses below a rung within about one half-life of downloading time.
 */
import { highestAtMost, type AbrContext, type AbrDecision, type AbrRule } from './abr-rule.js';

export const throughputSafetyFactor = 0.9;
const fastHalfLifeSec = 3;
const slowHalfLifeSec = 8;

/** One EWMA step; the first sample seeds the average, so early estimates are not dragged towards 0. */
function ewmaStep(previous: number | undefined, bps: number, durationMs: number, halfLifeSec: number): number {
  const alpha = 0.5 ** (durationMs / 1000 / halfLifeSec);
  return previous === undefined ? bps : alpha * previous + (1 - alpha) * bps;
}

/** Keeps both averages up to date as samples arrive, so each decision costs O(new samples). */
class IncrementalEstimate {
  private seen = 0;
  private fast: number | undefined;
  private slow: number | undefined;

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
      this.fast = ewmaStep(this.fast, bps, sample.durationMs, fastHalfLifeSec);
      this.slow = ewmaStep(this.slow, bps, sample.durationMs, slowHalfLifeSec);
    }
    return this.fast === undefined || this.slow === undefined ? undefined : Math.min(this.fast, this.slow);
  }
}

/** The rule's estimate (min of the fast and slow averages) over a whole history. */
export function throughputEstimateBps(samples: AbrContext['throughput']): number | undefined {
  return new IncrementalEstimate().update(samples);
}

export function createThroughputRule(): AbrRule {
  const estimator = new IncrementalEstimate();
  return {
    name: 'throughput',
    choose(context: AbrContext): AbrDecision {
      const estimate = estimator.update(context.throughput);
      if (estimate === undefined)
        return { index: 0, reason: 'throughput: no download yet, start at the lowest rendition' };
      const index = highestAtMost(context.bitratesBps, estimate * throughputSafetyFactor);
      return {
        index,
        reason:
          `throughput: estimate ${(estimate / 1e6).toFixed(2)} Mbit/s ` +
          `x ${throughputSafetyFactor} -> ${(context.bitratesBps[index]! / 1e6).toFixed(2)} ` +
          `Mbit/s`,
      };
    },
  };
}
