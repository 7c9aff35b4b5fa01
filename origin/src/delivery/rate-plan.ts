/**
 * Target rates from the media itself, per VBR block rather than per file. A segment's rate is its
 * own size over its own duration. A progressive MP4 is cut into VBR blocks of `windowSec` of media
 * (about one GOP) at fixed media times, each with its own rate: its bytes over the media seconds
 * they carry (from the sample tables). Rates are exact by construction: sending any run of whole
 * blocks at their rates takes exactly the media time the run carries, and a response's partial
 * blocks (where its range, or its throttling phase, starts or ends inside a block) get the rate
 * of exactly their own bytes. So the time to deliver any range at R equals the media time it
 * carries, while R still follows the media scene by scene.
 *
 * (A rate taken from a window that starts at each block's own offset is not exact: before a drop
 * in bitrate it gives high-rate bytes the low rate ahead of them, and the many bytes of a
 * high-rate scene outweigh the few of a low-rate one, so such a plan ran 22 % behind the media.)
 */
import type { SegmentEntry } from '../media/media-index.js';
import type { ByteTimeMap } from '../media/sample-table.js';

export function segmentRateBytesPerSec(segment: Pick<SegmentEntry, 'sizeBytes' | 'durationSec'>): number {
  return segment.sizeBytes / segment.durationSec;
}

/**
 * The byte offset at which a response starting at `rangeStart` has sent `startupSec` of media; the
 * file's end when that is past the last sample (a startup phase longer than the rest of the media
 * covers all of it, trailing bytes included).
 */
export function startupEndByte(
  map: ByteTimeMap,
  rangeStart: number,
  startupSec: number,
  fileSizeBytes = Number.POSITIVE_INFINITY,
): number {
  const endSec = map.mediaTimeAtByte(rangeStart) + startupSec;
  return endSec >= map.mediaTimeAtByte(Number.MAX_SAFE_INTEGER) ? fileSizeBytes : map.byteAtMediaTime(endSec);
}

/** A progressive file cut into VBR blocks at every `windowSec` of media. */
export class VbrBlocks {
  /** Block k covers bytes [startBytes[k], startBytes[k + 1]) (the last one up to the file's end). */
  readonly startBytes: Float64Array;
  /** The media time complete when block k starts (the map's, so consecutive blocks telescope exactly). */
  readonly startSec: Float64Array;

  constructor(
    readonly map: ByteTimeMap,
    readonly windowSec: number,
    readonly fileSizeBytes: number,
  ) {
    const durationSec = map.mediaTimeAtByte(fileSizeBytes);
    const starts: number[] = [0];
    for (let k = 1; k * windowSec < durationSec; k++) {
      const byte = map.byteAtMediaTime(k * windowSec);
      if (byte > starts[starts.length - 1]! && byte < fileSizeBytes) starts.push(byte);
    }
    starts.push(fileSizeBytes);
    this.startBytes = Float64Array.from(starts);
    this.startSec = Float64Array.from(starts, (byte) => map.mediaTimeAtByte(byte));
  }

  get count(): number {
    return this.startBytes.length - 1;
  }

