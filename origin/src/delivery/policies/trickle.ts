/**
 * trickle: Algorithm 1 of the paper, per block of the throttling phase. R is the media rate of
 * the block; rtt, mss and the bytes acknowledged come from TCP_INFO; the clamp goes through the
 * ClampBackend (bpf: the kernel recomputes gain x R x srtt / mss on every RTT sample between
 * blocks). Goodput below R lifts the clamp (catch-up) until goodput is back at R; a clamp below
 * the floor is held at the floor and writes are throttled at R by a token bucket.
 */
import type { ClampBackend, TcpInfo } from '@trickle/native';
import { RunningStats } from '../running-stats.js';
import { TokenBucket } from '../token-bucket.js';
import { trickleDecision } from '../trickle-algorithm.js';
import type { DeliveryPolicy, MediaResponse, PolicyDelivery, PolicyEnv } from './delivery-policy.js';

export interface TrickleOptions {
  readonly gain: number;
  readonly floorPackets: number;
  readonly blockBytes: number;
  /** Goodput is judged only after this many RTTs of throttling. */
  readonly goodputGraceRtts: number;
  readonly release: 'gradual' | 'immediate';
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
      const paceRates = new RunningStats();
      let startMs = 0;
      let throttling = false;
      let ackedAtStart: number | undefined;
      let clampedRate: number | undefined;
      let clampFailed = false;
      let catchUps = 0;
      let throttledWriteBlocks = 0;
      let writeBucket: TokenBucket | undefined;
      let throttleWrites = false;
      let reason = 'startup';

      const readInfo = (): TcpInfo | undefined => {
        try {
          return env.control.tcpInfo(env.socket);
        } catch (error) {
          env.socketError('tcpInfo', error);
          return undefined;
        }
      };
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
      const readApplied = () => {
        if (clamp.backend !== 'bpf' || clampedRate === undefined) return;
        try {
          const packets = clamp.state(env.socket)?.appliedPackets;
          if (packets !== undefined) applied.add(packets);
        } catch (error) {
          env.socketError('clamp.state', error);
        }
      };

      return {
        plan: response.mediaPlan,
        blockBytes: options.blockBytes,
        headers: { 'server-timing': `policy;desc="trickle (${clamp.backend})"` },
        startThrottling(nowMs, info) {
          startMs = nowMs;
          throttling = true;
          ackedAtStart = info?.bytesAcked;
          try {
            env.control.setNotsentLowat(env.socket, options.blockBytes);
          } catch (error) {
            env.socketError('setNotsentLowat', error);
          }
        },
        beforeBlock(block) {
          const info = readInfo();
          const rttUs = info?.rttUs ?? 0;
          const mssBytes = info?.mss ?? 0;
          if (info === undefined || rttUs <= 0 || mssBytes <= 0) {
            reason = 'no TCP_INFO: served unclamped';
            return 0;
          }
          readApplied();
          const elapsedMs = block.nowMs - startMs;
          const judged = ackedAtStart !== undefined && info.bytesAcked !== undefined && elapsedMs >= Math.max(minimumGoodputWindowMs, (options.goodputGraceRtts * rttUs) / 1000);
          const goodput = judged ? ((info.bytesAcked! - ackedAtStart!) * 1000) / elapsedMs : undefined;
          const decision = trickleDecision({ rateBytesPerSec: block.rateBytesPerSec, rttUs, mssBytes, goodputBytesPerSec: goodput, appLimited: info.deliveryRateAppLimited === true, gain: options.gain, floorPackets: options.floorPackets });
          reason = decision.reason;
          if (decision.action === 'unclamp') {
            if (clampedRate !== undefined) catchUps++;
            release();
            throttleWrites = false;
            return 0;
          }
          clampTo(block.rateBytesPerSec);
          if (clampedRate !== undefined) computed.add(decision.clampPackets);
          throttleWrites = decision.throttleWrites;
          if (!throttleWrites) return 0;
          if (writeBucket === undefined) writeBucket = new TokenBucket(block.rateBytesPerSec, block.nowMs, options.blockBytes);
          else writeBucket.setFillRate(block.rateBytesPerSec, block.nowMs);
          return writeBucket.delayMs(block.sizeBytes, block.nowMs);
        },
        afterBlock(block) {
          if (throttleWrites) {
            writeBucket?.consume(block.sizeBytes, block.nowMs);
            throttledWriteBlocks++;
          }
          if (clampedRate !== undefined) paceRates.add(options.gain * block.rateBytesPerSec * 8);
        },
        end() {
          release();
          if (!throttling) return;
          try {
            env.control.setNotsentLowat(env.socket, 0);
          } catch (error) {
            env.socketError('setNotsentLowat', error);
          }
        },
        report: () => ({
          backend: clampFailed && computed.size === 0 ? 'none' : clamp.backend,
          fallbackReason: clampFailed ? 'setting the clamp failed: served unclamped' : clamp.fallbackReason,
          paceRateBps: paceRates.summary(),
          // Only a cwnd clamp is a clamp: the pacing-rate fallback paces, it does not clamp.
          clampPackets: clamp.backend === 'bpf' ? computed.summary() : null,
          appliedClampPackets: clamp.backend === 'bpf' ? applied.summary() : null,
          catchUps,
          throttledWriteBlocks,
          reason,
        }),
      };
    },
  };
}
