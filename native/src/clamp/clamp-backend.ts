/**
 * ClampBackend: how a policy caps a socket's sending window at a rate. `bpf` is the real cwnd
 * clamp (a sock_ops program recomputing max(floor, gain * rate * srtt / mss) on every RTT
 * sample); `pacing-rate` approximates it with SO_MAX_PACING_RATE; `none` does nothing. Callers
 * read `backend` to learn which backend actually applies, and `fallbackReason` for why.
 */
import type { SocketLike } from '../socket.js';

export type ClampBackendName = 'bpf' | 'pacing-rate' | 'none';

/**
 * The RTT a clamp is computed from: `srtt` (the paper's), or `min-rtt`, the path's minimum (the
 * kernel's windowed min_rtt). srtt grows with the queue the clamp lets build, so on a deep buffer a
 * clamp from srtt grows with its own queue; one from the minimum keeps what is in flight near
 * gain x R x the path's base RTT.
 */
export type ClampRtt = 'srtt' | 'min-rtt';

export interface ClampRate {
  /** The media rate R, in bytes per second. */
  readonly rateBytesPerSec: number;
  /** Headroom over R (the paper used 1.2; 1.05 worked too). Default 1.2. */
  readonly gain?: number;
  /** The clamp never goes below this many packets (fast recovery needs a few). Default 10. */
  readonly minPackets?: number;
  /** Default `srtt`. */
  readonly clampRtt?: ClampRtt;
}

export interface ReleaseOptions {
  /**
   * `gradual` (default) doubles the clamp at most once per RTT while cwnd presses against it;
   * `immediate` lifts it in one step, which also lifts ssthresh and restarts slow start.
   */
  readonly mode?: 'gradual' | 'immediate';
}

/** Pieces a kernel schedule holds at most (TRICKLE_SCHEDULE_PIECES in bpf/cwnd_clamp.h). */
export const schedulePieces = 64;

/** One piece of a throttling phase's schedule: the response's bytes up to `endOffsetBytes` at R. */
export interface SchedulePiece {
  /** Where the piece ends (exclusive), in the response's own bytes (its first byte on the wire is 0). */
  readonly endOffsetBytes: number;
  readonly rateBytesPerSec: number;
}

/**
 * One response's whole throttling phase, handed to the kernel at once: the program runs Algorithm 1
 * itself (clamp from R of the bytes being sent and the live srtt, catch-up while the phase is behind
 * its schedule, pacing at R at the floor), or with `limit: 'pacing'` kernel pacing on the same
 * schedule (SO_MAX_PACING_RATE at gain x R, no clamp). Offsets are the response's own, from its
 * first byte on the wire.
 */
export interface ClampSchedule {
  /**
   * Bytes the connection carried before this response (what the kernel's bytes_acked reads when all of them are
   * acknowledged).
   */
  readonly baseBytes: number;
  /** Where the throttling phase begins: bytes before it go at full speed. */
  readonly throttleOffsetBytes: number;
  /** 1 to `schedulePieces` pieces, in order, the first starting at `throttleOffsetBytes`. */
  readonly pieces: readonly SchedulePiece[];
  /** The phase is not judged behind its schedule before this long, microseconds. */
  readonly graceUs: number;
  readonly gain?: number;
  readonly minPackets?: number;
  /** What holds the phase to its schedule: the cwnd clamp (Algorithm 1, the default) or the pacer alone. */
  readonly limit?: 'clamp' | 'pacing';
  /** The RTT the clamp is computed from (default `srtt`). */
  readonly clampRtt?: ClampRtt;
}

