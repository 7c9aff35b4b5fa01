/** Public entry of @trickle/player-sim. */
export * from './traces.js';
export { loadContent, loopContent, type Content, type Rendition, type ContentSegment } from './content.js';
export { TraceNetwork, mssBytes, initialWindowPackets, type TransferOptions } from './network.js';
export {
  runSession,
  defaultSessionSettings,
  type Clock,
  type Fetcher,
  type FetchRequest,
  type SessionSettings,
  type SessionResult,
  type Rebuffer,
} from './session.js';
export { runModel, VirtualClock, ModelFetcher, type ModelRunOptions } from './model.js';
export {
  runLive,
  playLiveSession,
  HttpFetcher,
  realClock,
  cmcdQuery,
  type LiveRunOptions,
  type HttpFetcherOptions,
} from './live.js';
export {
  ProgressivePlayback,
  runProgressive,
  defaultProgressiveSettings,
  type ProgressiveMedia,
  type ProgressiveSettings,
  type ProgressiveRunOptions,
} from './progressive.js';
export { aggregate, type Aggregates } from './metrics.js';
export { percentile, quantileSorted, median, trimmedMean } from './statistics.js';
export { abrRules } from './abr/registry.js';
export {
  highestAtMost,
  type AbrRule,
  type AbrContext,
  type AbrDecision,
  type ThroughputSample,
} from './abr/abr-rule.js';
export {
  createThroughputRule,
  throughputEstimateBps,
  throughputFamilies,
  throughputSafetyFactor,
  withSafetyFactor,
  type ThroughputEstimatorOptions,
  type ThroughputRuleOptions,
} from './abr/throughput.js';
export { bolaParameters } from './abr/bola.js';
export { bbaRateMapBps } from './abr/bba.js';
export { dynamicToBolaSec, dynamicToThroughputSec } from './abr/dynamic.js';
export { deliveryModels } from './delivery/registry.js';
export { originPolicyModel } from './delivery/origin-policy.js';
export type { DeliveryModel, DeliveryRequest } from './delivery/delivery-model.js';
export { SimError, simErrorCodes, type SimErrorCode } from './errors.js';
