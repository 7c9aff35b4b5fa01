/**
 * Progressive MP4: per-sample byte positions and decode times from the sample tables
 * (stsz/stz2, stco/co64, stsc, stts, elst), and a byte-offset -> media-time map so a pacing
 * policy knows how much playback time any byte range carries.
 */
import { BoxReader, withMediaFile, type Box, type MediaFileReader, type TopLevelBox } from './boxes.js';
import {
  fragmentSamples,
  handlerKind,
  parseInitSegment,
  readHandlerType,
  readTimescale,
  readTrackId,
  type TrackKind,
} from './fragments.js';

export interface SampleTrack {
  readonly trackId: number;
  readonly kind: TrackKind;
  readonly timescale: number;
  /** File offset of each sample's first byte. */
  readonly offsets: Float64Array;
  readonly sizes: Uint32Array;
  /** Decode time of each sample in seconds, shifted by the edit list as players (and ffprobe) do. */
  readonly decodeTimesSec: Float64Array;
  readonly durationsSec: Float64Array;
  /** What the edit list adds to every decode time (seconds). */
  readonly editShiftSec: number;
}

export interface ProgressiveLayout {
  readonly fileSizeBytes: number;
  readonly moovStart: number;
  readonly mdatStart: number;
  /** True when moov precedes mdat, so playback can start before the whole file is fetched. */
  readonly faststart: boolean;
  /** A fragmented MP4 (its samples in moof boxes). */
  readonly fragmented: boolean;
  readonly durationSec: number;
  readonly tracks: readonly SampleTrack[];
}

export async function readProgressiveLayout(path: string): Promise<ProgressiveLayout> {
  return withMediaFile(path, async (file) => {
    const boxes = await file.boxes();
    const moovBox = boxes.find((box) => box.type === 'moov');
    const mdatBox = boxes.find((box) => box.type === 'mdat');
    if (moovBox === undefined) throw file.corrupt('MP4 has no moov box', 0);
    if (mdatBox === undefined) throw file.corrupt('MP4 has no mdat box', 0);
    const [moovBuffer] = await file.boxBytes([moovBox]);
    const reader = new BoxReader(moovBuffer!, path);
    const moov = reader.boxAt(0, moovBuffer!.length);
    let tracks = reader.findAll(moov, 'trak').map((trak) => readSampleTrack(reader, moov, trak));
    const moofs = boxes.filter((box) => box.type === 'moof');
    // A fragmented MP4 keeps its samples in moof boxes; its moov's tables are empty.
    if (moofs.length > 0 && tracks.every((t) => t.sizes.length === 0))
      tracks = await fragmentedTracks(file, moovBuffer!, moofs, tracks);
    const ends = tracks.map((t) => {
      const last = t.decodeTimesSec.length - 1;
      return last < 0 ? 0 : t.decodeTimesSec[last]! + t.durationsSec[last]!;
    });
    return {
      fileSizeBytes: file.sizeBytes,
      moovStart: moovBox.start,
      mdatStart: mdatBox.start,
      faststart: moovBox.start < mdatBox.start,
      fragmented: moofs.length > 0,
      durationSec: Math.max(0, ...ends),
      tracks,
    };
  });
}

/**
 * The samples of a fragmented MP4, track by track, from every moof in file order (decode times shifted by each track's
 * edit as in the moov).
 */
