/**
 * Enforcer: how a response's target rate R is enforced on its socket, block by block in the
 * throttling phase. One half of a delivery policy (the other is the RateRule: what R is). An
 * enforcer never reads the socket itself: the response's flow meter pushes what it saw (TCP_INFO
 * and how the phase is doing against its schedule) into `beforeBlock`. It reaches the socket only
 * through the SocketControl port, and never throws on the request path for a socket option: a
 * failure goes to `port.socketError` (logged once, counted) and the response carries on.
 */
import type { ClampBackendName, SchedulePiece, SocketControl, SocketLike, TcpInfo } from '@trickle/native';
import type { TcpSnapshot } from '../connection.js';
import type { Summary } from '../running-stats.js';

export interface Block {
  /** Absolute offset of the block's first byte in the file. */
  readonly offset: number;
  readonly sizeBytes: number;
  /** Target rate R of the block's bytes, bytes/s. */
  readonly rateBytesPerSec: number;
  readonly nowMs: number;
}

/** The phase's goodput against its schedule (the bytes the kernel took over the time they should have taken at R). */
export interface ScheduleProgress {
  readonly goodputBytesPerSec: number;
  /** Undefined when the kernel has taken nothing of the phase yet (goodput is then compared with the block's R). */
  readonly targetBytesPerSec: number | undefined;
}

/** The throttling phase's schedule so far. */
export interface Schedule {
  /** When the phase began (the blocks' clock), ms. */
  readonly startMs: number;
  /**
   * The seconds the bytes handed to the kernel in the phase (under a limit in the socket, the startup bytes still
   * unsent when it began, then its blocks) should take at their R.
   */
  readonly handedSec: number;
}

/** What the flow meter saw just before a throttled block. */
export interface Observation {
  readonly reading: TcpInfo | undefined;
  /**
   * Goodput against the schedule: undefined until enough of the phase has passed to judge (a few
   * RTTs), and while nothing waits in the socket (a shortfall then is the sender's own, not the path's).
   */
  readonly progress: ScheduleProgress | undefined;
  readonly schedule: Schedule;
}

/**
 * Startup bytes still unsent in the socket when throttling begins, and R of those bytes. Under a
 * limit in the socket they leave at the throttled pace, so they are the phase's first bytes.
 */
export interface UnsentStartup {
  readonly sizeBytes: number;
  readonly rateBytesPerSec: number;
}

export interface ThrottlingStart {
  readonly nowMs: number;
  readonly reading: TcpInfo | undefined;
  readonly unsent: UnsentStartup;
}

export interface SocketPort {
  readonly socket: SocketLike;
  readonly control: SocketControl;
  socketError(operation: string, error: unknown): void;
}

/**
 * The phase in the kernel: whether it began and was held by the packet carrying its first byte (else on an RTT sample,
 * up to a round late), time at the floor (paced at R), catching up, the furthest behind the schedule, its state at the
 * end, and the send buffer the phase had (sk_sndbuf; null: autotuned).
 */
export interface KernelPhaseRecord {
  readonly started: boolean;
  readonly heldAtFirstByte: boolean;
  readonly floorMs: number;
  readonly catchingUpMs: number;
  readonly maxLagMs: number;
  readonly stateAtEnd: string;
  readonly sendBufferBytes: number | null;
}

/** What an enforcer of each kind did: its own facts and no other kind's (a flow record's `enforcer`). */
export type EnforcerRecord =
  | { readonly kind: 'none' }
  | {
      readonly kind: 'token-bucket';
      /** Blocks the bucket released (each spaced at headroom x R). */
      readonly throttledWriteBlocks: number;
    }
  | {
      readonly kind: 'cwnd-clamp';
      /** Where Algorithm 1 ran (null: no clamp took, the response went unclamped). */
      readonly trickleIn: 'kernel' | 'user-space' | null;
      /** What Algorithm 1 computed and the kernel applied (packets), and the cwnd while clamped. */
      readonly clampPackets: Summary | null;
      readonly appliedClampPackets: Summary | null;
      readonly cwndWhileClampedPackets: Summary | null;
      /** Times the clamp was lifted because goodput fell behind the schedule. */
      readonly catchUps: number;
      /** Blocks whose writes were spaced at R in user space because the clamp sat at its floor. */
      readonly throttledWriteBlocks: number;
      readonly kernelPhase: KernelPhaseRecord | null;
    }
  | {
      readonly kind: 'kernel-pacing';
      /** Times the pacing rate was lifted because goodput fell behind the schedule. */
      readonly catchUps: number;
      /** Blocks whose writes were spaced at R in user space because the pacing rate sat at its floor. */
      readonly throttledWriteBlocks: number;
      readonly kernelPhase: KernelPhaseRecord | null;
    };

