/**
 * trickle: Algorithm 1 of the paper, per block of the throttling phase. R is the media rate of
 * the block; rtt, mss and the bytes acknowledged come from TCP_INFO; the clamp goes through the
 * ClampBackend (bpf: the kernel recomputes gain x R x srtt / mss on every RTT sample between
 * blocks). Goodput below R lifts the clamp (catch-up) until goodput is back at R; a clamp below
 * the floor is held at the floor and writes are throttled at R by a token bucket.
 */
import type { ClampBackend, TcpInfo } from '@trickle/native';
import { RateStats, RunningStats } from '../running-stats.js';
import { trickleDecision } from '../trickle-algorithm.js';
import type { DeliveryPolicy, MediaResponse, PolicyDelivery, PolicyEnv, UnsentStartup } from './delivery-policy.js';
import { FloorWriteThrottle } from './floor-write-throttle.js';
import { setNotsentLowat } from './socket-calls.js';

export interface TrickleOptions {
  readonly gain: number;
  readonly floorPackets: number;
  readonly blockBytes: number;
  /** Goodput is judged only after this many RTTs of throttling. */
  readonly goodputGraceRtts: number;
  readonly release: 'gradual' | 'immediate';
}

/**
 * Bytes the kernel has taken from the application: acknowledged, in flight, or unsent. With
 * TCP_NOTSENT_LOWAT of one block the unsent part is bounded, so this advances only as fast as
 * the path delivers, without acknowledgements' one-RTT lag or the socket's pipeline showing up
 * as a shortfall (the pipeline, up to two blocks and a clamp, would otherwise read as "behind"
 * for the first seconds of every response).
 */
function takenBytes(info: TcpInfo): number | undefined {
  if (info.bytesAcked === undefined || info.unacked === undefined || info.mss === undefined) return undefined;
  return info.bytesAcked + info.unacked * info.mss + (info.notsentBytes ?? 0);
}

/** Before acknowledgements can say anything about goodput, at least this long must pass. */
const minimumGoodputWindowMs = 200;

