/**
 * The segment index box (`sidx`, ISO/IEC 14496-12 8.16.3) of an on-demand file (DASH SegmentBase):
 * each subsegment's bytes, earliest presentation time and duration, as the packager wrote them.
 * A hierarchical index (references to further `sidx` boxes, as some packagers write for long
 * files) is followed down to its media subsegments.
 */
import { BoxReader, type MediaFileReader } from './boxes.js';
import type { ByteSpan } from './manifest.js';

export interface SidxSubsegment {
  /** The subsegment's first byte in the file. */
  readonly offset: number;
  readonly sizeBytes: number;
  /** Earliest presentation time, in the index's timescale. */
  readonly startTicks: number;
  readonly durationTicks: number;
}

export interface SegmentIndex {
  readonly referenceId: number;
  readonly timescale: number;
  readonly subsegments: readonly SidxSubsegment[];
}

/** At most this many levels of sidx boxes pointing at sidx boxes (a loop in a malformed file must end). */
const maxDepth = 8;

/** Parses one sidx box (`buffer` holds it whole; `fileOffset` is where it lies in the file). */
export function parseSidx(
  buffer: Buffer,
  fileOffset: number,
  source: string,
): {
  referenceId: number;
  timescale: number;
  references: { isIndex: boolean; offset: number; sizeBytes: number; startTicks: number; durationTicks: number }[];
} {
  const reader = new BoxReader(buffer, source);
  const box = reader.boxAt(0, buffer.length);
  if (box.type !== 'sidx') throw reader.corrupt(`expected a sidx box, found "${box.type}"`, fileOffset);
  const { version } = reader.fullBoxHeader(box);
  let at = box.payloadStart + 4;
  const referenceId = reader.u32(at, box.end);
  const timescale = reader.u32(at + 4, box.end);
  if (timescale === 0) throw reader.corrupt('sidx timescale is 0', fileOffset);
  at += 8;
  const earliest = version === 0 ? reader.u32(at, box.end) : reader.u64(at, box.end);
  const firstOffset = version === 0 ? reader.u32(at + 4, box.end) : reader.u64(at + 8, box.end);
  at += version === 0 ? 8 : 16;
  const count = reader.u16(at + 2, box.end);
  at += 4;
  reader.need(at, count * 12, box.end);
  const references = [];
  let offset = fileOffset + box.end + firstOffset;
  let startTicks = earliest;
  for (let i = 0; i < count; i++) {
    const word = reader.buffer.readUInt32BE(at + i * 12);
    const durationTicks = reader.buffer.readUInt32BE(at + i * 12 + 4);
    const sizeBytes = word & 0x7fffffff;
    references.push({ isIndex: word >>> 31 === 1, offset, sizeBytes, startTicks, durationTicks });
    offset += sizeBytes;
    startTicks += durationTicks;
  }
  return { referenceId, timescale, references };
}

/**
 * The media subsegments of a file's index: the sidx at `indexRange` (as the MPD gives it), else the
 * first top-level sidx found by reading box headers.
 */
export async function readSegmentIndex(file: MediaFileReader, indexRange: ByteSpan | undefined): Promise<SegmentIndex> {
  let at: number;
  if (indexRange !== undefined) {
    at = indexRange.offset;
  } else {
    const boxes = await file.boxes();
    const sidx = boxes.find((b) => b.type === 'sidx');
    if (sidx === undefined)
      throw file.corrupt('an on-demand file (SegmentBase) with no sidx box to list its segments', 0);
    at = sidx.start;
  }
  const subsegments: SidxSubsegment[] = [];
  let top: { referenceId: number; timescale: number } | undefined;
  const walk = async (offset: number, depth: number): Promise<void> => {
    if (depth > maxDepth) throw file.corrupt(`sidx boxes nested deeper than ${maxDepth} levels`, offset);
    const [header] = await file.boxBytes([{ type: 'sidx', start: offset, sizeBytes: await boxSizeAt(file, offset) }]);
    const parsed = parseSidx(header!, offset, file.path);
    top ??= parsed;
    for (const reference of parsed.references) {
      if (reference.offset + reference.sizeBytes > file.sizeBytes)
        throw file.corrupt(
          `sidx references bytes ${reference.offset}-${reference.offset + reference.sizeBytes - 1} ` +
            `past the end of the ${file.sizeBytes}-byte file`,
          offset,
        );
      if (reference.isIndex) await walk(reference.offset, depth + 1);
      else
        subsegments.push({
          offset: reference.offset,
          sizeBytes: reference.sizeBytes,
          startTicks: reference.startTicks * (top.timescale / parsed.timescale),
          durationTicks: reference.durationTicks * (top.timescale / parsed.timescale),
        });
    }
  };
  await walk(at, 0);
  if (subsegments.length === 0) throw file.corrupt('the sidx lists no media subsegments', at);
  return { referenceId: top!.referenceId, timescale: top!.timescale, subsegments };
}

async function boxSizeAt(file: MediaFileReader, offset: number): Promise<number> {
  const header = await file.read(offset, 16);
  if (header.length < 8) throw file.corrupt('truncated box header', offset);
  const size32 = header.readUInt32BE(0);
  if (size32 === 1 && header.length >= 16) return Number(header.readBigUInt64BE(8));
  if (size32 < 8) throw file.corrupt(`box of ${size32} bytes`, offset);
  return size32;
}