  /** The block holding byte `offset` (the last block for offsets at or past the end). */
  blockAt(offset: number): number {
    let lo = 0;
    let hi = this.count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.startBytes[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Block k's rate: its bytes over the media seconds they carry (bytes/s); undefined for a block that carries no media
   * time.
   */
  rateOf(k: number): number | undefined {
    const seconds = this.startSec[k + 1]! - this.startSec[k]!;
    return seconds > 0 ? (this.startBytes[k + 1]! - this.startBytes[k]!) / seconds : undefined;
  }
}

const vbrBlocksCache = new WeakMap<ByteTimeMap, Map<number, VbrBlocks>>();

/** The VBR blocks of a progressive file, made once per file and window. */
export function vbrBlocksOf(map: ByteTimeMap, windowSec: number, fileSizeBytes: number): VbrBlocks {
  let byWindow = vbrBlocksCache.get(map);
  if (byWindow === undefined) {
    byWindow = new Map();
    vbrBlocksCache.set(map, byWindow);
  }
  let blocks = byWindow.get(windowSec);
  if (blocks === undefined) {
    blocks = new VbrBlocks(map, windowSec, fileSizeBytes);
    byWindow.set(windowSec, blocks);
  }
  return blocks;
}

/**
 * The media clock of one response: byte offset -> media seconds, piecewise linear through the
 * VBR block boundaries and through the response's own cut points (where its range starts, where
 * its throttling phase starts, where its range ends), each anchored at the map's media time (a
 * cut inside a sample counts that sample pro rata). The
 * seconds a run of bytes should take at R are the clock's advance over it, so rates of pieces
 * between anchors are uniform and a sum over any partition telescopes to the map's media time
 * between its ends.
 */
export class MediaClock {
  /** Anchors inside blocks, by block: sorted [byte, seconds] pairs strictly inside the block. */
  private readonly cuts = new Map<number, [number, number][]>();
  /** The whole file's mean rate, for stretches that carry no media time at all. */
  private readonly meanBytesPerSec: number;

  constructor(
    private readonly blocks: VbrBlocks,
    cutOffsets: readonly number[],
  ) {
    const durationSec = blocks.startSec[blocks.count]!;
    this.meanBytesPerSec = durationSec > 0 ? blocks.fileSizeBytes / durationSec : 1;
    for (const offset of cutOffsets) {
      const k = blocks.blockAt(offset);
      if (offset <= blocks.startBytes[k]! || offset >= blocks.startBytes[k + 1]!) continue;
      const list = this.cuts.get(k) ?? [];
      if (!list.some(([byte]) => byte === offset)) list.push([offset, blocks.map.mediaTimeAtByteInterpolated(offset)]);
      list.sort((a, b) => a[0] - b[0]);
      this.cuts.set(k, list);
    }
  }

  /** Media seconds at byte `offset` (clamped to the file). */
  secondsAt(offset: number): number {
    const blocks = this.blocks;
    const at = Math.min(Math.max(0, offset), blocks.fileSizeBytes);
    const k = blocks.blockAt(at);
    let fromByte = blocks.startBytes[k]!;
    let fromSec = blocks.startSec[k]!;
    let toByte = blocks.startBytes[k + 1]!;
    let toSec = blocks.startSec[k + 1]!;
    for (const [byte, seconds] of this.cuts.get(k) ?? []) {
      if (byte <= at) {
        fromByte = byte;
        fromSec = seconds;
      } else {
        toByte = byte;
        toSec = seconds;
        break;
      }
    }
    return toByte > fromByte ? fromSec + ((at - fromByte) / (toByte - fromByte)) * (toSec - fromSec) : fromSec;
  }

  /** The clock's anchors strictly between the two offsets, ascending: between them its rate is uniform. */
  stepsWithin(startOffset: number, endOffset: number): number[] {
    const blocks = this.blocks;
    const steps: number[] = [];
    for (let k = blocks.blockAt(startOffset); k < blocks.count; k++) {
      const blockStart = blocks.startBytes[k]!;
      if (blockStart >= endOffset) break;
      if (blockStart > startOffset) steps.push(blockStart);
      for (const [byte] of this.cuts.get(k) ?? []) if (byte > startOffset && byte < endOffset) steps.push(byte);
    }
    return steps;
  }

  /** R of the bytes [offset, offset + sizeBytes): their bytes over the media seconds they carry (bytes/s). */
  rateAt(offset: number, sizeBytes: number): number {
    const seconds = this.secondsAt(offset + sizeBytes) - this.secondsAt(offset);
    if (seconds > 0) return sizeBytes / seconds;
    // Bytes that carry no media time at all (past the last sample): the rate of their block, or of the file.
    return this.blocks.rateOf(this.blocks.blockAt(offset)) ?? this.meanBytesPerSec;
  }
}
