/** The real per-socket cwnd clamp: entries in the sock_ops program's map, keyed by socket cookie. */
import type { NativeBinding } from '../binding.js';
import { socketCookie, socketFd, type SocketLike } from '../socket.js';
import type { RawScheduleState } from '../binding.js';
import {
  checkClampRate,
  checkPackets,
  scheduleTriples,
  type ClampBackend,
  type ClampRate,
  type ClampRtt,
  type ClampSchedule,
  type ClampSocketState,
  type ClampStats,
  type ClosedPhase,
  type InitialWindowState,
  type ReleaseOptions,
  type ScheduleState,
} from './clamp-backend.js';

/** Mirrors enum trickle_clamp_mode in bpf/cwnd_clamp.h. */
export const clampMode = {
  rate: 1,
  packets: 2,
  releaseGradual: 3,
  releaseImmediate: 4,
  schedule: 5,
  paceSchedule: 6,
} as const;

/** Mirrors enum trickle_clamp_rtt. */
const clampRttCodes: Record<ClampRtt, number> = { srtt: 0, 'min-rtt': 1 };
/** TRICKLE_PACING_UNKNOWN (a u64 of all ones) as the addon reads it into a double. */
const pacingUnknown = 2 ** 64;

/** Mirrors enum trickle_schedule_state. */
const scheduleStates = ['startup', 'clamped', 'floor', 'catching-up', 'done', 'paced'] as const;

function scheduleState(raw: RawScheduleState): ScheduleState {
  return {
    state: scheduleStates[raw.state] ?? 'startup',
    catchUps: raw.catchUps,
    phaseStartMonotonicMs: raw.phaseStartNs / 1e6,
    phaseStartAckedBytes: raw.phaseStartAcked,
    phaseStartRetransmits: raw.phaseStartRetrans,
    phaseStartSegmentsOut: raw.phaseStartSegsOut,
    phaseStartSrttUs: raw.phaseStartSrttUs,
    floorMs: raw.floorNs / 1e6,
    catchingUpMs: raw.catchingUpNs / 1e6,
    clampPackets:
      raw.clampSamples === 0
        ? null
        : { min: raw.clampMin, mean: raw.clampSum / raw.clampSamples, max: raw.clampMax, samples: raw.clampSamples },
    maxLagMs: raw.maxLagUs / 1000,
    heldMonotonicMs: raw.heldNs / 1e6,
    cwndPackets:
      raw.clampSamples === 0 ? null : { min: raw.cwndMin, mean: raw.cwndSum / raw.clampSamples, max: raw.cwndMax },
  };
}

export class BpfClampBackend implements ClampBackend {
  readonly backend = 'bpf';
  readonly fallbackReason = undefined;
  private errors = 0;
  /** The cookie of every socket given an entry: a socket the client closed has no fd left to ask. */
  private readonly cookies = new WeakMap<object, bigint>();

  constructor(private readonly native: NativeBinding) {}

  setRate(socket: SocketLike, target: ClampRate): void {
    const { rateBytesPerSec, gain, minPackets, clampRtt } = checkClampRate(target);
    this.write(socket, clampMode.rate, rateBytesPerSec, gain, minPackets, 0, clampRtt);
  }

  setPackets(socket: SocketLike, packets: number): void {
    this.write(socket, clampMode.packets, 0, 1, 1, checkPackets(packets), 'srtt');
  }

  release(socket: SocketLike, options: ReleaseOptions = {}): void {
    this.write(
      socket,
      options.mode === 'immediate' ? clampMode.releaseImmediate : clampMode.releaseGradual,
      0,
      1,
      1,
      0,
      'srtt',
    );
  }

  setInitialWindow(socket: SocketLike, packets: number): void {
    socketFd(socket);
    try {
      this.native.bpfSetInitialWindow(this.cookieOf(socket), checkPackets(packets));
    } catch (error) {
      this.errors++;
      throw error;
    }
  }

  setSchedule(socket: SocketLike, schedule: ClampSchedule): void {
    const { gain, minPackets, clampRtt } = checkClampRate({
      rateBytesPerSec: 1,
      ...(schedule.gain === undefined ? {} : { gain: schedule.gain }),
      ...(schedule.minPackets === undefined ? {} : { minPackets: schedule.minPackets }),
      ...(schedule.clampRtt === undefined ? {} : { clampRtt: schedule.clampRtt }),
    });
    const triples = scheduleTriples(schedule);
    socketFd(socket);
    try {
      this.native.bpfSetSchedule(
        this.cookieOf(socket),
        schedule.limit === 'pacing' ? clampMode.paceSchedule : clampMode.schedule,
        schedule.baseBytes,
        schedule.throttleOffsetBytes,
        schedule.graceUs,
        Math.round(gain * 1000),
        minPackets,
        clampRttCodes[clampRtt],
        triples,
      );
    } catch (error) {
      this.errors++;
      throw error;
    }
  }

