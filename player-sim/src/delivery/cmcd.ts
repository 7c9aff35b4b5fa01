/**
 * cmcd in model mode, the origin's rule: full speed at startup (media < startupSec, or a buffer
 * below lowBufferSec); otherwise multiplier x the next higher rung's bitrate, the multiplier
 * falling linearly from 3 at an empty buffer to 1.5 at a full one (the Sammy result).
 */
import { defaultStartupSec, slowStartAfterIdle, type DeliveryModel, type DeliveryRequest } from './delivery-model.js';

export function cmcdMultiplier(bufferSec: number, maxBufferSec: number, empty = 3, full = 1.5): number {
  const fill = maxBufferSec > 0 ? Math.min(1, Math.max(0, bufferSec / maxBufferSec)) : 1;
  return empty + (full - empty) * fill;
}

export function cmcdDelivery(startupSec = defaultStartupSec, lowBufferSec = 5): DeliveryModel {
  return {
    name: 'cmcd',
    transfer: (request: DeliveryRequest) => ({
      slowStart: slowStartAfterIdle(request),
      capBps:
        request.mediaStartSec < startupSec || request.bufferSec < lowBufferSec
          ? undefined
          : cmcdMultiplier(request.bufferSec, request.maxBufferSec) * request.nextRungBitrateBps,
    }),
  };
}
