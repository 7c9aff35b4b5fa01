/**
 * A response's throttling phase run by the sock_ops program (bpf backend), shared by the enforcers
 * that can hand their phase over: cwnd-clamp (Algorithm 1: clamp, catch-up, pacing at the floor)
 * and kernel-pacing (the same schedule and catch-up with the pacer alone). User space writes the
 * schedule once, raises the send buffer once the phase's bytes are being written, and reads what
 * the program did once at the end.
 */
import type { ClampRtt, ClosedPhase, ScheduleState } from '@trickle/native';
import type { TcpSnapshot } from '../connection.js';
import { RateStats, type Summary } from '../running-stats.js';
import type { EnforcerReport, KernelEnforcement, KernelPhase, KernelPhaseRecord, SocketPort } from './enforcer.js';

export interface KernelPhaseOptions {
  /** What holds the phase to its schedule in the kernel. */
  readonly limit: 'clamp' | 'pacing';
  /** The multiple of R aimed at (the clamp's gain, or the pacing headroom). */
  readonly gain: number;
  readonly floorPackets: number;
  /** The phase's send buffer in seconds of its highest rate (0: autotuning). */
  readonly sendBufferSeconds: number;
  /** How the clamp is lifted at the end (nothing to lift under `pacing`). */
  readonly release: 'gradual' | 'immediate';
  /** The RTT the clamp is computed from (under `clamp`; default srtt). */
  readonly clampRtt?: ClampRtt | undefined;
  /** The clocks the program's times are converted between (tests inject fixed ones). */
  readonly clocks?: PhaseClocks | undefined;
}

/** The program's clock (CLOCK_MONOTONIC, as bpf_ktime_get_ns reads it) and the engine's (performance.now()), in ms. */
export interface PhaseClocks {
  monotonicMs(): number;
  engineMs(): number;
}

export const realPhaseClocks: PhaseClocks = {
  monotonicMs: () => Number(process.hrtime.bigint()) / 1e6,
  engineMs: () => performance.now(),
};

/** What a phase in the kernel did, for the report its enforcer makes of it. */
export interface KernelPhaseRun {
  /** What the program did, once `end` or the kernel's `closed` has read it (undefined: the socket's entry was gone). */
  readonly state: ScheduleState | undefined;
  /** The state was kept by the program as the socket closed mid-response (not read at the end). */
  readonly readAtClose: boolean;
  /** The kernelPhase part of the record. */
  phaseReport(): KernelPhaseRecord | null;
  /**
   * The rate the phase was aimed at, from gain x R of its pieces: under the clamp the program paces
   * at R, not gain x R, while the clamp sits at its floor, so that share of the phase's time is
   * aimed at R.
   */
  aimedRate(): Summary | null;
}

/** A CLOCK_MONOTONIC time (as the program reads it) on the engine's clock. */
function engineMs(clocks: PhaseClocks, monotonicMs: number): number {
  return clocks.engineMs() - (clocks.monotonicMs() - monotonicMs);
}

/** The kernel's record of a phase's start as a TCP_INFO snapshot on the engine's clock. */
function phaseStartSnapshot(clocks: PhaseClocks, state: ScheduleState): TcpSnapshot | undefined {
  if (state.phaseStartMonotonicMs === 0) return undefined;
  return {
    atMs: engineMs(clocks, state.phaseStartMonotonicMs),
    // Not a TCP_INFO reading: the program's counters when the phase began.
    info: {
      kernelLengthBytes: 0,
      bytesAcked: state.phaseStartAckedBytes,
      totalRetrans: state.phaseStartRetransmits,
      dataSegsOut: state.phaseStartSegmentsOut,
      rttUs: state.phaseStartSrttUs,
    },
  };
}

/**
 * The phase in the kernel for one response, or undefined when the clamp backend is not bpf (the enforcer then works
 * block by block only). `report` is the enforcer's report of what the phase did.
 */