async function fragmentedTracks(
  file: MediaFileReader,
  moovBuffer: Buffer,
  moofs: readonly TopLevelBox[],
  fromMoov: readonly SampleTrack[],
): Promise<SampleTrack[]> {
  const initTracks = parseInitSegment(moovBuffer, file.path);
  const collected = new Map<number, { offsets: number[]; sizes: number[]; decode: number[]; durations: number[] }>();
  const nextDecode = new Map<number, number>();
  for (const moof of moofs) {
    const [buffer] = await file.boxBytes([moof]);
    for (const samples of fragmentSamples(buffer!, moof.start, file.path, initTracks, nextDecode)) {
      let track = collected.get(samples.trackId);
      if (track === undefined) {
        track = { offsets: [], sizes: [], decode: [], durations: [] };
        collected.set(samples.trackId, track);
      }
      track.offsets.push(...samples.offsets);
      track.sizes.push(...samples.sizes);
      track.decode.push(...samples.decodeTicks);
      track.durations.push(...samples.durationTicks);
    }
  }
  return fromMoov.map((track) => {
    const samples = collected.get(track.trackId);
    if (samples === undefined) return track;
    // The moov's (empty) tables carried the edit's shift as the time of their first sample; apply it to the fragments'
    // decode times.
    const shiftSec = track.editShiftSec;
    return {
      ...track,
      offsets: Float64Array.from(samples.offsets),
      sizes: Uint32Array.from(samples.sizes),
      decodeTimesSec: Float64Array.from(samples.decode, (ticks) => ticks / track.timescale + shiftSec),
      durationsSec: Float64Array.from(samples.durations, (ticks) => ticks / track.timescale),
    };
  });
}

function readMovieTimescale(reader: BoxReader, moov: Box): number {
  const mvhd = reader.require(moov, ['mvhd']);
  const { version } = reader.fullBoxHeader(mvhd);
  return reader.u32(mvhd.payloadStart + (version === 1 ? 20 : 12), mvhd.end);
}

/** Ticks (media timescale) by which the first edit shifts decode times. */
function editShiftTicks(reader: BoxReader, trak: Box, movieTimescale: number, mediaTimescale: number): number {
  const elst = reader.path(trak, ['edts', 'elst']);
  if (elst === undefined) return 0;
  const { version } = reader.fullBoxHeader(elst);
  const count = reader.u32(elst.payloadStart + 4, elst.end);
  const entrySize = version === 1 ? 20 : 12;
  let emptyTicks = 0;
  for (let i = 0; i < count; i++) {
    const at = elst.payloadStart + 8 + i * entrySize;
    const segmentDuration = version === 1 ? reader.u64(at, elst.end) : reader.u32(at, elst.end);
    const mediaTime = version === 1 ? Number(reader.buffer.readBigInt64BE(at + 8)) : reader.i32(at + 4, elst.end);
    if (mediaTime === -1) {
      emptyTicks += movieTimescale > 0 ? (segmentDuration * mediaTimescale) / movieTimescale : 0;
      continue;
    }
    return emptyTicks - mediaTime;
  }
  return emptyTicks;
}

function readSampleSizes(reader: BoxReader, stbl: Box): Uint32Array {
  const stsz = reader.find(stbl, 'stsz');
  if (stsz !== undefined) {
    const fixed = reader.u32(stsz.payloadStart + 4, stsz.end);
    const count = reader.u32(stsz.payloadStart + 8, stsz.end);
    const sizes = new Uint32Array(count);
    if (fixed !== 0) return sizes.fill(fixed);
    reader.need(stsz.payloadStart + 12, count * 4, stsz.end);
    for (let i = 0; i < count; i++) sizes[i] = reader.buffer.readUInt32BE(stsz.payloadStart + 12 + i * 4);
    return sizes;
  }
  const stz2 = reader.find(stbl, 'stz2');
  if (stz2 === undefined) throw reader.corrupt('sample table has neither stsz nor stz2', stbl.start);
  const fieldBits = reader.u8(stz2.payloadStart + 7, stz2.end);
  const count = reader.u32(stz2.payloadStart + 8, stz2.end);
  const sizes = new Uint32Array(count);
  const base = stz2.payloadStart + 12;
  reader.need(base, Math.ceil((count * fieldBits) / 8), stz2.end);
  for (let i = 0; i < count; i++) {
    if (fieldBits === 16) sizes[i] = reader.buffer.readUInt16BE(base + i * 2);
    else if (fieldBits === 8) sizes[i] = reader.buffer.readUInt8(base + i);
    else if (fieldBits === 4) sizes[i] = (reader.buffer.readUInt8(base + (i >> 1)) >> (i % 2 === 0 ? 4 : 0)) & 0xf;
    else throw reader.corrupt(`stz2 field size ${fieldBits} is not 4, 8 or 16`, stz2.start);
  }
  return sizes;
}

