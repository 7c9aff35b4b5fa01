/**
 * cmcd: a 1.25x cap pins the player's throughput estimate to its current rung and keeps it from
 * switching up. With CMCD the origin knows the buffer and the rung: startup (`su`, or a low
 * buffer) goes at full speed; otherwise the rate lets the ABR see at least the next rung (a
 * buffer-dependent multiplier x the next rung's bitrate), never above the client's `rtp`. The
 * rate is enforced with kernel pacing (SO_MAX_PACING_RATE) and announced in CMSD-Dynamic (etp)
 * and Server-Timing. Progressive files (no rungs) get their per-block media rate x the
 * full-buffer multiplier after the usual startup phase.
 */
import { CmsdObjectType, CmsdStreamType, encodeCmsdDynamic, encodeCmsdStatic } from '@svta/common-media-library/cmsd';
import { SfItem } from '@svta/common-media-library/structuredfield';
import { cmcdRate, type CmcdRateOptions } from '../cmcd-rate.js';
import type { DeliveryPolicy, MediaRatePlan, MediaResponse, PolicyDelivery, PolicyEnv } from './delivery-policy.js';
import { KernelPacer, type KernelPacerOptions } from './kernel-pacer.js';

export interface CmcdPolicyOptions extends CmcdRateOptions, KernelPacerOptions {}

function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

export function cmcdPolicy(options: CmcdPolicyOptions): DeliveryPolicy {
  return {
    name: 'cmcd',
    paced: true,
    start(response: MediaResponse, env: PolicyEnv): PolicyDelivery {
      let plan: MediaRatePlan;
      let multiplier = options.multiplierAtFull;
      let reason: string;
      const headers: Record<string, string> = {};
      if (response.segment !== undefined) {
        const choice = cmcdRate(response.cmcd, response.segment.renditionBitratesBps, response.segment.bitrateBps, options);
        reason = choice.reason;
        multiplier = 1;
        const objectType = response.segment.kind === 'audio' ? CmsdObjectType.AUDIO : CmsdObjectType.VIDEO;
        headers['cmsd-static'] = encodeCmsdStatic({ ot: objectType, st: CmsdStreamType.VOD });
        if (choice.fullSpeed) {
          plan = { startupEndOffset: response.rangeEnd + 1, rateAt: response.mediaPlan.rateAt, reason };
          headers['server-timing'] = `policy;desc="cmcd", rate;desc=${quoted(`full speed: ${reason}`)}`;
        } else {
          const rateBytesPerSec = choice.rateBitsPerSec / 8;
          plan = { startupEndOffset: response.rangeStart, rateAt: () => rateBytesPerSec, reason };
          const kbps = Math.round(choice.rateBitsPerSec / 1000);
          headers['cmsd-dynamic'] = encodeCmsdDynamic([new SfItem('trickle', { etp: kbps })]);
          headers['server-timing'] = `policy;desc="cmcd", rate;desc=${quoted(`${kbps} kbit/s: ${reason}`)}`;
        }
      } else {
        plan = response.mediaPlan;
        reason = `progressive: media rate x ${multiplier} after startup`;
        headers['server-timing'] = `policy;desc="cmcd", rate;desc=${quoted(reason)}`;
      }
      const pacer = new KernelPacer(env, options);
      return {
        plan,
        blockBytes: options.blockBytes,
        readAheadBlocks: 0,
        limitsInSocket: true,
        headers,
        startThrottling: (_nowMs, _info, unsent) => pacer.startThrottling(unsent),
        beforeBlock: (block) => pacer.pace(multiplier * block.rateBytesPerSec, block.sizeBytes, block.nowMs),
        afterBlock: (block) => pacer.written(block.sizeBytes, block.nowMs),
        end: () => pacer.end(),
        report: () => pacer.report(reason),
      };
    },
  };
}
