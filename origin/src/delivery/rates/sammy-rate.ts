/**
 * sammy: Netflix's pace-rate selection, as Algorithm 1 of Spang et al., "Sammy: smoothing video
 * traffic to be a friendly internet neighbor" (SIGCOMM 2023, section 4) has it:
 *
 *   if ABR is in initial phase: pace rate <- no pacing
 *   else: B <- buffer / max buffer; multiplier <- c1 * B + c0 * (1 - B);
 *         pace rate <- multiplier * (highest bitrate in the ladder)
 *
 * with the production values of section 5 as defaults: c0 = 3.2 (buffer empty), c1 = 2.8 (full).
 * The paper's client knows its buffer; an origin learns it from CMCD: `su` marks the initial phase,
 * `bl` is the buffer. Without CMCD (this project's fallback, as for the ABR-aware rule): the initial
 * phase is a segment within the presentation's first `startupSec`, or a viewer run (a new viewer, a
 * seek) that has fetched less than that; the buffer is the viewer run's lower bound (fetched media
 * less the time since it started), and with no run at all it is taken as empty (c0: the larger
 * multiple, the safer for the viewer). "Max buffer" is the player's (config `sammy.maxBufferMs`).
 * The rate is the pace rate itself: the `sammy` policy enforces it by kernel pacing with no
 * headroom (section 3.2: application-informed pacing). Progressive files have no ladder: the
 * paper's media rate, as under the other ABR-aware rule.
 */
import type { ViewerRunState } from '../viewer-runs.js';
import type { AbrCmcd } from './abr-rate.js';
import { mediaRatePlan } from './media-rate.js';
import { constantRate, type RateRule, type SegmentFacts } from './rate-rule.js';

export interface SammyRateOptions {
  /** The multiple of the highest bitrate with an empty buffer (the paper's production value: 3.2). */
  readonly c0: number;
  /** ... and with a full one (2.8). */
  readonly c1: number;
  /** The player's maximum buffer, ms: B = buffer / this, at most 1. */
  readonly maxBufferMs: number;
  /**
   * Without CMCD: segments within this much of the presentation's start, or of a viewer run's, are the initial phase.
   */
  readonly startupSec: number;
}

export interface SammyInput {
  readonly segment: Pick<SegmentFacts, 'presentationSec' | 'ladderBps'>;
  readonly cmcd: Pick<AbrCmcd, 'su' | 'bl'> | undefined;
  readonly viewer: ViewerRunState | undefined;
}

export type SammyDecision =
  | { readonly initial: true; readonly reason: string }
  | {
      readonly initial: false;
      readonly rateBps: number;
      readonly multiplier: number;
      readonly bufferFraction: number;
      readonly reason: string;
    };

/** Pure: Algorithm 1's pace rate for one segment. */
export function sammyDecision(input: SammyInput, options: SammyRateOptions): SammyDecision {
  const { segment, viewer } = input;
  const bl =
    input.cmcd?.bl !== undefined && Number.isFinite(input.cmcd.bl) && input.cmcd.bl >= 0 ? input.cmcd.bl : undefined;
  if (input.cmcd?.su === true) return { initial: true, reason: 'initial phase (CMCD su): no pacing' };
  let bufferMs: number;
  let source: string;
  if (bl !== undefined) {
    bufferMs = bl;
    source = `CMCD bl ${Math.round(bl)} ms`;
  } else {
    if (segment.presentationSec < options.startupSec)
      return { initial: true, reason: `initial phase (the presentation's first ${options.startupSec} s): no pacing` };
    if (viewer !== undefined && viewer.fetchedSec < options.startupSec)
      return {
        initial: true,
        reason:
          `initial phase (the viewer's run has fetched ${viewer.fetchedSec.toFixed(1)} s ` +
          `of ${options.startupSec} s): no pacing`,
      };
    bufferMs = viewer === undefined ? 0 : Math.max(0, viewer.bufferLowerBoundSec * 1000);
    source =
      viewer === undefined
        ? 'buffer unknown, taken as empty'
        : `buffer >= ${(bufferMs / 1000).toFixed(1)} s (fetched - elapsed)`;
  }
  const bufferFraction = options.maxBufferMs > 0 ? Math.min(1, Math.max(0, bufferMs / options.maxBufferMs)) : 1;
  const multiplier = options.c1 * bufferFraction + options.c0 * (1 - bufferFraction);
  const highestBps = Math.max(...segment.ladderBps);
  return {
    initial: false,
    rateBps: multiplier * highestBps,
    multiplier,
    bufferFraction,
    reason:
      `${source}: B ${bufferFraction.toFixed(2)}, ${multiplier.toFixed(2)} x the highest ` +
      `bitrate ${Math.round(highestBps / 1000)} kbit/s`,
  };
}

function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

export function sammyRateRule(options: SammyRateOptions): RateRule {
  return {
    name: 'sammy',
    plan: ({ response, viewer }) => {
      const segment = response.segment;
      if (segment === undefined) return mediaRatePlan(response, options);
      const media = constantRate(segment.sizeBytes / segment.durationSec);
      const decision = sammyDecision({ segment, cmcd: response.cmcd, viewer }, options);
      if (decision.initial) {
        return {
          startupEndOffset: response.rangeEnd + 1,
          ...media,
          media,
          reason: `sammy: ${decision.reason}`,
          headers: { 'server-timing': `rate;desc=${quoted(`full speed: ${decision.reason}`)}` },
        };
      }
      const kbps = Math.round(decision.rateBps / 1000);
      const pace = constantRate(decision.rateBps / 8);
      return {
        startupEndOffset: response.rangeStart,
        ...pace,
        media,
        reason: `sammy: ${decision.reason}`,
        headers: { 'server-timing': `rate;desc=${quoted(`${kbps} kbit/s: ${decision.reason}`)}` },
      };
    },
  };
}