export function kernelPhaseRun(
  port: SocketPort,
  options: KernelPhaseOptions,
  report: (run: KernelPhaseRun) => EnforcerReport,
): KernelEnforcement | undefined {
  const clocks = options.clocks ?? realPhaseClocks;
  const clamp = port.control.clamp;
  if (clamp.backend !== 'bpf') return undefined;
  /** gain x R over the phase's bytes, from its pieces. */
  const paceRates = new RateStats();
  let handedOver = false;
  let phaseMaxRateBytesPerSec = 0;
  let sendBufferBytes: number | null = null;
  let state: ScheduleState | undefined;
  let closedAtClose = false;
  /** When the program's state was read (CLOCK_MONOTONIC ms): the phase's end. */
  let readMonotonicMs = 0;

  const run: KernelPhaseRun = {
    get state() {
      return state;
    },
    get readAtClose() {
      return closedAtClose;
    },
    aimedRate() {
      const gainTimesR = paceRates.summary();
      if (
        gainTimesR === null ||
        options.limit !== 'clamp' ||
        state === undefined ||
        state.phaseStartMonotonicMs === 0 ||
        state.floorMs <= 0
      )
        return gainTimesR;
      const phaseMs = readMonotonicMs - state.phaseStartMonotonicMs;
      const floorShare = phaseMs > 0 ? Math.min(1, state.floorMs / phaseMs) : 1;
      const scale = 1 - floorShare + floorShare / options.gain;
      return {
        min: gainTimesR.min / options.gain,
        mean: gainTimesR.mean * scale,
        max: floorShare >= 0.999 ? gainTimesR.max / options.gain : gainTimesR.max,
      };
    },
    phaseReport: () =>
      state === undefined
        ? null
        : {
            started: state.phaseStartMonotonicMs !== 0,
            heldAtFirstByte: state.heldMonotonicMs !== 0,
            floorMs: Math.round(state.floorMs),
            catchingUpMs: Math.round(state.catchingUpMs),
            maxLagMs: Math.round(state.maxLagMs),
            stateAtEnd: state.state,
            sendBufferBytes,
          },
  };

  return {
    handOver(phase: KernelPhase) {
      try {
        clamp.setSchedule(port.socket, {
          ...phase,
          gain: options.gain,
          minPackets: options.floorPackets,
          limit: options.limit,
          ...(options.clampRtt === undefined ? {} : { clampRtt: options.clampRtt }),
        });
      } catch (error) {
        port.socketError('clamp.setSchedule', error);
        return false;
      }
      handedOver = true;
      phaseMaxRateBytesPerSec = Math.max(...phase.pieces.map((piece) => piece.rateBytesPerSec));
      let start = phase.throttleOffsetBytes;
      for (const piece of phase.pieces) {
        paceRates.add(options.gain * piece.rateBytesPerSec * 8, piece.endOffsetBytes - start);
        start = piece.endOffsetBytes;
      }
      return true;
    },
    phaseStart: () => (state === undefined ? undefined : phaseStartSnapshot(clocks, state)),
    closed() {
      if (!handedOver) return undefined;
      let phase: ClosedPhase | undefined;
      try {
        // The entry first: without it the program keeps nothing when the kernel's socket closes later
        // (after its last ACK or FIN), so what is kept by now is all there will ever be for it.
        clamp.forget(port.socket);
        phase = clamp.takeClosedPhase(port.socket);
      } catch (error) {
        port.socketError('clamp.takeClosedPhase', error);
      }
      if (phase === undefined) return undefined;
      state = phase.schedule;
      closedAtClose = true;
      readMonotonicMs = phase.closedMonotonicMs;
      // Not a TCP_INFO reading: the program's counters as the socket closed.
      return {
        atMs: engineMs(clocks, phase.closedMonotonicMs),
        info: {
          kernelLengthBytes: 0,
          bytesAcked: phase.bytesAcked,
          totalRetrans: phase.totalRetransmits,
          dataSegsOut: phase.dataSegmentsOut,
          rttUs: phase.srttUs,
        },
      };
    },
    phaseWriting(restBytes: number) {
      if (options.sendBufferSeconds <= 0 || sendBufferBytes !== null) return;
      try {
        sendBufferBytes = port.control.raiseSendBuffer(
          port.socket,
          Math.ceil(Math.min(restBytes, phaseMaxRateBytesPerSec * options.sendBufferSeconds)),
        );
      } catch (error) {
        port.socketError('raiseSendBuffer', error);
      }
    },
    end() {
      try {
        const socketState = clamp.state(port.socket);
        state = socketState?.schedule;
        readMonotonicMs = clocks.monotonicMs();
        // The next response on the connection must not start paced at this one's R (a rate not known may be it).
        if (socketState !== undefined && socketState.pacingRateBytesPerSec !== null)
          port.control.setMaxPacingRate(port.socket, null);
        // Leaves the schedule: a clamp (if any) is lifted, the program stops pacing.
        clamp.release(port.socket, { mode: options.release });
        // A viewer whose FIN came after the last byte was handed over (the program kept the phase then) ended it
        // anyway. One whose reset reached the kernel before Node saw its FIN took the entry with it (the socket is
        // still open here): what the program kept is then all there is of the phase.
        const kept = clamp.takeClosedPhase(port.socket);
        if (socketState === undefined && kept !== undefined) {
          state = kept.schedule;
          closedAtClose = true;
          readMonotonicMs = kept.closedMonotonicMs;
        }
      } catch (error) {
        port.socketError('clamp.state', error);
      }
    },
    report: () => report(run),
  };
}

/**
 * Why the kernel's phase ended as it did, for the record's reason (`what` names what ran: "Algorithm 1", "kernel
 * pacing").
 */
export function kernelPhaseReason(
  what: string,
  run: Pick<KernelPhaseRun, 'state' | 'readAtClose'> | undefined,
): string {
  const state = run?.state;
  if (state === undefined)
    return (
      `${what} in the kernel: its state was gone at the end (the socket closed before it ` +
      `was read, and none was kept)`
    );
  const end = run?.readAtClose === true ? 'when the socket closed mid-response' : 'at the end';
  if (state.phaseStartMonotonicMs === 0 && state.state === 'done')
    return (
      `${what} in the kernel: the response was acknowledged before its phase began (it ` +
      `fit the windows of its first round trips): nothing to throttle`
    );
  if (state.phaseStartMonotonicMs === 0) return `${what} in the kernel: ${state.state} ${end}, before its phase began`;
  const floor = state.floorMs > 0 ? `, ${Math.round(state.floorMs)} ms at the floor paced at R` : '';
  return (
    `${what} in the kernel: ${state.state} ${end}; ${state.catchUps} ` +
    `catch-up(s)${floor}, max ${Math.round(state.maxLagMs)} ms behind the schedule`
  );
}
