/** One line per AbrRule. */
import type { AbrRule } from './abr-rule.js';
import { createBbaRule } from './bba.js';
import { createBolaRule } from './bola.js';
import { createDynamicRule } from './dynamic.js';
import { createThroughputRule } from './throughput.js';

export const abrRules: Readonly<Record<string, () => AbrRule>> = {
  throughput: createThroughputRule,
  bola: createBolaRule,
  bba: createBbaRule,
  dynamic: createDynamicRule,
};
