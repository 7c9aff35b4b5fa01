/**
 * media: the paper's rate. After the startup phase (the first `startupSec` of media at full speed:
 * for segments, those starting within the first `startupSec` of the presentation; for a
 * progressive range, `startupSec` of media from where it starts, so a seek starts anew, like a new
 * connection in the paper), R is the media's own rate: a segment's size over its duration, a
 * progressive block's bytes over the media seconds they carry (rate-plan.ts: exact per VBR block).
 */
import { MediaClock, segmentRateBytesPerSec, startupEndByte, type VbrBlocks } from '../rate-plan.js';
import { constantRate, type MediaRates, type MediaResponse, type RatePlan, type RateRule } from './rate-rule.js';

export interface MediaRateOptions {
  readonly startupSec: number;
}

/** Clock-backed rates of a progressive file's bytes, anchored at the given offsets (see MediaClock). */
function clockRates(blocks: VbrBlocks, cutOffsets: readonly number[]): MediaRates {
  const clock = new MediaClock(blocks, cutOffsets);
  return {
    rateAt: (offset, sizeBytes) => clock.rateAt(offset, sizeBytes),
    stepsWithin: (startOffset, endOffset) => clock.stepsWithin(startOffset, endOffset),
  };
}

/** A progressive response's VBR blocks (every media response is a segment or a progressive range). */
function progressiveBlocks(response: MediaResponse): VbrBlocks {
  if (response.progressive === undefined)
    throw new Error(`media response ${response.file} has neither segment nor progressive facts`);
  return response.progressive.blocks;
}

/**
 * The media's own rate of a response's bytes and nothing else (a rule that needs no plan from it):
 * a segment's size over its duration, a progressive range's blocks with the range's ends as anchors.
 */
export function mediaRatesOf(response: MediaResponse): MediaRates {
  const { segment } = response;
  if (segment !== undefined) return constantRate(segmentRateBytesPerSec(segment));
  return clockRates(progressiveBlocks(response), [response.rangeStart, response.rangeEnd + 1]);
}

/** The paper's plan for a response: also what other rules fall back to (progressive files, records' media rate). */
export function mediaRatePlan(response: MediaResponse, options: MediaRateOptions): RatePlan {
  const { segment } = response;
  if (segment !== undefined) {
    const rateBytesPerSec = segmentRateBytesPerSec(segment);
    const startup = segment.presentationSec < options.startupSec;
    const media = constantRate(rateBytesPerSec);
    return {
      startupEndOffset: startup ? response.rangeEnd + 1 : response.rangeStart,
      ...media,
      media,
      reason:
        `segment ${segment.number} at ${segment.presentationSec.toFixed(1)} ` +
        's: ' +
        (startup
          ? `within the first ${options.startupSec} s, full speed`
          : `R = ${Math.round(rateBytesPerSec * 8)} bit/s (its own size / duration)`),
      headers: {},
    };
  }
  const blocks = progressiveBlocks(response);
  const startupEnd = Math.min(
    response.rangeEnd + 1,
    Math.max(
      response.rangeStart,
      startupEndByte(blocks.map, response.rangeStart, options.startupSec, blocks.fileSizeBytes),
    ),
  );
  const media = clockRates(blocks, [response.rangeStart, startupEnd, response.rangeEnd + 1]);
  return {
    startupEndOffset: startupEnd,
    ...media,
    media,
    reason:
      `progressive from byte ${response.rangeStart}: ${options.startupSec} s of media at ` +
      `full speed, then each byte at the rate of its ${blocks.windowSec} s VBR block`,
    headers: {},
  };
}

export function mediaRateRule(options: MediaRateOptions): RateRule {
  return { name: 'media', plan: ({ response }) => mediaRatePlan(response, options) };
}
