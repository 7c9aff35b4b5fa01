/**
 * dash.js "dynamic" approximation: the throughput rule while the buffer is low, BOLA once it has
 * grown (switch to BOLA at >= 12 s of buffer, back to throughput below 6 s: hysteresis, so one
 * dip does not flip the rule back and forth).
 */
import type { AbrContext, AbrDecision, AbrRule } from './abr-rule.js';
import { createBolaRule } from './bola.js';
import { createThroughputRule } from './throughput.js';

export const dynamicToBolaSec = 12;
export const dynamicToThroughputSec = 6;

export function createDynamicRule(): AbrRule {
  const throughput = createThroughputRule();
  const bola = createBolaRule();
  let useBola = false;
  return {
    name: 'dynamic',
    choose(context: AbrContext): AbrDecision {
      if (!useBola && context.bufferSec >= dynamicToBolaSec) useBola = true;
      else if (useBola && context.bufferSec < dynamicToThroughputSec) useBola = false;
      const decision = (useBola ? bola : throughput).choose(context);
      return { index: decision.index, reason: `dynamic (${useBola ? 'bola' : 'throughput'}): ${decision.reason}` };
    },
  };
}
