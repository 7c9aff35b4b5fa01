/** One line per AbrRule (the throughput families are one rule with their players' parameters). */
import type { AbrRule } from './abr-rule.js';
import { createBbaRule } from './bba.js';
import { createBolaRule } from './bola.js';
import { createDynamicRule } from './dynamic.js';
import { createThroughputRule, throughputFamilies } from './throughput.js';

export const abrRules: Readonly<Record<string, () => AbrRule>> = {
  throughput: createThroughputRule,
  'throughput-hlsjs': () => createThroughputRule(throughputFamilies['hls.js']),
  'throughput-shaka': () => createThroughputRule(throughputFamilies.shaka),
  'throughput-exoplayer': () => createThroughputRule(throughputFamilies.exoplayer),
  bola: createBolaRule,
  bba: createBbaRule,
  dynamic: createDynamicRule,
};
