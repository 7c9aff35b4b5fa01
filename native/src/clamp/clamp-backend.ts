/**
 * ClampBackend: how a policy caps a socket's sending window at a rate. `bpf` is the real cwnd
 * clamp (a sock_ops program recomputing max(floor, gain * rate * srtt / mss) on every RTT
 * sample); `pacing-rate` approximates it with SO_MAX_PACING_RATE; `none` does nothing. Callers
 * read `backend` to learn which backend actually applies, and `fallbackReason` for why.
 */
import type { SocketLike } from '../socket.js';

export type ClampBackendName = 'bpf' | 'pacing-rate' | 'none';

export interface ClampRate {
  /** The media rate R, in bytes per second. */
  readonly rateBytesPerSec: number;
  /** Headroom over R (the paper used 1.2; 1.05 worked too). Default 1.2. */
  readonly gain?: number;
  /** The clamp never goes below this many packets (fast recovery needs a few). Default 10. */
  readonly minPackets?: number;
}

export interface ReleaseOptions {
  /**
   * `gradual` (default) doubles the clamp at most once per RTT while cwnd presses against it;
   * `immediate` lifts it in one step, which also lifts ssthresh and restarts slow start.
   */
  readonly mode?: 'gradual' | 'immediate';
}

/** What the backend knows about one socket. */
export interface ClampSocketState {
  readonly backend: ClampBackendName;
  /** bpf: the clamp the kernel applied last (packets); undefined before the first RTT sample. */
  readonly appliedPackets?: number | undefined;
  /** bpf: how many times the kernel changed the clamp. */
  readonly updates?: number;
  /** pacing-rate: the SO_MAX_PACING_RATE set, bytes per second (null: unlimited). */
  readonly pacingRateBytesPerSec?: number | null;
  /** bpf: the initial window asked for, and what became of it. */
  readonly initialWindow?: InitialWindowState;
}

export interface InitialWindowState {
  readonly packets: number;
  /** pending: no data segment built since it was asked for; failed: bpf_setsockopt refused (errno). */
  readonly status: 'pending' | 'applied' | 'failed';
  readonly errno?: number;
}

export interface ClampStats {
  readonly backend: ClampBackendName;
  /** Sockets with an entry in the clamp map (bpf) or with a pacing rate set (pacing-rate). */
  readonly entries: number;
  /** Clamp changes applied (by the kernel for bpf, by setsockopt for pacing-rate). */
  readonly updatesApplied: number;
  readonly rttSamples?: number;
  readonly closedRemoved?: number;
  readonly errors: number;
}

export interface ClampBackend {
  readonly backend: ClampBackendName;
  /** Why a stronger backend was not used; undefined when nothing was given up. */
  readonly fallbackReason: string | undefined;
  setRate(socket: SocketLike, target: ClampRate): void;
  setPackets(socket: SocketLike, packets: number): void;
  release(socket: SocketLike, options?: ReleaseOptions): void;
  /**
   * The connection's initial congestion window (TCP_BPF_IW), set by the sock_ops program as the
   * first data segment is built, so it must be asked for before any response data is written.
   * Accepted (server-side) connections only: the program watches only those for their first segment.
   * Only the bpf backend can: the others throw NATIVE_ERR_UNSUPPORTED.
   */
  setInitialWindow(socket: SocketLike, packets: number): void;
  /**
   * Forget a socket entirely (its clamp stays as last applied until the socket closes). Safe on a
   * socket that has closed, and how the backend's own state for it is dropped then.
   */
  forget(socket: SocketLike): void;
  state(socket: SocketLike): ClampSocketState | undefined;
  stats(): ClampStats;
  /** Releases the backend's own resources (map fds, links). */
  close(): void;
}

export const defaultGain = 1.2;
export const defaultMinPackets = 10;

export function checkClampRate(target: ClampRate): Required<ClampRate> {
  const gain = target.gain ?? defaultGain;
  const minPackets = target.minPackets ?? defaultMinPackets;
  if (typeof target.rateBytesPerSec !== 'number' || !Number.isFinite(target.rateBytesPerSec) || target.rateBytesPerSec <= 0) {
    throw Object.assign(new RangeError(`rateBytesPerSec must be a positive finite number (got ${target.rateBytesPerSec})`), { code: 'NATIVE_ERR_ARGUMENT' });
  }
  if (!Number.isFinite(gain) || gain <= 0 || gain > 100) throw Object.assign(new RangeError(`gain must be in (0, 100] (got ${gain})`), { code: 'NATIVE_ERR_ARGUMENT' });
  if (!Number.isInteger(minPackets) || minPackets < 1 || minPackets > 1_000_000) {
    throw Object.assign(new RangeError(`minPackets must be an integer from 1 (got ${minPackets})`), { code: 'NATIVE_ERR_ARGUMENT' });
  }
  return { rateBytesPerSec: target.rateBytesPerSec, gain, minPackets };
}

export function checkPackets(packets: number): number {
  if (!Number.isInteger(packets) || packets < 1 || packets > 0x7fffffff) {
    throw Object.assign(new RangeError(`packets must be a positive integer (got ${packets})`), { code: 'NATIVE_ERR_ARGUMENT' });
  }
  return packets;
}