/** The enforcer's part of a flow record. */
export interface EnforcerReport {
  /** What actually limited the rate: the clamp backend, `app` for token buckets, `kernel-pacing`, or `none`. */
  readonly backend: ClampBackendName | 'app' | 'kernel-pacing';
  /** Why a weaker backend than the preferred one was used. */
  readonly fallbackReason?: string | undefined;
  /** The rate the enforcer aimed each throttled block at (bits/s), over blocks. */
  readonly paceRateBps: Summary | null;
  /** The last decision's reason (as dash.js SwitchRequests carry one). */
  readonly reason: string;
  readonly enforcer: EnforcerRecord;
}

/**
 * A response's throttling phase as the kernel takes it: offsets are the response's own (its first byte on the wire is
 * 0).
 */
export interface KernelPhase {
  /** Bytes the connection carried before the response. */
  readonly baseBytes: number;
  readonly throttleOffsetBytes: number;
  /** R by byte offset over the phase, at most `schedulePieces` pieces. */
  readonly pieces: readonly SchedulePiece[];
  /** The phase is not judged behind its schedule before this long. */
  readonly graceUs: number;
}

/**
 * An enforcer's other mode: the whole throttling phase in the kernel. Once `handOver` took the
 * phase the engine writes the response at once (no blocks, timers or readings in user space), and
 * this mode, not the block-by-block one, ends the response and reports it.
 */
export interface KernelEnforcement {
  /** Hands the phase to the kernel; false when it would not take it (the response then goes block by block). */
  handOver(phase: KernelPhase): boolean;
  /**
   * After `end` or `closed`: the phase's start (time, bytes acknowledged, retransmissions, segments out, srtt),
   * undefined if it never began.
   */
  phaseStart(): TcpSnapshot | undefined;
  /**
   * The socket closed before the response ended (the client left mid-response): reads what the
   * program kept of the phase, in place of `end`. Returns the connection's counters at the close
   * as the response's last reading (TCP_INFO went with the socket); undefined when none was kept.
   */
  closed(): TcpSnapshot | undefined;
  /**
   * The phase's bytes are about to be written (the startup's are in the socket or gone): the send
   * buffer may grow to hold the phase, at most `restBytes` (what is left of the response).
   */
  phaseWriting(restBytes: number): void;
  /** The response ended with its socket open: reads what the program did, then lifts its limits. */
  end(): void;
  report(): EnforcerReport;
}

/** One response under an enforcer, block by block (and `kernel`, its phase in the kernel, when it can run there). */
export interface Enforcement {
  /** Set when this response's phase can run in the kernel: the mode that takes over once `handOver` succeeds. */
  readonly kernel?: KernelEnforcement;
  readonly blockBytes: number;
  /**
   * Blocks that may wait in user space while the socket is full (0: a block is produced only when
   * the socket has taken the previous one, so decisions track what is being sent).
   */
  readonly readAheadBlocks: number;
  /**
   * The throttled rate is enforced in the socket (a clamp, a pacing rate), so startup bytes still
   * unsent in the socket when throttling begins leave at that rate: they belong to the throttled
   * phase's goodput. With an application-level limit they leave at full speed, as startup.
   */
  readonly limitsInSocket: boolean;
  /** What Server-Timing's policy entry adds to the policy's name (e.g. the clamp backend). */
  readonly detail: string | undefined;
  /**
   * beforeBlock decides by the clock alone (a token bucket): the socket is then read for the
   * record at most every few RTTs, not before every block, and the observation may hold no reading.
   */
  readonly clockOnly?: boolean;
  startThrottling(start: ThrottlingStart): void;
  /** Milliseconds to wait before writing this throttled block (0: now). */
  beforeBlock(block: Block, observation: Observation): number;
  /** The block was handed to the socket. */
  afterBlock(block: Block): void;
  /**
   * The response ended (its last byte acknowledged, the next request came, or it was aborted): undo what it set on the
   * socket.
   */
  end(reading: TcpInfo | undefined): void;
  report(): EnforcerReport;
}

export interface Enforcer {
  readonly name: string;
  /** False for `none`: the engine sends the body in one go and only records the flow. */
  readonly paced: boolean;
  /** Whether it needs the cwnd clamp's BPF program attached before the origin listens. */
  readonly usesClamp: boolean;
  /** Its headroom over R (what it aims at above the floor; the player simulator models it). */
  readonly headroom: number;
  /** `limits`: what the rate rule knows of this response's path (its plan's). */
  start(port: SocketPort, limits?: ResponseLimits): Enforcement;
}

/** A response's own limits from its rate plan. */
export interface ResponseLimits {
  /** The floor in packets, where the path holds fewer than the enforcer's: taken only when lower. */
  readonly floorPackets?: number | undefined;
}

/** The enforcer's floor, or the response's where that is lower. */
export function floorPacketsOf(configured: number, limits: ResponseLimits | undefined): number {
  const asked = limits?.floorPackets;
  return asked !== undefined && asked >= 1 && asked < configured ? Math.floor(asked) : configured;
}

/** Socket calls several enforcers make, never throwing on the request path. */
export function setNotsentLowat(port: SocketPort, bytes: number): void {
  try {
    port.control.setNotsentLowat(port.socket, bytes);
  } catch (error) {
    port.socketError('setNotsentLowat', error);
  }
}
