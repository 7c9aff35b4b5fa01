/**
 * Target rates from the media itself, per VBR block rather than per file: a segment's rate is its
 * own size over its own duration; a block of a progressive MP4 gets the rate of the media around
 * it (bytes over media time in a window, by default one GOP), from the sample-table map. The
 * startup phase is measured in media seconds from where the response starts (a seek starts anew).
 */
import type { SegmentEntry } from '../media/media-index.js';
import type { ByteTimeMap } from '../media/sample-table.js';

export function segmentRateBytesPerSec(segment: Pick<SegmentEntry, 'sizeBytes' | 'durationSec'>): number {
  return segment.sizeBytes / segment.durationSec;
}

/**
 * Rate (bytes/s) of the media carried around byte `offset` of a progressive file: the bytes that
 * carry the `windowSec` of media starting at the media time of `offset`, over `windowSec`.
 * Near the end of the file the window shrinks to what is left.
 */
export function progressiveRateBytesPerSec(map: ByteTimeMap, offset: number, windowSec: number, fileSizeBytes: number): number {
  const startSec = map.mediaTimeAtByte(offset);
  const endByte = Math.min(fileSizeBytes, map.byteAtMediaTime(startSec + windowSec));
  const carriedSec = map.mediaTimeAtByte(endByte) - startSec;
  if (carriedSec <= 0 || endByte <= offset) {
    const total = map.mediaTimeAtByte(fileSizeBytes);
    return total > 0 ? fileSizeBytes / total : 0;
  }
  return (endByte - offset) / carriedSec;
}

/** The byte offset at which a response starting at `rangeStart` has sent `startupSec` of media. */
export function startupEndByte(map: ByteTimeMap, rangeStart: number, startupSec: number): number {
  return map.byteAtMediaTime(map.mediaTimeAtByte(rangeStart) + startupSec);
}