  /**
   * Deletes the socket's entry, also after the socket closed: the program removes entries when it
   * sees a socket close, but an entry written after the peer had already reset the connection
   * would otherwise stay. The cookie stays remembered (with the socket object) for takeClosedPhase.
   */
  forget(socket: SocketLike): void {
    const cookie = this.rememberedCookie(socket);
    if (cookie !== undefined) this.native.bpfDeleteTarget(cookie);
  }

  takeClosedPhase(socket: SocketLike): ClosedPhase | undefined {
    const cookie = this.rememberedCookie(socket);
    const raw = cookie === undefined ? undefined : this.native.bpfTakeClosed(cookie);
    if (raw === undefined) return undefined;
    return {
      schedule: scheduleState(raw.schedule),
      closedMonotonicMs: raw.closedNs / 1e6,
      bytesAcked: raw.bytesAcked,
      totalRetransmits: raw.totalRetrans,
      dataSegmentsOut: raw.dataSegsOut,
      srttUs: raw.srttUs,
    };
  }

  state(socket: SocketLike): ClampSocketState | undefined {
    const target = this.native.bpfGetTarget(socketCookie(socket));
    if (target === undefined) return undefined;
    const state: ClampSocketState = {
      backend: 'bpf',
      appliedPackets: target.appliedPackets === 0 ? undefined : target.appliedPackets,
      appliedAt:
        target.appliedPackets === 0
          ? undefined
          : {
              rttUs: target.appliedRttUs,
              clampRtt: target.clampRtt === clampRttCodes['min-rtt'] ? 'min-rtt' : 'srtt',
              mssBytes: target.appliedMss,
            },
      updates: target.updates,
      lossSsthreshPackets: target.ccSsthresh === 0 ? undefined : target.ccSsthresh,
      pacingRateBytesPerSec:
        target.pacingBytesPerSec === pacingUnknown
          ? undefined
          : target.pacingBytesPerSec === 0
            ? null
            : target.pacingBytesPerSec,
      ...(target.schedule === undefined ? {} : { schedule: scheduleState(target.schedule) }),
    };
    if (target.initialWindowPackets === 0) return state;
    // The program writes 0 (pending), 1 (applied) or bpf_setsockopt's negative errno.
    const result = target.initialWindowResult;
    const initialWindow: InitialWindowState = {
      packets: target.initialWindowPackets,
      status: result === 0 ? 'pending' : result === 1 ? 'applied' : 'failed',
      ...(result < 0 ? { errno: result } : {}),
    };
    return { ...state, initialWindow };
  }

  stats(): ClampStats {
    const raw = this.native.bpfStats();
    return {
      backend: 'bpf',
      entries: raw.entries,
      updatesApplied: raw.clampUpdates,
      rttSamples: raw.rttSamples,
      closedRemoved: raw.closedRemoved,
      closedPhasesKept: raw.closedPhasesKept,
      catchUps: raw.catchUps,
      pacingUpdates: raw.pacingUpdates,
      errors: raw.setsockoptErrors + this.errors,
    };
  }

  close(): void {
    this.native.bpfClose();
  }

  /** A bare fd is asked directly (it must still be open); a socket object by what was remembered. */
  private rememberedCookie(socket: SocketLike): bigint | undefined {
    return typeof socket === 'number' ? socketCookie(socket) : this.cookies.get(socket);
  }

  private cookieOf(socket: SocketLike): bigint {
    if (typeof socket === 'number') return socketCookie(socket);
    let cookie = this.cookies.get(socket);
    if (cookie === undefined) {
      cookie = socketCookie(socket);
      this.cookies.set(socket, cookie);
    }
    return cookie;
  }

  private write(
    socket: SocketLike,
    mode: number,
    rateBytesPerSec: number,
    gain: number,
    minPackets: number,
    fixedPackets: number,
    clampRtt: ClampRtt,
  ): void {
    socketFd(socket);
    try {
      this.native.bpfSetTarget(
        this.cookieOf(socket),
        mode,
        Math.round(rateBytesPerSec),
        Math.round(gain * 1000),
        minPackets,
        fixedPackets,
        clampRttCodes[clampRtt],
      );
    } catch (error) {
      this.errors++;
      throw error;
    }
  }
}
