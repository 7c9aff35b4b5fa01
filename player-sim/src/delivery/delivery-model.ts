/**
 * DeliveryModel: what a server delivery policy does to one segment's transfer, in model mode.
 * This is the server's pacing in the loop, which no anchor simulator has.
 */
import type { TransferOptions } from '../network.js';

export interface DeliveryRequest {
  /** When the request is made (the simulated clock), ms. */
  readonly nowMs: number;
  /** The segment's number (the same at every rung). */
  readonly segmentNumber: number;
  /** Media time where the segment starts (the startup phase is measured in media seconds). */
  readonly mediaStartSec: number;
  readonly durationSec: number;
  /** The segment's own rate: its size over its duration, bits/s. */
  readonly segmentBitrateBps: number;
  /** The declared bitrates the player chooses among, ascending, and the requested rung's. */
  readonly ladderBps: readonly number[];
  readonly renditionBps: number;
  readonly bufferSec: number;
  readonly maxBufferSec: number;
  /** Whether the player sends CMCD (its buffer and startup state) with the request. */
  readonly cmcd: boolean;
  /** Playback has started and not stalled since (CMCD `su` is its negation). */
  readonly startedUp: boolean;
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
export function slowStartAfterIdle(request: Pick<DeliveryRequest, 'firstRequest' | 'idleMs' | 'rttMs'>): boolean {
  return request.firstRequest || request.idleMs > Math.max(200, 2 * request.rttMs);
}
