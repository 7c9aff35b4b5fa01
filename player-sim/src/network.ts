/**
 * The network of model mode: a bandwidth trace (looping, from a per-session offset) and a fixed
 * RTT. `transferMs` answers how long a response of N bytes takes from a request at time t, given
 * the server's rate cap and whether TCP starts from its initial window (slow start after idle).
 */
import { traceAt, type Trace } from './traces.js';

export interface TransferOptions {
  /** The server sends no faster than this (bits/s); undefined: no cap. */
  readonly capBps?: number | undefined;
  /** TCP starts from its initial window and doubles per RTT until it fills the path. */
  readonly slowStart?: boolean | undefined;
}

export const mssBytes = 1448;
export const initialWindowPackets = 10;

export class TraceNetwork {
  constructor(
    readonly trace: Trace,
    readonly rttMs: number,
    /** Where in the trace this session starts. */
    readonly offsetMs = 0,
  ) {}

  rateBpsAt(timeMs: number): number {
    return traceAt(this.trace, this.offsetMs + timeMs).rateBps;
  }

  /** Time until the trace's rate changes after `timeMs`. */
  private nextChangeMs(timeMs: number): number {
    const t = (((this.offsetMs + timeMs) % this.trace.durationMs) + this.trace.durationMs) % this.trace.durationMs;
    const next = this.trace.points.find((p) => p.atMs > t)?.atMs ?? this.trace.durationMs;
    return next - t;
  }

  /**
   * Duration of a request/response of `bytes` started at `startMs`: one RTT for the request and
   * first byte, then slow start (if asked), then the capped trace rate. Returns Infinity when the
   * trace can never deliver it within `limitMs`.
   */
  transferMs(startMs: number, bytes: number, options: TransferOptions = {}, limitMs = 3_600_000): number {
    let t = startMs + this.rttMs;
    let remaining = bytes;
    const cap = options.capBps ?? Number.POSITIVE_INFINITY;
    if (options.slowStart === true && this.rttMs > 0) {
      let windowBytes = initialWindowPackets * mssBytes;
      while (remaining > 0) {
        const pathBytesPerRtt = (Math.min(this.rateBpsAt(t), cap) / 8) * (this.rttMs / 1000);
        if (windowBytes >= pathBytesPerRtt) break;
        const sent = Math.min(windowBytes, remaining);
        remaining -= sent;
        // The last round ends when its bytes arrive, not a full RTT later.
        t += remaining > 0 ? this.rttMs : (sent / windowBytes) * this.rttMs;
        windowBytes *= 2;
      }
    }
    while (remaining > 0) {
      if (t - startMs > limitMs) return Number.POSITIVE_INFINITY;
      const rate = Math.min(this.rateBpsAt(t), cap);
      const spanMs = this.nextChangeMs(t);
      const deliverable = (rate / 8) * (spanMs / 1000);
      if (deliverable >= remaining) {
        t += (remaining / (rate / 8)) * 1000;
        remaining = 0;
      } else {
        remaining -= deliverable;
        t += spanMs;
      }
    }
    return t - startMs;
  }
}
