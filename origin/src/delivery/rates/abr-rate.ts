/**
 * abr: a rate that adaptive players can live with. A player picks its rung by comparing the
 * throughput it measures with the rungs' declared bitrates, with a safety margin (dash.js: the
 * highest rung below 0.9 x its estimate; hls.js: switching up needs 0.7 x its estimate above the
 * next rung's average). A segment paced at its own rate (the paper's R) arrives slower than its
 * rung's declared rate whenever it is below the rung's average, and the next rung is never
 * visible: the player walks down the ladder. So after the startup phase this rule aims at a
 * multiple of the next rung's declared bitrate, falling from `multiplierAtEmpty` with an empty
 * buffer to `multiplierAtFull` with a full one (the Sammy result, SIGCOMM'23); at the top rung,
 * `multiplierAtTop` x its own declared bitrate (enough to stay there); never below the segment's
 * own rate. An audio segment goes no slower than `multiplierAtTop` x the period's top video rung:
 * Shaka Player and ExoPlayer estimate throughput from every request, audio's too.
 *
 * Startup (full speed), whichever the client tells: with CMCD, `su` or a buffer (`bl`) below
 * `lowBufferMs`; without, segments within the first `startupSec` of the presentation, a viewer run
 * (see viewer-runs.ts) that has fetched less than `startupSec` of media (a new viewer, a seek), or
 * one whose buffer may be below `lowBufferMs`. CMCD `rtp` lowers the rate only down to what keeps the next
 * rung visible: dash.js sends rtp = 5 x br x d / bl, below br itself once its buffer passes
 * 10 segments, which would pin its estimate under its own rung. A CMCD `mtp` below the next rung
 * means the player's estimate cannot reach it: such a segment goes at full speed (if the path is
 * what holds it back, that costs nothing). When the path held the connection's last paced segment
 * back (it reached less than 0.7 of its aim, see path-evidence.ts), the aim is held to 1.25 x the
 * goodput the path gave, never below the segment's own rate: the flow still fills the link, and its
 * clamp no longer queues past a slow link's buffer; the clamp's floor falls from the paper's 10 packets to
 * `pathHold.floorPackets`, as a path that slow may hold fewer. Progressive files have no ladder: the paper's media
 * rate.
 */
import { CmsdObjectType, CmsdStreamType, encodeCmsdDynamic, encodeCmsdStatic } from '@svta/common-media-library/cmsd';
import { SfItem } from '@svta/common-media-library/structuredfield';
import type { PathHold } from '../path-evidence.js';
import type { ViewerRunState } from '../viewer-runs.js';
import { mediaRatePlan } from './media-rate.js';
import { constantRate, type RateRule, type SegmentFacts } from './rate-rule.js';

export interface AbrRateOptions {
  readonly startupSec: number;
  readonly multiplierAtEmpty: number;
  readonly multiplierAtFull: number;
  /** The multiple of the top rung's own bitrate (nothing to climb to: enough to stay). */
  readonly multiplierAtTop: number;
  /** Buffer (ms) at which the multiplier reaches `multiplierAtFull`. */
  readonly fullBufferMs: number;
  /** Below this buffer a segment goes at full speed, like startup. */
  readonly lowBufferMs: number;
  /** A connection the path holds: its clamp's floor in packets (path-evidence.ts; the enforcer's own otherwise). */
  readonly pathHold: { readonly floorPackets: number };
}

/** The CMCD keys the rule reads (kbit/s and ms, as CTA-5004 sends them). */
export interface AbrCmcd {
  readonly su?: boolean | undefined;
  readonly bl?: number | undefined;
  readonly rtp?: number | undefined;
  readonly mtp?: number | undefined;
}

export interface AbrInput {
  readonly segment: Pick<
    SegmentFacts,
    'presentationSec' | 'bitrateBps' | 'ladderBps' | 'renditionBps' | 'videoTopBps'
  > &
    Partial<Pick<SegmentFacts, 'kind'>>;
  readonly cmcd: AbrCmcd | undefined;
  readonly viewer: ViewerRunState | undefined;
  readonly path?: PathHold | undefined;
}

