/**
 * Throughput rule (dash.js style): two exponentially weighted moving averages of download
 * throughput, weighted by download time, with half-lives of 3 s (fast) and 8 s (slow); the
 * estimate is the smaller, times a safety factor of 0.9. Reaction to a step down: the fast
 * average crosses below a rung within about one half-life of downloading time.
 */
import { highestAtMost, type AbrContext, type AbrDecision, type AbrRule } from './abr-rule.js';

export function ewmaThroughputBps(samples: AbrContext['throughput'], halfLifeSec: number): number | undefined {
  // Seeded with the first sample rather than 0, so early estimates are not dragged towards 0.
  let estimate: number | undefined;
  for (const sample of samples) {
    if (sample.durationMs <= 0) continue;
    const bps = (sample.bytes * 8 * 1000) / sample.durationMs;
    const alpha = Math.pow(0.5, sample.durationMs / 1000 / halfLifeSec);
    estimate = estimate === undefined ? bps : alpha * estimate + (1 - alpha) * bps;
  }
  return estimate;
}

export function throughputEstimateBps(samples: AbrContext['throughput']): number | undefined {
  const fast = ewmaThroughputBps(samples, 3);
  const slow = ewmaThroughputBps(samples, 8);
  return fast === undefined || slow === undefined ? undefined : Math.min(fast, slow);
}

export const throughputSafetyFactor = 0.9;

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
      const fastAlpha = Math.pow(0.5, sample.durationMs / 1000 / 3);
      const slowAlpha = Math.pow(0.5, sample.durationMs / 1000 / 8);
      this.fast = this.fast === undefined ? bps : fastAlpha * this.fast + (1 - fastAlpha) * bps;
      this.slow = this.slow === undefined ? bps : slowAlpha * this.slow + (1 - slowAlpha) * bps;
    }
    return this.fast === undefined || this.slow === undefined ? undefined : Math.min(this.fast, this.slow);
  }
}

export function createThroughputRule(): AbrRule {
  const estimator = new IncrementalEstimate();
  return {
    name: 'throughput',
    choose(context: AbrContext): AbrDecision {
      const estimate = estimator.update(context.throughput);
      if (estimate === undefined) return { index: 0, reason: 'throughput: no download yet, start at the lowest rendition' };
      const index = highestAtMost(context.bitratesBps, estimate * throughputSafetyFactor);
      return { index, reason: `throughput: estimate ${(estimate / 1e6).toFixed(2)} Mbit/s x ${throughputSafetyFactor} -> ${(context.bitratesBps[index]! / 1e6).toFixed(2)} Mbit/s` };
    },
  };
}
