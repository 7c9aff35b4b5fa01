/**
 * The media side of a response's delivery plan: which bytes are startup and what rate each block
 * should arrive at, from the media index. Segments: the segment's own size over its own duration;
 * a segment starting within the first `startupSec` of the presentation is startup as a whole.
 * Progressive MP4: the startup phase is `startupSec` of media from where the range starts (a
 * seek starts anew, like a new connection in the paper), then each block gets the rate of the
 * media it carries, averaged over `rateWindowSec`.
 */
import type { RenditionIndex, SegmentEntry, ProgressiveIndex } from '../media/media-index.js';
import type { MediaRatePlan } from './policies/delivery-policy.js';
import { progressiveRateBytesPerSec, segmentRateBytesPerSec, startupEndByte } from './rate-plan.js';

export interface PlanOptions {
  readonly startupSec: number;
  readonly rateWindowSec: number;
}

export function segmentPlan(rendition: RenditionIndex, segment: SegmentEntry, rangeStart: number, rangeEnd: number, options: PlanOptions): MediaRatePlan {
  const rateBytesPerSec = segmentRateBytesPerSec(segment);
  const presentationSec = segment.startSec - (rendition.segments[0]?.startSec ?? 0);
  const startup = presentationSec < options.startupSec;
  return {
    startupEndOffset: startup ? rangeEnd + 1 : rangeStart,
    rateAt: () => rateBytesPerSec,
    reason: `segment ${segment.number} at ${presentationSec.toFixed(1)} s: ${startup ? `within the first ${options.startupSec} s, full speed` : `R = ${Math.round(rateBytesPerSec * 8)} bit/s (its own size / duration)`}`,
  };
}

export function progressivePlan(progressive: ProgressiveIndex, rangeStart: number, rangeEnd: number, options: PlanOptions): MediaRatePlan {
  const endOffset = startupEndByte(progressive.byteTime, rangeStart, options.startupSec);
  return {
    startupEndOffset: Math.min(rangeEnd + 1, Math.max(rangeStart, endOffset)),
    rateAt: (offset) => progressiveRateBytesPerSec(progressive.byteTime, offset, options.rateWindowSec, progressive.sizeBytes),
    reason: `progressive from byte ${rangeStart}: ${options.startupSec} s of media at full speed, then the rate of each block's media over ${options.rateWindowSec} s`,
  };
}
