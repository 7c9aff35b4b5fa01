/** none: nothing is enforced, bytes go as fast as TCP allows (bulk). */
import type { Enforcement, Enforcer, EnforcerReport } from './enforcer.js';

/** Only the size of reads from disk (nothing is throttled): a 45 MB range must not become one 45 MB buffer. */
const readBlockBytes = 1024 * 1024;

const report: EnforcerReport = Object.freeze({
  backend: 'none',
  paceRateBps: null,
  reason: 'sent as fast as TCP allows',
  enforcer: Object.freeze({ kind: 'none' }),
});

/** Stateless, so one for every response: an unpaced response allocates nothing here. */
const enforcement: Enforcement = Object.freeze({
  blockBytes: readBlockBytes,
  readAheadBlocks: 0,
  limitsInSocket: false,
  detail: undefined,
  startThrottling: () => undefined,
  beforeBlock: () => 0,
  afterBlock: () => undefined,
  end: () => undefined,
  report: () => report,
});

export const noneEnforcer: Enforcer = {
  name: 'none',
  paced: false,
  usesClamp: false,
  headroom: 1,
  start: () => enforcement,
};