export type AbrDecision =
  | { readonly fullSpeed: true; readonly reason: string }
  | {
      readonly fullSpeed: false;
      readonly rateBps: number;
      readonly reason: string;
      /** The clamp's floor where the path holds the connection (undefined: the enforcer's). */
      readonly floorPackets?: number | undefined;
    };

/** The rung above `renditionBps` on the ladder, or undefined at the top. */
export function nextRungBps(ladderBps: readonly number[], renditionBps: number): number | undefined {
  return ladderBps.find((bitrate) => bitrate > renditionBps * 1.001);
}

export function bufferMultiplier(
  bufferMs: number,
  options: Pick<AbrRateOptions, 'multiplierAtEmpty' | 'multiplierAtFull' | 'fullBufferMs'>,
): number {
  const fill = options.fullBufferMs > 0 ? Math.min(1, Math.max(0, bufferMs / options.fullBufferMs)) : 1;
  return options.multiplierAtEmpty + (options.multiplierAtFull - options.multiplierAtEmpty) * fill;
}

/** A CMCD number worth reading: finite and not negative (anything else counts as not sent). */
function usable(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** Pure: the decision for one segment. */
export function abrDecision(input: AbrInput, options: AbrRateOptions): AbrDecision {
  const { segment, viewer } = input;
  const cmcd =
    input.cmcd === undefined
      ? undefined
      : { su: input.cmcd.su, bl: usable(input.cmcd.bl), rtp: usable(input.cmcd.rtp), mtp: usable(input.cmcd.mtp) };
  // A client that sends its buffer (CMCD) says when it is starting up; otherwise the origin infers it.
  if (cmcd?.su === true) return { fullSpeed: true, reason: 'CMCD su: startup' };
  let bufferMs: number;
  let bufferSource: string;
  if (cmcd?.bl !== undefined) {
    bufferMs = cmcd.bl;
    bufferSource = `CMCD bl ${Math.round(bufferMs)} ms`;
  } else {
    if (segment.presentationSec < options.startupSec)
      return { fullSpeed: true, reason: `within the first ${options.startupSec} s of the presentation` };
    if (viewer === undefined) {
      bufferMs = options.fullBufferMs;
      bufferSource = 'buffer unknown';
    } else {
      if (viewer.fetchedSec < options.startupSec)
        return {
          fullSpeed: true,
          reason:
            `the viewer's run has fetched ${viewer.fetchedSec.toFixed(1)} s of media, less ` +
            `than ${options.startupSec} s (startup)`,
        };
      bufferMs = Math.max(0, viewer.bufferLowerBoundSec * 1000);
      bufferSource = `buffer >= ${(bufferMs / 1000).toFixed(1)} s (fetched - elapsed)`;
    }
  }
  if (bufferMs < options.lowBufferMs)
    return { fullSpeed: true, reason: `${bufferSource} below ${options.lowBufferMs / 1000} s` };
  const next = nextRungBps(segment.ladderBps, segment.renditionBps);
  const baseBps = next ?? segment.renditionBps;
  const baseLabel = next === undefined ? 'its own (top) rung' : 'the next rung';
  if (cmcd?.mtp !== undefined && cmcd.mtp * 1000 < baseBps) {
    return {
      fullSpeed: true,
      reason:
        `CMCD mtp ${cmcd.mtp} kbit/s below ${baseLabel} ${Math.round(baseBps / 1000)} ` +
        `kbit/s: a cap would keep the estimate there`,
    };
  }
  // The buffer's multiplier lets the player see the next rung sooner when it has less in hand; at the top
  // there is nothing to climb to, and a smaller multiple keeps the player there.
  const floorMultiplier = next === undefined ? options.multiplierAtTop : options.multiplierAtFull;
  const multiplier = next === undefined ? options.multiplierAtTop : bufferMultiplier(bufferMs, options);
  let rateBps = Math.max(multiplier * baseBps, segment.bitrateBps);
  let reason =
    `${bufferSource}: ${multiplier.toFixed(2)} ` +
    `x ${baseLabel} ${Math.round(baseBps / 1000)} ` +
    'kbit/s' +
    (rateBps > multiplier * baseBps
      ? `, raised to the segment's own ${Math.round(segment.bitrateBps / 1000)} kbit/s`
      : '');
  if (cmcd?.rtp !== undefined && cmcd.rtp * 1000 < rateBps) {
    const floorBps = Math.max(floorMultiplier * baseBps, segment.bitrateBps);
    const capped = Math.max(cmcd.rtp * 1000, floorBps);
    if (capped < rateBps) {
      rateBps = capped;
      reason += `, lowered toward rtp ${cmcd.rtp} kbit/s (not below ${floorMultiplier} x ${baseLabel})`;
    }
  }
  // Shaka Player and ExoPlayer estimate throughput from every request, audio's too: an audio segment
  // paced at a multiple of its own few hundred kbit/s reads to them as a slow path, and they leave the
  // top video rung (Shaka on fast-20mbit: 89 % of bulk's bitrate; 100 % with this). Tiny segments: at
  // the video's top multiple they cost the link nothing, and every sample shows what the top rung needs.
  if (segment.kind === 'audio' && segment.videoTopBps !== undefined) {
    const pathFloorBps = options.multiplierAtTop * segment.videoTopBps;
    if (rateBps < pathFloorBps) {
      rateBps = pathFloorBps;
      reason +=
        `, raised to ${options.multiplierAtTop} x the top video rung ${Math.round(segment.videoTopBps / 1000)} ` +
        'kbit/s (players that estimate from every request see audio too)';
    }
  }
  // Last: a path that held the previous segment back would hold this one too, and an aim above it only queues.
  const path = input.path;
  if (path === undefined) return { fullSpeed: false, rateBps, reason };
  const heldBps = Math.max(path.holdBps, segment.bitrateBps);
  if (heldBps >= rateBps) return { fullSpeed: false, rateBps, reason };
  const got =
    path.aimBps === undefined
      ? `a ${Math.round(path.goodputBps / 1000)} kbit/s link at full speed`
      : `${Math.round(path.goodputBps / 1000)} of its ${Math.round(path.aimBps / 1000)} kbit/s`;
  // A path this slow can hold fewer packets than the paper's floor of 10: at that floor the clamp alone overflows it.
  const { floorPackets } = options.pathHold;
  return {
    fullSpeed: false,
    rateBps: heldBps,
    reason:
      `${reason}, held to ${Math.round(heldBps / 1000)} kbit/s: the connection's last segment got ${got} (the ` +
      `path's limit), clamp floor ${floorPackets} packets`,
    floorPackets,
  };
}

function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

export function abrRateRule(options: AbrRateOptions): RateRule {
  return {
    name: 'abr',
    plan: ({ response, viewer, path }) => {
      const segment = response.segment;
      if (segment === undefined) return mediaRatePlan(response, options);
      const media = constantRate(segment.sizeBytes / segment.durationSec);
      const decision = abrDecision({ segment, cmcd: response.cmcd, viewer, path }, options);
      const headers: Record<string, string> = {
        'cmsd-static': encodeCmsdStatic({
          ot: segment.kind === 'audio' ? CmsdObjectType.AUDIO : CmsdObjectType.VIDEO,
          st: CmsdStreamType.VOD,
        }),
      };
      if (decision.fullSpeed) {
        headers['server-timing'] = `rate;desc=${quoted(`full speed: ${decision.reason}`)}`;
        return {
          startupEndOffset: response.rangeEnd + 1,
          ...media,
          media,
          reason: `abr: full speed: ${decision.reason}`,
          headers,
        };
      }
      const kbps = Math.round(decision.rateBps / 1000);
      headers['cmsd-dynamic'] = encodeCmsdDynamic([new SfItem('trickle', { etp: kbps })]);
      headers['server-timing'] = `rate;desc=${quoted(`${kbps} kbit/s: ${decision.reason}`)}`;
      const target = constantRate(decision.rateBps / 8);
      return {
        startupEndOffset: response.rangeStart,
        ...target,
        media,
        reason: `abr: ${decision.reason}`,
        headers,
        ...(decision.floorPackets === undefined ? {} : { floorPackets: decision.floorPackets }),
      };
    },
  };
}
