/**
 * DeliveryModel: what a server delivery policy does to one segment's transfer, in model mode.
 * This is the server's pacing in the loop, which no anchor simulator has.
 */
import type { TransferOptions } from '../network.js';

export interface DeliveryRequest {
  /** Media time where the segment starts (the startup phase is measured in media seconds). */
  readonly mediaStartSec: number;
  /** The segment's own rate: its size over its duration, bits/s. */
  readonly segmentBitrateBps: number;
  /** The next higher rendition's declared bitrate (the same one at the top), bits/s. */
  readonly nextRungBitrateBps: number;
  readonly bufferSec: number;
  readonly maxBufferSec: number;
  /** How long the connection sat idle before this request. */
  readonly idleMs: number;
  readonly rttMs: number;
  readonly firstRequest: boolean;
}

export interface DeliveryModel {
  readonly name: string;
  transfer(request: DeliveryRequest): TransferOptions;
}

/** Linux restarts slow start after an idle period longer than the RTO (>= 200 ms). */
export function slowStartAfterIdle(request: DeliveryRequest): boolean {
  return request.firstRequest || request.idleMs > Math.max(200, 2 * request.rttMs);
}

/** The paper's startup phase: the first 30-40 s of media are sent at full speed. */
export const defaultStartupSec = 35;