function readChunkOffsets(reader: BoxReader, stbl: Box): Float64Array {
  const stco = reader.find(stbl, 'stco');
  const co64 = stco === undefined ? reader.find(stbl, 'co64') : undefined;
  const box = stco ?? co64;
  if (box === undefined) throw reader.corrupt('sample table has neither stco nor co64', stbl.start);
  const count = reader.u32(box.payloadStart + 4, box.end);
  const width = stco !== undefined ? 4 : 8;
  reader.need(box.payloadStart + 8, count * width, box.end);
  const offsets = new Float64Array(count);
  for (let i = 0; i < count; i++) {
    const at = box.payloadStart + 8 + i * width;
    offsets[i] = width === 4 ? reader.buffer.readUInt32BE(at) : reader.u64(at, box.end);
  }
  return offsets;
}

function readSampleTrack(reader: BoxReader, moov: Box, trak: Box): SampleTrack {
  const mdia = reader.require(trak, ['mdia']);
  const stbl = reader.require(mdia, ['minf', 'stbl']);
  const timescale = readTimescale(reader, mdia);
  const sizes = readSampleSizes(reader, stbl);
  const chunkOffsets = readChunkOffsets(reader, stbl);
  const sampleCount = sizes.length;

  const stsc = reader.require(stbl, ['stsc']);
  const stscCount = reader.u32(stsc.payloadStart + 4, stsc.end);
  reader.need(stsc.payloadStart + 8, stscCount * 12, stsc.end);
  const offsets = new Float64Array(sampleCount);
  let sample = 0;
  for (let entry = 0; entry < stscCount && sample < sampleCount; entry++) {
    const at = stsc.payloadStart + 8 + entry * 12;
    const firstChunk = reader.buffer.readUInt32BE(at);
    const samplesPerChunk = reader.buffer.readUInt32BE(at + 4);
    const nextFirstChunk = entry + 1 < stscCount ? reader.buffer.readUInt32BE(at + 12) : chunkOffsets.length + 1;
    if (firstChunk < 1 || nextFirstChunk < firstChunk) throw reader.corrupt('stsc entries out of order', at);
    for (let chunk = firstChunk; chunk < nextFirstChunk && sample < sampleCount; chunk++) {
      const chunkOffset = chunkOffsets[chunk - 1];
      if (chunkOffset === undefined)
        throw reader.corrupt(`stsc names chunk ${chunk} beyond the ${chunkOffsets.length} chunks of stco`, at);
      let position = chunkOffset;
      for (let k = 0; k < samplesPerChunk && sample < sampleCount; k++) {
        offsets[sample] = position;
        position += sizes[sample]!;
        sample++;
      }
    }
  }
  if (sample !== sampleCount)
    throw reader.corrupt(`stsc/stco describe ${sample} samples, stsz ${sampleCount}`, stsc.start);

  const stts = reader.require(stbl, ['stts']);
  const sttsCount = reader.u32(stts.payloadStart + 4, stts.end);
  reader.need(stts.payloadStart + 8, sttsCount * 8, stts.end);
  const shift = editShiftTicks(reader, trak, readMovieTimescale(reader, moov), timescale);
  const decodeTimesSec = new Float64Array(sampleCount);
  const durationsSec = new Float64Array(sampleCount);
  let ticks = 0;
  sample = 0;
  for (let entry = 0; entry < sttsCount && sample < sampleCount; entry++) {
    const at = stts.payloadStart + 8 + entry * 8;
    const count = reader.buffer.readUInt32BE(at);
    const delta = reader.buffer.readUInt32BE(at + 4);
    for (let k = 0; k < count && sample < sampleCount; k++) {
      decodeTimesSec[sample] = (ticks + shift) / timescale;
      durationsSec[sample] = delta / timescale;
      ticks += delta;
      sample++;
    }
  }
  if (sample !== sampleCount) throw reader.corrupt(`stts describes ${sample} samples, stsz ${sampleCount}`, stts.start);

  return {
    trackId: readTrackId(reader, trak),
    kind: handlerKind(readHandlerType(reader, mdia)),
    timescale,
    editShiftSec: shift / timescale,
    offsets,
    sizes,
    decodeTimesSec,
    durationsSec,
  };
}

