/**
 * The origin's delivery rules without its server: the policy catalogue (rate rule x enforcer),
 * the delivery config's schema and defaults, the ABR-aware rate decision and the viewer runs it
 * reads. Public as `@trickle/origin/rules`, so that what models the origin (the player
 * simulator) uses the same rules and constants, not a copy. Fastify-free.
 */
export {
  policyCatalogue,
  policyNames,
  isPolicyName,
  rateRuleNames,
  enforcerNames,
  type PolicyName,
  type PolicyPair,
  type RateRuleName,
  type EnforcerName,
} from './delivery/catalogue.js';
export {
  deliverySchema,
  defaultDeliveryConfig,
  type DeliveryConfig,
  type AbGroupConfig,
} from './delivery/delivery-config.js';
export {
  abrDecision,
  bufferMultiplier,
  nextRungBps,
  type AbrDecision,
  type AbrInput,
  type AbrCmcd,
  type AbrRateOptions,
} from './delivery/rates/abr-rate.js';
export {
  sammyDecision,
  type SammyDecision,
  type SammyInput,
  type SammyRateOptions,
} from './delivery/rates/sammy-rate.js';
export { enforcers } from './delivery/enforcers/registry.js';
export type { Enforcer } from './delivery/enforcers/enforcer.js';
export {
  ViewerRuns,
  defaultViewerRunsOptions,
  type ViewerRunState,
  type ViewerRunsOptions,
  type RunSegment,
} from './delivery/viewer-runs.js';
export { segmentRateBytesPerSec } from './delivery/rate-plan.js';
export { parseAbSpec, AbAssigner, type AbGroup } from './delivery/ab.js';