/** What the program did to a scheduled response so far. */
export interface ScheduleState {
  readonly state: 'startup' | 'clamped' | 'floor' | 'catching-up' | 'done' | 'paced';
  readonly catchUps: number;
  /**
   * When the phase began (CLOCK_MONOTONIC, as process.hrtime, ms; 0: not yet), with bytes_acked, retransmissions, data
   * segments and srtt then.
   */
  readonly phaseStartMonotonicMs: number;
  readonly phaseStartAckedBytes: number;
  readonly phaseStartRetransmits: number;
  readonly phaseStartSegmentsOut: number;
  readonly phaseStartSrttUs: number;
  readonly floorMs: number;
  readonly catchingUpMs: number;
  /** The clamps applied on RTT samples in the phase (outside catch-up), packets; null before any. */
  readonly clampPackets: {
    readonly min: number;
    readonly mean: number;
    readonly max: number;
    readonly samples: number;
  } | null;
  /** cwnd on the same samples, packets. */
  readonly cwndPackets: { readonly min: number; readonly mean: number; readonly max: number } | null;
  /** The furthest the phase fell behind its schedule, ms. */
  readonly maxLagMs: number;
  /**
   * When the packet carrying the phase's first byte held the phase at gain x R (CLOCK_MONOTONIC ms; 0: not seen, e.g.
   * no startup).
   */
  readonly heldMonotonicMs: number;
}

/**
 * A scheduled response whose socket closed under the program (the client left mid-response): what
 * the program did, and the connection's counters at the close (TCP_INFO's are gone with the socket).
 */
export interface ClosedPhase {
  readonly schedule: ScheduleState;
  /** CLOCK_MONOTONIC ms, as process.hrtime. */
  readonly closedMonotonicMs: number;
  /** The connection's bytes acknowledged, retransmitted segments, data segments sent and srtt at the close. */
  readonly bytesAcked: number;
  readonly totalRetransmits: number;
  readonly dataSegmentsOut: number;
  readonly srttUs: number;
}

/** What the backend knows about one socket. */
export interface ClampSocketState {
  readonly backend: ClampBackendName;
  /** bpf: the clamp the kernel applied last (packets); undefined before the first RTT sample. */
  readonly appliedPackets?: number | undefined;
  /** bpf: the RTT (us; srtt or the path's minimum, as `clampRtt` says) and MSS (bytes) the kernel computed that clamp at. */
  readonly appliedAt?: { readonly rttUs: number; readonly clampRtt: ClampRtt; readonly mssBytes: number } | undefined;
  /** bpf: how many times the kernel changed the clamp. */
  readonly updates?: number;
  /**
   * bpf: the ssthresh the congestion control last set below the clamp, its answer to a loss (packets; undefined before
   * one): from then on the clamp moves only where the window meets it, so it never restarts slow start.
   */
  readonly lossSsthreshPackets?: number | undefined;
  /**
   * pacing-rate: the SO_MAX_PACING_RATE set, bytes per second (null: unlimited). bpf: the one the program last set (null:
   * none; undefined: none since user space wrote the socket's target, which may have changed the option).
   */
  readonly pacingRateBytesPerSec?: number | null;
  /** bpf: the initial window asked for, and what became of it. */
  readonly initialWindow?: InitialWindowState;
  /** bpf: the response schedule the program is running, if any. */
  readonly schedule?: ScheduleState;
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
  /** bpf: phases of responses whose socket closed under the program, kept and not taken yet. */
  readonly closedPhasesKept?: number;
  /** bpf: schedules' catch-ups, and pacing-rate changes the program made at the floor. */
  readonly catchUps?: number;
  readonly pacingUpdates?: number;
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
   * Hands a response's throttling phase to the kernel. Only the bpf backend can: the others throw
   * NATIVE_ERR_UNSUPPORTED.
   */
  setSchedule(socket: SocketLike, schedule: ClampSchedule): void;
  /**
   * Forget a socket entirely (its clamp stays as last applied until the socket closes). Safe on a
   * socket that has closed, and how the backend's own state for it is dropped then.
   */
  forget(socket: SocketLike): void;
  state(socket: SocketLike): ClampSocketState | undefined;
  /**
   * What the program kept of a scheduled response whose socket closed under it (read once, also
   * after the socket closed; undefined: none, or a backend without schedules).
   */
  takeClosedPhase(socket: SocketLike): ClosedPhase | undefined;
  stats(): ClampStats;
  /** Releases the backend's own resources (map fds, links). */
  close(): void;
}

