/**
 * kernel-pacing: SO_MAX_PACING_RATE at headroom x R, set when the rate changes; TCP's internal
 * pacing spaces every packet (no fq needed). TCP_NOTSENT_LOWAT of one block during throttling, so
 * a block's rate is set close to when its bytes leave. Both are reset when the response ends.
 *
 * Catch-up, as Algorithm 1 does it for the clamp: when goodput falls behind the schedule (losses,
 * a slower stretch of the path) and the flow is network-limited, the cap is lifted until goodput is
 * back. A lifted cap is not a burst: a socket that once had a pacing rate keeps TCP's internal
 * pacing at its congestion control's own rate. Without catch-up every loss episode left a deficit
 * the cap never made up (6 of 8 DASH sessions rebuffered on a 50 kB-buffer link).
 *
 * Below the floor (floorPackets per srtt) the kernel paces at the floor and writes wait for the
 * phase's schedule at the rate: a pacing cap far below what the path carries teaches BBR that the path
 * is that slow (pacing-limited samples are not app-limited), and it then takes seconds to grow
 * back once the media rate rises; an idle socket between floor-paced blocks is app-limited, which
 * BBR discounts.
 *
 * In the kernel (bpf backend, `inKernel`): the phase's schedule goes to the sock_ops program once,
 * the response is written at once, and the program sets SO_MAX_PACING_RATE at headroom x R when
 * the bytes being sent reach a piece of another rate, lifts it while the phase is behind its
 * schedule, and holds the phase from the packet that carries its first byte: no per-block write,
 * timer or setsockopt in user space. No floor there: the pacer spaces packets at any rate, as
 * Trickle's floor branch does in the kernel.
 */
import { RateStats } from '../running-stats.js';
import {
  floorPacketsOf,
  setNotsentLowat,
  type Block,
  type Enforcer,
  type EnforcerReport,
  type Observation,
} from './enforcer.js';
import { FloorWriteThrottle } from './floor-write-throttle.js';
import { kernelPhaseReason, kernelPhaseRun, type KernelPhaseRun, type PhaseClocks } from './kernel-phase.js';

export interface KernelPacingOptions {
  readonly headroom: number;
  readonly blockBytes: number;
  /** Packets per srtt below which writes, not the kernel, pace (as the clamp's floor). */
  readonly floorPackets: number;
  /** Hand the phase to the sock_ops program (bpf backend) instead of pacing it block by block. */
  readonly inKernel: boolean;
  /** The kernel phase's send buffer in seconds of its highest rate (0: autotuning). */
  readonly sendBufferSeconds: number;
  /** The clocks a kernel phase's times are converted between (tests inject fixed ones; default the real ones). */
  readonly clocks?: PhaseClocks | undefined;
}

