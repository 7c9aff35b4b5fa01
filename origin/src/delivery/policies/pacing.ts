/**
 * pacing: kernel pacing. SO_MAX_PACING_RATE at headroom x R, updated per block; TCP's internal
 * pacing spaces every packet (no fq needed).
 */
import type { DeliveryPolicy, MediaResponse, PolicyDelivery, PolicyEnv } from './delivery-policy.js';
import { KernelPacer, type KernelPacerOptions } from './kernel-pacer.js';

export interface PacingOptions extends KernelPacerOptions {
  readonly headroom: number;
}

export function pacingPolicy(options: PacingOptions): DeliveryPolicy {
  return {
    name: 'pacing',
    paced: true,
    start(response: MediaResponse, env: PolicyEnv): PolicyDelivery {
      const pacer = new KernelPacer(env, options);
      return {
        plan: response.mediaPlan,
        blockBytes: options.blockBytes,
        readAheadBlocks: 0,
        limitsInSocket: true,
        headers: { 'server-timing': 'policy;desc="pacing"' },
        startThrottling: (_nowMs, _info, unsent) => pacer.startThrottling(unsent),
        beforeBlock: (block) => pacer.pace(options.headroom * block.rateBytesPerSec, block.sizeBytes, block.nowMs),
        afterBlock: (block) => pacer.written(block.sizeBytes, block.nowMs),
        end: () => pacer.end(),
        report: () => pacer.report(`SO_MAX_PACING_RATE at ${options.headroom} x R`),
      };
    },
  };
}
