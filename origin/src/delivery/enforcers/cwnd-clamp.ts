/**
 * cwnd-clamp: Algorithm 1 of the Trickle paper, per block of the throttling phase. R is the block's
 * target rate; rtt and mss come from the flow meter's TCP_INFO reading; the clamp goes through the
 * ClampBackend (bpf: the kernel recomputes gain x R x srtt / mss on every RTT sample between
 * blocks). Goodput behind the schedule lifts the clamp (catch-up) until it is back; a clamp below
 * the floor is held at the floor and writes are throttled at R, on the phase's schedule. With
 * `clampRtt: 'min-rtt'` the clamp is gain x R x the path's minimum RTT instead of srtt (not the
 * paper's: a clamp from srtt grows with the queue it lets build on a deep buffer).
 */
import type { ClampBackend, ClampRtt, TcpInfo } from '@trickle/native';
import { RateStats, RunningStats } from '../running-stats.js';
import { trickleDecision } from '../trickle-algorithm.js';
import { floorPacketsOf, setNotsentLowat, type Enforcer, type EnforcerReport, type UnsentStartup } from './enforcer.js';
import { FloorWriteThrottle } from './floor-write-throttle.js';
import { kernelPhaseReason, kernelPhaseRun, type KernelPhaseRun, type PhaseClocks } from './kernel-phase.js';

export interface CwndClampOptions {
  readonly gain: number;
  readonly floorPackets: number;
  readonly blockBytes: number;
  readonly release: 'gradual' | 'immediate';
  /** The RTT the clamp is computed from: `srtt` (the paper's) or the path's minimum. */
  readonly clampRtt: ClampRtt;
  readonly inKernel: boolean;
  readonly sendBufferSeconds: number;
  /** The clocks a kernel phase's times are converted between (tests inject fixed ones; default the real ones). */
  readonly clocks?: PhaseClocks | undefined;
}