export function tricklePolicy(options: TrickleOptions): DeliveryPolicy {
  return {
    name: 'trickle',
    paced: true,
    start(response: MediaResponse, env: PolicyEnv): PolicyDelivery {
      const clamp: ClampBackend = env.control.clamp;
      const computed = new RunningStats();
      const applied = new RunningStats();
      const cwndWhileClamped = new RunningStats();
      const paceRates = new RateStats();
      let startMs = 0;
      let throttling = false;
      /** takenBytes() when throttling began. */
      let takenAtStart: number | undefined;
      let clampedRate: number | undefined;
      let clampFailed = false;
      let catchUps = 0;
      // Entering the floor: one block of tokens, so tokens saved while the clamp alone paced do not burst out.
      const writeThrottle = new FloorWriteThrottle(options.blockBytes);
      // The media schedule of the phase so far: bytes written and the media seconds they carry.
      let phaseBytes = 0;
      let phaseMediaSec = 0;
      let lastRateBytesPerSec = 1;
      let reason = 'startup';
      let unsentStartup: UnsentStartup | undefined;

      const release = () => {
        if (clampedRate === undefined) return;
        clampedRate = undefined;
        try {
          clamp.release(env.socket, { mode: options.release });
        } catch (error) {
          env.socketError('clamp.release', error);
        }
      };
      const clampTo = (rateBytesPerSec: number) => {
        if (clampFailed || clampedRate === rateBytesPerSec) return;
        try {
          clamp.setRate(env.socket, { rateBytesPerSec, gain: options.gain, minPackets: options.floorPackets });
          clampedRate = rateBytesPerSec;
        } catch (error) {
          clampFailed = true;
          env.socketError('clamp.setRate', error);
        }
      };
      /** Bytes the kernel has been handed in this phase, and the media seconds they carry. */
      const countHanded = (sizeBytes: number, rateBytesPerSec: number) => {
        phaseBytes += sizeBytes;
        phaseMediaSec += sizeBytes / rateBytesPerSec;
        lastRateBytesPerSec = rateBytesPerSec;
      };
      const readApplied = (info: TcpInfo) => {
        if (clamp.backend !== 'bpf' || clampedRate === undefined) return;
        try {
          const packets = clamp.state(env.socket)?.appliedPackets;
          if (packets !== undefined && info.cwnd !== undefined) {
            applied.add(packets);
            cwndWhileClamped.add(info.cwnd);
          }
        } catch (error) {
          env.socketError('clamp.state', error);
        }
      };

      return {
        plan: response.mediaPlan,
        blockBytes: options.blockBytes,
        readAheadBlocks: 0,
        limitsInSocket: clamp.backend !== 'none',
        headers: { 'server-timing': `policy;desc="trickle (${clamp.backend})"` },
        startThrottling(nowMs, info, unsent) {
          startMs = nowMs;
          throttling = true;
          // Startup bytes still unsent leave under the clamp: the phase's first bytes, at their own R.
          const taken = info === undefined ? undefined : takenBytes(info);
          takenAtStart = taken === undefined ? undefined : taken - unsent.sizeBytes;
          if (unsent.sizeBytes > 0) {
            countHanded(unsent.sizeBytes, unsent.rateBytesPerSec);
            unsentStartup = unsent;
          }
          setNotsentLowat(env, options.blockBytes);
        },
        beforeBlock(block) {
          const info = env.tcpInfo();
          const rttUs = info?.rttUs ?? 0;
          const mssBytes = info?.mss ?? 0;
          if (info === undefined || rttUs <= 0 || mssBytes <= 0) {
            reason = 'no TCP_INFO: served unclamped';
            return 0;
          }
          readApplied(info);
          const elapsedMs = block.nowMs - startMs;
          const taken = takenBytes(info);
          const judged = takenAtStart !== undefined && taken !== undefined && elapsedMs >= Math.max(minimumGoodputWindowMs, (options.goodputGraceRtts * rttUs) / 1000);
          // VBR: goodput is compared with R of the media the kernel has taken so far (its bytes over
          // the media seconds they carry: blocks written, less what still waits in user space at
          // the last block's rate), not with this one block's R.
          let goodput: number | undefined;
          let goodputTarget: number | undefined;
          if (judged) {
            const takenDelta = taken! - takenAtStart!;
            const takenMediaSec = phaseMediaSec - Math.max(0, phaseBytes - takenDelta) / lastRateBytesPerSec;
            goodput = (Math.max(0, takenDelta) * 1000) / elapsedMs;
            if (takenDelta > 0 && takenMediaSec > 0) goodputTarget = takenDelta / takenMediaSec;
          }
          const decision = trickleDecision({
            rateBytesPerSec: block.rateBytesPerSec,
            rttUs,
            mssBytes,
            goodputBytesPerSec: goodput,
            ...(goodputTarget === undefined ? {} : { goodputTargetBytesPerSec: goodputTarget }),
            appLimited: info.deliveryRateAppLimited === true,
            gain: options.gain,
            floorPackets: options.floorPackets,
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
          if (!decision.throttleWrites) {
            writeThrottle.stop();
            return 0;
          }
          return writeThrottle.delayMs(block.rateBytesPerSec, block.sizeBytes, block.nowMs);
        },
        afterBlock(block) {
          countHanded(block.sizeBytes, block.rateBytesPerSec);
          // What this block was aimed at: R when writes are throttled (clamp at the floor), gain x R under the clamp.
          if (clampedRate !== undefined) {
            if (unsentStartup !== undefined) paceRates.add(options.gain * unsentStartup.rateBytesPerSec * 8, unsentStartup.sizeBytes);
            paceRates.add((writeThrottle.active ? 1 : options.gain) * block.rateBytesPerSec * 8, block.sizeBytes);
          }
          unsentStartup = undefined;
          writeThrottle.written(block.sizeBytes, block.nowMs);
        },
        end() {
          // A response of one throttled block has no later block to sample the kernel's clamp at.
          if (clampedRate !== undefined) {
            const info = env.tcpInfo();
            if (info !== undefined) readApplied(info);
          }
          release();
          if (throttling) setNotsentLowat(env, 0);
        },
        report: () => ({
          backend: clampFailed && computed.size === 0 ? 'none' : clamp.backend,
          fallbackReason: clampFailed ? 'setting the clamp failed: served unclamped' : clamp.fallbackReason,
          paceRateBps: paceRates.summary(),
          // Only a cwnd clamp is a clamp: the pacing-rate fallback paces, it does not clamp.
          clampPackets: clamp.backend === 'bpf' ? computed.summary() : null,
          appliedClampPackets: clamp.backend === 'bpf' ? applied.summary() : null,
          cwndWhileClampedPackets: clamp.backend === 'bpf' ? cwndWhileClamped.summary() : null,
          catchUps,
          throttledWriteBlocks: writeThrottle.throttledBlocks,
          reason,
        }),
      };
    },
  };
}
