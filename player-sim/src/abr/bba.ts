/**
 * BBA-0 (Huang et al., SIGCOMM 2014): a rate map from buffer level to bitrate, R_min below the
 * reservoir, R_max above reservoir + cushion, linear between; the rendition changes only when the
 * map crosses a neighbouring rate. Reservoir = 25% and cushion = 60% of the maximum buffer (the
 * paper's 90 s and 126 s of a 240 s buffer, scaled), the reservoir at least two segments.
 */
import type { AbrContext, AbrDecision, AbrRule } from './abr-rule.js';

export function bbaRateMapBps(context: AbrContext): number {
  const rates = context.bitratesBps;
  const reservoir = Math.max(2 * context.segmentDurationSec, 0.25 * context.maxBufferSec);
  const cushion = 0.6 * context.maxBufferSec;
  const min = rates[0]!;
  const max = rates[rates.length - 1]!;
  if (context.bufferSec <= reservoir) return min;
  if (context.bufferSec >= reservoir + cushion) return max;
  return min + ((max - min) * (context.bufferSec - reservoir)) / cushion;
}

export function createBbaRule(): AbrRule {
  return {
    name: 'bba',
    choose(context: AbrContext): AbrDecision {
      const rates = context.bitratesBps;
      const f = bbaRateMapBps(context);
      const previous = context.lastIndex ?? 0;
      const up = Math.min(previous + 1, rates.length - 1);
      const down = Math.max(previous - 1, 0);
      let index = previous;
      if (f >= rates[up]! && up !== previous) {
        index = rates.reduce(
          (best, rate, i) => (rate < f || (rate === f && i === rates.length - 1) ? i : best),
          previous,
        );
      } else if (f <= rates[down]! && down !== previous) {
        index = rates.findIndex((rate) => rate > f);
        if (index < 0) index = rates.length - 1;
      }
      return { index, reason: `bba: buffer ${context.bufferSec.toFixed(1)} s maps to ${(f / 1e6).toFixed(2)} Mbit/s` };
    },
  };
}
