/**
 * app-pacing, trickle and pacing in model mode: full speed during the startup phase, then the
 * throughput is capped at headroom x the segment's own rate (below that, the link decides, which
 * is trickle's catch-up and app-pacing's token accumulation).
 */
import { defaultStartupSec, slowStartAfterIdle, type DeliveryModel, type DeliveryRequest } from './delivery-model.js';

export function cappedDelivery(name: string, headroom: number, startupSec = defaultStartupSec): DeliveryModel {
  return {
    name,
    transfer: (request: DeliveryRequest) => ({
      slowStart: slowStartAfterIdle(request),
      capBps: request.mediaStartSec < startupSec ? undefined : headroom * request.segmentBitrateBps,
    }),
  };
}
