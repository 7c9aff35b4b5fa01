/**
 * `@trickle/origin/flow-records`: a flow record's shape and the readers of each enforcer's part, without the server
 * (a tool or test that only reads `/api/flows` or a run's records need not load fastify and the media stack).
 */
export {
  catchUpsOf,
  cwndClampOf,
  kernelPhaseOf,
  throttledWriteBlocksOf,
  type FlowRecord,
  type PhaseRecord,
  type ThrottlingRecord,
} from './delivery/flow-record.js';
export type { EnforcerRecord, KernelPhaseRecord } from './delivery/enforcers/enforcer.js';
