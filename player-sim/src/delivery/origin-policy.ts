/**
 * Every delivery policy of the origin, modelled from the origin's own rules and constants
 * (`@trickle/origin/rules`): the policy's rate rule says what rate a segment gets (none during
 * startup; the paper's media rate; the ABR-aware decision and Sammy's, fed the buffer when the
 * player sends CMCD and the origin's viewer run otherwise), and its enforcer's effect on throughput caps the
 * transfer: a token bucket or kernel pacing at headroom x the rate; the cwnd clamp at gain x the
 * rate, or at the rate itself when the clamp sits at its floor and writes are throttled. Below
 * the cap the link decides, which is catch-up under every enforcer. The ABR-aware rule's hold on a
 * path slower than its aim (path-evidence.ts) is left out: it lowers an aim the link could not
 * carry to 1.25 x what the link gave, and the model's link, which has no queue to overflow, gives
 * the same throughput under either.
 */
import {
  abrDecision,
  defaultDeliveryConfig,
  enforcers,
  policyCatalogue,
  sammyDecision,
  ViewerRuns,
  type DeliveryConfig,
  type PolicyName,
} from '@trickle/origin/rules';
import { mssBytes } from '../network.js';
import { slowStartAfterIdle, type DeliveryModel, type DeliveryRequest } from './delivery-model.js';

export function originPolicyModel(name: PolicyName, config: DeliveryConfig = defaultDeliveryConfig): DeliveryModel {
  const pair = policyCatalogue[name];
  const enforcer = enforcers[pair.enforcer](config);
  const runs = new ViewerRuns();
  const abrOptions = { ...config.abr, startupSec: config.startupSec };
  const sammyOptions = { ...config.sammy, startupSec: config.startupSec };

  /** The rule's target rate (bits/s), or undefined for full speed. */
  const rate = (request: DeliveryRequest): number | undefined => {
    switch (pair.rate) {
      case 'unthrottled':
        return undefined;
      case 'media':
        return request.mediaStartSec < config.startupSec ? undefined : request.segmentBitrateBps;
      case 'abr': {
        const viewer = runs.join(
          'viewer',
          { number: request.segmentNumber, startSec: request.mediaStartSec, durationSec: request.durationSec },
          request.nowMs,
        );
        const segment = {
          presentationSec: request.mediaStartSec,
          bitrateBps: request.segmentBitrateBps,
          ladderBps: request.ladderBps,
          renditionBps: request.renditionBps,
        };
        const decision = abrDecision(
          {
            segment,
            cmcd: request.cmcd ? { su: !request.startedUp, bl: request.bufferSec * 1000 } : undefined,
            viewer,
          },
          abrOptions,
        );
        return decision.fullSpeed ? undefined : decision.rateBps;
      }
      case 'sammy': {
        const viewer = runs.join(
          'viewer',
          { number: request.segmentNumber, startSec: request.mediaStartSec, durationSec: request.durationSec },
          request.nowMs,
        );
        const decision = sammyDecision(
          {
            segment: { presentationSec: request.mediaStartSec, ladderBps: request.ladderBps },
            cmcd: request.cmcd ? { su: !request.startedUp, bl: request.bufferSec * 1000 } : undefined,
            viewer,
          },
          sammyOptions,
        );
        return decision.initial ? undefined : decision.rateBps;
      }
    }
  };

  /** What the enforcer lets through at a target rate (bits/s). */
  const cap = (rateBps: number, rttMs: number): number | undefined => {
    if (!enforcer.paced) return undefined;
    // The simulated path has no queue: its RTT is the base RTT, where a clamp from srtt and one from the minimum agree.
    if (pair.enforcer === 'cwnd-clamp' || pair.enforcer === 'cwnd-clamp-min-rtt') {
      const clampPackets = (enforcer.headroom * (rateBps / 8) * (rttMs / 1000)) / mssBytes;
      return clampPackets < config.trickle.floorPackets ? rateBps : enforcer.headroom * rateBps;
    }
    return enforcer.headroom * rateBps;
  };

  return {
    name,
    transfer: (request) => {
      const target = rate(request);
      return {
        slowStart: slowStartAfterIdle(request),
        capBps: target === undefined ? undefined : cap(target, request.rttMs),
      };
    },
  };
}