export const defaultGain = 1.2;
export const defaultMinPackets = 10;

export function checkClampRate(target: ClampRate): Required<ClampRate> {
  const gain = target.gain ?? defaultGain;
  const minPackets = target.minPackets ?? defaultMinPackets;
  const clampRtt = target.clampRtt ?? 'srtt';
  if (clampRtt !== 'srtt' && clampRtt !== 'min-rtt')
    throw Object.assign(new RangeError(`clampRtt must be srtt or min-rtt (got ${String(clampRtt)})`), {
      code: 'NATIVE_ERR_ARGUMENT',
    });
  if (
    typeof target.rateBytesPerSec !== 'number' ||
    !Number.isFinite(target.rateBytesPerSec) ||
    target.rateBytesPerSec <= 0
  ) {
    throw Object.assign(
      new RangeError(`rateBytesPerSec must be a positive finite number (got ${target.rateBytesPerSec})`),
      { code: 'NATIVE_ERR_ARGUMENT' },
    );
  }
  if (!Number.isFinite(gain) || gain <= 0 || gain > 100)
    throw Object.assign(new RangeError(`gain must be in (0, 100] (got ${gain})`), { code: 'NATIVE_ERR_ARGUMENT' });
  if (!Number.isInteger(minPackets) || minPackets < 1 || minPackets > 1_000_000) {
    throw Object.assign(new RangeError(`minPackets must be an integer from 1 (got ${minPackets})`), {
      code: 'NATIVE_ERR_ARGUMENT',
    });
  }
  return { rateBytesPerSec: target.rateBytesPerSec, gain, minPackets, clampRtt };
}

export function checkPackets(packets: number): number {
  if (!Number.isInteger(packets) || packets < 1 || packets > 0x7fffffff) {
    throw Object.assign(new RangeError(`packets must be a positive integer (got ${packets})`), {
      code: 'NATIVE_ERR_ARGUMENT',
    });
  }
  return packets;
}

/**
 * (end, rate, due) triples for the program, with the due times summed here once; throws NATIVE_ERR_ARGUMENT on a
 * malformed schedule.
 */
export function scheduleTriples(schedule: ClampSchedule): Uint32Array {
  const { pieces, throttleOffsetBytes } = schedule;
  const argument = (message: string) => Object.assign(new RangeError(message), { code: 'NATIVE_ERR_ARGUMENT' });
  if (pieces.length === 0 || pieces.length > schedulePieces)
    throw argument(`a schedule has 1 to ${schedulePieces} pieces (got ${pieces.length})`);
  if (!Number.isSafeInteger(schedule.baseBytes) || schedule.baseBytes < 0)
    throw argument(`baseBytes must be a byte count (got ${schedule.baseBytes})`);
  if (!Number.isInteger(schedule.graceUs) || schedule.graceUs < 0 || schedule.graceUs > 0xffffffff)
    throw argument(`graceUs must be an integer of microseconds (got ${schedule.graceUs})`);
  const triples = new Uint32Array(pieces.length * 3);
  let start = throttleOffsetBytes;
  let dueUs = 0;
  pieces.forEach((piece, i) => {
    const { endOffsetBytes: end, rateBytesPerSec: rate } = piece;
    if (!Number.isInteger(end) || end <= start || end > 0xffffffff)
      throw argument(`piece ${i} must end after ${start} and within 4 GiB (got ${end})`);
    if (!Number.isFinite(rate) || rate < 1 || rate > 0xffffffff)
      throw argument(`piece ${i}: rateBytesPerSec must be 1 to 2^32-1 (got ${rate})`);
    dueUs += ((end - start) * 1e6) / rate;
    triples[3 * i] = end;
    triples[3 * i + 1] = Math.round(rate);
    triples[3 * i + 2] = Math.min(0xffffffff, Math.round(dueUs));
    start = end;
  });
  return triples;
}