/**
 * Monotone map between file bytes and playback time, built from the reference track (video if
 * present): `mediaTimeAtByte(n)` is the media time fully delivered once the first n bytes arrived.
 */
export class ByteTimeMap {
  /** End offset (exclusive) of each reference sample, ascending. */
  private readonly sampleEnds: Float64Array;
  /** Media time complete once the corresponding sample end has been delivered (running max). */
  private readonly completeSec: Float64Array;

  /**
   * From a file's sample tables, or from points given directly (a segmented file: each segment's end and the media time
   * complete there).
   */
  constructor(
    source: ProgressiveLayout | { readonly endBytes: readonly number[]; readonly completeSec: readonly number[] },
  ) {
    if (!('tracks' in source)) {
      this.sampleEnds = Float64Array.from(source.endBytes);
      this.completeSec = Float64Array.from(source.completeSec);
      return;
    }
    const layout = source;
    const reference = layout.tracks.find((t) => t.kind === 'video') ?? layout.tracks.find((t) => t.kind === 'audio');
    const count = reference?.sizes.length ?? 0;
    const order = Array.from({ length: count }, (_, i) => i);
    if (reference !== undefined) order.sort((a, b) => reference.offsets[a]! - reference.offsets[b]!);
    this.sampleEnds = new Float64Array(count);
    this.completeSec = new Float64Array(count);
    let reached = 0;
    order.forEach((sampleIndex, i) => {
      const track = reference!;
      this.sampleEnds[i] = track.offsets[sampleIndex]! + track.sizes[sampleIndex]!;
      reached = Math.max(reached, track.decodeTimesSec[sampleIndex]! + track.durationsSec[sampleIndex]!);
      this.completeSec[i] = Math.max(0, reached);
    });
  }

  /** Media seconds complete after the first `byteCount` bytes of the file. */
  mediaTimeAtByte(byteCount: number): number {
    const ended = this.samplesEndedBy(byteCount);
    return ended === 0 ? 0 : this.completeSec[ended - 1]!;
  }

  /** How many samples (in file order) end within the first `byteCount` bytes. */
  private samplesEndedBy(byteCount: number): number {
    let lo = 0;
    let hi = this.sampleEnds.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sampleEnds[mid]! <= byteCount) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * Media seconds at byte `byteCount` counting the sample in progress pro rata: the complete time,
   * plus the share of the way to the next reference sample's end. Equal to `mediaTimeAtByte` at
   * every sample end; continuous in between, so any run of bytes carries a share of media time.
   */
  mediaTimeAtByteInterpolated(byteCount: number): number {
    const ended = this.samplesEndedBy(byteCount);
    const fromByte = ended === 0 ? 0 : this.sampleEnds[ended - 1]!;
    const fromSec = ended === 0 ? 0 : this.completeSec[ended - 1]!;
    if (ended >= this.sampleEnds.length) return fromSec;
    const toByte = this.sampleEnds[ended]!;
    return fromSec + ((byteCount - fromByte) / (toByte - fromByte)) * (this.completeSec[ended]! - fromSec);
  }

  /** The smallest byte count after which at least `mediaSec` of playback is complete. */
  byteAtMediaTime(mediaSec: number): number {
    let lo = 0;
    let hi = this.completeSec.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.completeSec[mid]! < mediaSec) lo = mid + 1;
      else hi = mid;
    }
    if (lo >= this.sampleEnds.length)
      return this.sampleEnds.length === 0 ? 0 : this.sampleEnds[this.sampleEnds.length - 1]!;
    return this.sampleEnds[lo]!;
  }

  /** Playback seconds carried by the inclusive byte range [start, end]. */
  mediaDurationOfRange(start: number, end: number): number {
    return Math.max(0, this.mediaTimeAtByte(end + 1) - this.mediaTimeAtByte(start));
  }
}