export function kernelPacingEnforcer(options: KernelPacingOptions): Enforcer {
  return {
    name: 'kernel-pacing',
    paced: true,
    // The program carries the in-kernel phase; without it (not root, no BPF) pacing goes block by block.
    usesClamp: options.inKernel,
    headroom: options.headroom,
    start(port, limits) {
      const floorPackets = floorPacketsOf(options.floorPackets, limits);
      /** The pacing rate in force (bytes/s); null: lifted for catch-up; undefined: never set. */
      let appliedBytesPerSec: number | null | undefined;
      const writeThrottle = new FloorWriteThrottle();
      let aimedBytesPerSec: number | undefined;
      let failed = false;
      let catchUps = 0;
      let catchingUp = false;
      let reason = `SO_MAX_PACING_RATE at ${options.headroom} x R`;
      const paceRates = new RateStats();
      /** Startup bytes unsent when throttling began: they leave under the first rate set. */
      let unsentStartupBytes = 0;
      const kernel = options.inKernel
        ? kernelPhaseRun(
            port,
            {
              limit: 'pacing',
              gain: options.headroom,
              floorPackets,
              sendBufferSeconds: options.sendBufferSeconds,
              release: 'gradual',
              clocks: options.clocks,
            },
            (run) => kernelReport(options.headroom, run),
          )
        : undefined;

      const apply = (rate: number | null): boolean => {
        if (rate === appliedBytesPerSec) return true;
        try {
          port.control.setMaxPacingRate(port.socket, rate);
          appliedBytesPerSec = rate;
          return true;
        } catch (error) {
          failed = true;
          aimedBytesPerSec = undefined;
          writeThrottle.stop();
          port.socketError('setMaxPacingRate', error);
          return false;
        }
      };

      /**
       * The rate asked for covers what is still unsent of the previous block too (both leave under
       * it): bytes over the time each part should take at its own rate.
       */
      const pace = (block: Block, { reading: info, progress, schedule }: Observation): number => {
        const rateBytesPerSec = options.headroom * block.rateBytesPerSec;
        const behind =
          progress !== undefined &&
          progress.goodputBytesPerSec < (progress.targetBytesPerSec ?? block.rateBytesPerSec) &&
          info?.deliveryRateAppLimited !== true;
        if (behind) {
          if (!catchingUp && appliedBytesPerSec !== undefined) catchUps++;
          catchingUp = true;
          writeThrottle.stop();
          aimedBytesPerSec = undefined;
          reason =
            `goodput ${Math.round(progress.goodputBytesPerSec)} B/s behind the ` +
            `schedule's ${Math.round(progress.targetBytesPerSec ?? block.rateBytesPerSec)} B/s: ` +
            `cap lifted to catch up`;
          if (appliedBytesPerSec !== undefined) apply(null);
          return 0;
        }
        catchingUp = false;
        const floorBytesPerSec =
          info?.mss !== undefined && info.rttUs !== undefined && info.rttUs > 0
            ? (floorPackets * info.mss * 1e6) / info.rttUs
            : 0;
        let waitMs = 0;
        let queueBytesPerSec: number;
        if (rateBytesPerSec < floorBytesPerSec) {
          waitMs = writeThrottle.delayMs(schedule, options.headroom, block.nowMs);
          queueBytesPerSec = floorBytesPerSec;
        } else {
          waitMs = writeThrottle.leave(schedule, options.headroom, block.nowMs);
          const unsentBytes = info?.notsentBytes ?? 0;
          const previous = aimedBytesPerSec;
          queueBytesPerSec =
            previous === undefined || unsentBytes === 0
              ? rateBytesPerSec
              : (unsentBytes + block.sizeBytes) / (unsentBytes / previous + block.sizeBytes / rateBytesPerSec);
        }
        reason = `SO_MAX_PACING_RATE at ${options.headroom} x R`;
        aimedBytesPerSec = rateBytesPerSec;
        const wasSet = appliedBytesPerSec !== undefined;
        if (!apply(Math.max(1, Math.round(queueBytesPerSec)))) return 0;
        if (!wasSet && unsentStartupBytes > 0) paceRates.add(appliedBytesPerSec! * 8, unsentStartupBytes);
        unsentStartupBytes = 0;
        return waitMs;
      };

      return {
        ...(kernel === undefined ? {} : { kernel }),
        blockBytes: options.blockBytes,
        readAheadBlocks: 0,
        limitsInSocket: true,
        detail: undefined,
        startThrottling({ unsent }) {
          unsentStartupBytes = unsent.sizeBytes;
          setNotsentLowat(port, options.blockBytes);
        },
        beforeBlock: (block, observation) => (failed ? 0 : pace(block, observation)),
        afterBlock(block) {
          writeThrottle.written();
          if (typeof appliedBytesPerSec === 'number' && aimedBytesPerSec !== undefined)
            paceRates.add(aimedBytesPerSec * 8, block.sizeBytes);
        },
        end() {
          if (appliedBytesPerSec === undefined) return;
          try {
            port.control.setMaxPacingRate(port.socket, null);
            port.control.setNotsentLowat(port.socket, 0);
          } catch (error) {
            port.socketError('resetPacing', error);
          }
        },
        report: () => ({
          backend: appliedBytesPerSec === undefined ? 'none' : 'kernel-pacing',
          fallbackReason: failed ? 'SO_MAX_PACING_RATE failed: served unpaced' : undefined,
          paceRateBps: paceRates.summary(),
          reason:
            writeThrottle.throttledBlocks > 0
              ? `${reason}; ${writeThrottle.throttledBlocks} block(s) below the floor ` +
                `of ${floorPackets} packets per srtt had writes throttled at the rate`
              : reason,
          enforcer: {
            kind: 'kernel-pacing',
            catchUps,
            throttledWriteBlocks: writeThrottle.throttledBlocks,
            kernelPhase: null,
          },
        }),
      };
    },
  };
}

/** The phase paced by the sock_ops program: the rates it aimed at and what it kept of the phase. */
function kernelReport(headroom: number, run: KernelPhaseRun): EnforcerReport {
  return {
    backend: 'kernel-pacing',
    paceRateBps: run.aimedRate(),
    reason: kernelPhaseReason(`SO_MAX_PACING_RATE at ${headroom} x R`, run),
    enforcer: {
      kind: 'kernel-pacing',
      catchUps: run.state?.catchUps ?? 0,
      throttledWriteBlocks: 0,
      kernelPhase: run.phaseReport(),
    },
  };
}
