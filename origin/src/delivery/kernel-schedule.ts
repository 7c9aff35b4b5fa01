/**
 * The throttling phase of a response as a schedule the kernel can hold: R by byte offset, from
 * the rate plan's blocks. Neighbouring blocks of equal R are one piece; when there are more
 * pieces than the program holds, neighbours are merged into pieces whose R is their bytes over
 * the seconds they take at their own R, so the schedule's time is the plan's to the microsecond
 * (the invariant of the exact per-block rates), only with coarser steps. Pure.
 */
import type { RatePlan } from './rates/rate-rule.js';

/** A piece of the schedule in file offsets: [startOffset, endOffset) at rateBytesPerSec. */
export interface FilePiece {
  readonly startOffset: number;
  readonly endOffset: number;
  readonly rateBytesPerSec: number;
}

/** Relative difference under which neighbouring blocks' rates are the same rate. */
const sameRateTolerance = 1e-9;

/** The plan's pieces over [throttleOffset, rangeEnd], at most `maxPieces` of them; empty when nothing is throttled. */
export function kernelSchedule(
  plan: Pick<RatePlan, 'rateAt'>,
  throttleOffset: number,
  rangeEnd: number,
  blockBytes: number,
  maxPieces: number,
): FilePiece[] {
  const blocks: FilePiece[] = [];
  for (let offset = throttleOffset; offset <= rangeEnd; offset += blockBytes) {
    const endOffset = Math.min(rangeEnd + 1, offset + blockBytes);
    const rateBytesPerSec = plan.rateAt(offset, endOffset - offset);
    const last = blocks.at(-1);
    // Equal up to float noise (one media block's bytes over its seconds, cut at different offsets):
    // merged at the bytes over the time both take, so the merge changes no time.
    if (last !== undefined && Math.abs(last.rateBytesPerSec - rateBytesPerSec) <= sameRateTolerance * rateBytesPerSec) {
      const lastSeconds = (last.endOffset - last.startOffset) / last.rateBytesPerSec;
      blocks[blocks.length - 1] = {
        ...last,
        endOffset,
        rateBytesPerSec: (endOffset - last.startOffset) / (lastSeconds + (endOffset - offset) / rateBytesPerSec),
      };
    } else blocks.push({ startOffset: offset, endOffset, rateBytesPerSec });
  }
  if (blocks.length <= maxPieces) return blocks;
  const perPiece = Math.ceil(blocks.length / maxPieces);
  const pieces: FilePiece[] = [];
  for (let i = 0; i < blocks.length; i += perPiece) {
    const group = blocks.slice(i, i + perPiece);
    const seconds = group.reduce(
      (sum, block) => sum + (block.endOffset - block.startOffset) / block.rateBytesPerSec,
      0,
    );
    const startOffset = group[0]!.startOffset;
    const endOffset = group.at(-1)!.endOffset;
    pieces.push({ startOffset, endOffset, rateBytesPerSec: (endOffset - startOffset) / seconds });
  }
  return pieces;
}