export function cwndClampEnforcer(name: string, options: CwndClampOptions): Enforcer {
  return {
    name,
    paced: true,
    usesClamp: true,
    headroom: options.gain,
    start(port, limits) {
      const clamp: ClampBackend = port.control.clamp;
      const floorPackets = floorPacketsOf(options.floorPackets, limits);
      const computed = new RunningStats();
      const applied = new RunningStats();
      const cwndWhileClamped = new RunningStats();
      const paceRates = new RateStats();
      let throttling = false;
      let clampedRate: number | undefined;
      let clampFailed = false;
      let catchUps = 0;
      const writeThrottle = new FloorWriteThrottle();
      let reason = 'startup';
      let unsentStartup: UnsentStartup | undefined;
      const kernel = options.inKernel
        ? kernelPhaseRun(
            port,
            {
              limit: 'clamp',
              gain: options.gain,
              floorPackets,
              sendBufferSeconds: options.sendBufferSeconds,
              release: options.release,
              clampRtt: options.clampRtt,
              clocks: options.clocks,
            },
            (run) => kernelReport(clamp, run),
          )
        : undefined;

      const release = () => {
        if (clampedRate === undefined) return;
        clampedRate = undefined;
        try {
          clamp.release(port.socket, { mode: options.release });
        } catch (error) {
          port.socketError('clamp.release', error);
        }
      };
      const clampTo = (rateBytesPerSec: number) => {
        if (clampFailed || clampedRate === rateBytesPerSec) return;
        try {
          clamp.setRate(port.socket, {
            rateBytesPerSec,
            gain: options.gain,
            minPackets: floorPackets,
            clampRtt: options.clampRtt,
          });
          clampedRate = rateBytesPerSec;
        } catch (error) {
          clampFailed = true;
          port.socketError('clamp.setRate', error);
        }
      };
      const readApplied = (info: TcpInfo) => {
        if (clamp.backend !== 'bpf' || clampedRate === undefined) return;
        try {
          const packets = clamp.state(port.socket)?.appliedPackets;
          if (packets !== undefined && info.cwnd !== undefined) {
            applied.add(packets);
            cwndWhileClamped.add(info.cwnd);
          }
        } catch (error) {
          port.socketError('clamp.state', error);
        }
      };

      return {
        ...(kernel === undefined ? {} : { kernel }),
        blockBytes: options.blockBytes,
        readAheadBlocks: 0,
        limitsInSocket: clamp.backend !== 'none',
        detail: clamp.backend,
        startThrottling({ unsent }) {
          throttling = true;
          if (unsent.sizeBytes > 0) unsentStartup = unsent;
          setNotsentLowat(port, options.blockBytes);
        },
        beforeBlock(block, { reading: info, progress, schedule }) {
          const rttUs = (options.clampRtt === 'min-rtt' ? info?.minRttUs : info?.rttUs) ?? 0;
          const mssBytes = info?.mss ?? 0;
          if (info === undefined || rttUs <= 0 || mssBytes <= 0) {
            reason = 'no TCP_INFO: served unclamped';
            return 0;
          }
          readApplied(info);
          const decision = trickleDecision({
            rateBytesPerSec: block.rateBytesPerSec,
            rttUs,
            mssBytes,
            goodputBytesPerSec: progress?.goodputBytesPerSec,
            ...(progress?.targetBytesPerSec === undefined
              ? {}
              : { goodputTargetBytesPerSec: progress.targetBytesPerSec }),
            appLimited: info.deliveryRateAppLimited === true,
            gain: options.gain,
            floorPackets,
          });
          reason = decision.reason;
          if (decision.action === 'unclamp') {
            if (clampedRate !== undefined) catchUps++;
            release();
            writeThrottle.stop();
            return 0;
          }
          clampTo(block.rateBytesPerSec);
          if (clampedRate !== undefined) computed.add(decision.clampPackets);
          if (!decision.throttleWrites) return writeThrottle.leave(schedule, 1, block.nowMs);
          return writeThrottle.delayMs(schedule, 1, block.nowMs);
        },
        afterBlock(block) {
          // What this block was aimed at: R when writes are throttled (clamp at the floor), gain x R under the clamp.
          if (clampedRate !== undefined) {
            if (unsentStartup !== undefined)
              paceRates.add(options.gain * unsentStartup.rateBytesPerSec * 8, unsentStartup.sizeBytes);
            paceRates.add((writeThrottle.active ? 1 : options.gain) * block.rateBytesPerSec * 8, block.sizeBytes);
          }
          unsentStartup = undefined;
          writeThrottle.written();
        },
        end(info) {
          // A response of one throttled block has no later block to sample the kernel's clamp at.
          if (clampedRate !== undefined && info !== undefined) readApplied(info);
          release();
          if (throttling) setNotsentLowat(port, 0);
        },
        report: () => {
          // Only a cwnd clamp is a clamp: the pacing-rate fallback paces, it does not clamp.
          const cwndClamp = clamp.backend === 'bpf';
          return {
            backend: clampFailed && computed.size === 0 ? 'none' : clamp.backend,
            fallbackReason: clampFailed ? 'setting the clamp failed: served unclamped' : clamp.fallbackReason,
            paceRateBps: paceRates.summary(),
            reason,
            enforcer: {
              kind: 'cwnd-clamp',
              trickleIn: clamp.backend === 'bpf' || clamp.backend === 'pacing-rate' ? 'user-space' : null,
              clampPackets: cwndClamp ? computed.summary() : null,
              appliedClampPackets: cwndClamp ? applied.summary() : null,
              cwndWhileClampedPackets: cwndClamp ? cwndWhileClamped.summary() : null,
              catchUps,
              throttledWriteBlocks: writeThrottle.throttledBlocks,
              kernelPhase: null,
            },
          };
        },
      };
    },
  };
}

/** Algorithm 1 run by the sock_ops program: what the program kept of the clamp, the cwnd and the phase. */
function kernelReport(clamp: ClampBackend, run: KernelPhaseRun): EnforcerReport {
  const state = run.state;
  const clampPackets = state?.clampPackets ?? null;
  const summary =
    clampPackets === null
      ? null
      : { min: clampPackets.min, mean: Math.round(clampPackets.mean), max: clampPackets.max };
  return {
    backend: clamp.backend,
    fallbackReason: undefined,
    paceRateBps: run.aimedRate(),
    reason: kernelPhaseReason('Algorithm 1', run),
    enforcer: {
      kind: 'cwnd-clamp',
      trickleIn: 'kernel',
      // The program computes and applies the clamp in one step: what it computed is what it applied.
      clampPackets: summary,
      appliedClampPackets: summary,
      cwndWhileClampedPackets:
        state?.cwndPackets == null
          ? null
          : { min: state.cwndPackets.min, mean: Math.round(state.cwndPackets.mean), max: state.cwndPackets.max },
      catchUps: state?.catchUps ?? 0,
      throttledWriteBlocks: 0,
      kernelPhase: run.phaseReport(),
    },
  };
}
