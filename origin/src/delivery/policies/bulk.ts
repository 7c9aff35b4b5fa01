/** bulk: as fast as TCP allows, no startup distinction (the paper's "no pacing" reference). */
import type { DeliveryPolicy, MediaResponse, PolicyDelivery } from './delivery-policy.js';

export function bulkPolicy(): DeliveryPolicy {
  return {
    name: 'bulk',
    paced: false,
    start(response: MediaResponse): PolicyDelivery {
      return {
        plan: { startupEndOffset: response.rangeEnd + 1, rateAt: (offset, size) => response.mediaPlan.rateAt(offset, size), reason: 'bulk: no throttling phase' },
        // Only the size of reads from disk (nothing is throttled): a 45 MB range must not become one 45 MB buffer.
        blockBytes: 1024 * 1024,
        readAheadBlocks: 0,
        limitsInSocket: false,
        headers: {},
        startThrottling: () => undefined,
        beforeBlock: () => 0,
        afterBlock: () => undefined,
        end: () => undefined,
        report: () => ({ backend: 'none', fallbackReason: undefined, paceRateBps: null, clampPackets: null, appliedClampPackets: null,
          cwndWhileClampedPackets: null, catchUps: 0, throttledWriteBlocks: 0, reason: 'bulk: sent as fast as TCP allows' }),
      };
    },
  };
}
