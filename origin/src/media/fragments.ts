/**
 * CMAF/fMP4 timing: track timescales from an init segment, and the exact media start and duration
 * carried by a media segment, from its `moof` boxes (tfhd defaults, tfdt, trun sample durations).
 */
import { BoxReader, type Box, type ByteSpan, type MediaFileReader } from './boxes.js';

export type TrackKind = 'video' | 'audio' | 'other';

export interface InitTrack {
  readonly trackId: number;
  readonly kind: TrackKind;
  readonly timescale: number;
  /** From `mvex/trex`, used when a fragment's tfhd and trun give no duration. */
  readonly defaultSampleDurationTicks: number;
  /** From `mvex/trex`, used when a fragment's tfhd and trun give no sample size. */
  readonly defaultSampleSizeBytes: number;
  /**
   * The protection scheme of an encrypted track (`cenc`, `cbcs`, ... from stsd/encv|enca/sinf/schm); sizes and
   * durations need no key.
   */
  readonly encryptionScheme: string | undefined;
}

export interface FragmentTiming {
  readonly trackId: number;
  readonly baseDecodeTimeTicks: number;
  readonly durationTicks: number;
  readonly sampleCount: number;
}

export function handlerKind(handlerType: string): TrackKind {
  if (handlerType === 'vide') return 'video';
  if (handlerType === 'soun') return 'audio';
  return 'other';
}

export function readHandlerType(reader: BoxReader, mdia: Box): string {
  const hdlr = reader.require(mdia, ['hdlr']);
  // version/flags (4) + pre_defined (4), then the handler type fourcc.
  reader.need(hdlr.payloadStart + 8, 4, hdlr.end);
  return reader.buffer.toString('latin1', hdlr.payloadStart + 8, hdlr.payloadStart + 12);
}

export function readTimescale(reader: BoxReader, mdia: Box): number {
  const mdhd = reader.require(mdia, ['mdhd']);
  const { version } = reader.fullBoxHeader(mdhd);
  const timescale = reader.u32(mdhd.payloadStart + (version === 1 ? 20 : 12), mdhd.end);
  if (timescale === 0) throw reader.corrupt('mdhd timescale is 0', mdhd.start);
  return timescale;
}

export function readTrackId(reader: BoxReader, trak: Box): number {
  const tkhd = reader.require(trak, ['tkhd']);
  const { version } = reader.fullBoxHeader(tkhd);
  return reader.u32(tkhd.payloadStart + (version === 1 ? 20 : 12), tkhd.end);
}

export function parseInitSegment(buffer: Buffer, source: string): InitTrack[] {
  const reader = new BoxReader(buffer, source);
  const moov = reader.find(reader.root(), 'moov');
  if (moov === undefined) throw reader.corrupt('init segment has no moov box', 0);
  const trexDefaults = new Map<number, { durationTicks: number; sizeBytes: number }>();
  const mvex = reader.find(moov, 'mvex');
  if (mvex !== undefined) {
    for (const trex of reader.findAll(mvex, 'trex')) {
      const trackId = reader.u32(trex.payloadStart + 4, trex.end);
      trexDefaults.set(trackId, {
        durationTicks: reader.u32(trex.payloadStart + 12, trex.end),
        sizeBytes: reader.u32(trex.payloadStart + 16, trex.end),
      });
    }
  }
  const tracks: InitTrack[] = [];
  for (const trak of reader.findAll(moov, 'trak')) {
    const mdia = reader.require(trak, ['mdia']);
    const trackId = readTrackId(reader, trak);
    tracks.push({
      trackId,
      kind: handlerKind(readHandlerType(reader, mdia)),
      timescale: readTimescale(reader, mdia),
      defaultSampleDurationTicks: trexDefaults.get(trackId)?.durationTicks ?? 0,
      defaultSampleSizeBytes: trexDefaults.get(trackId)?.sizeBytes ?? 0,
      encryptionScheme: readEncryptionScheme(reader, mdia),
    });
  }
  if (tracks.length === 0) throw reader.corrupt('init segment has no tracks', moov.start);
  return tracks;
}

/** The scheme_type of the first sample entry's protection info (encv/enca/encs/enct), if the track is encrypted. */
export function readEncryptionScheme(reader: BoxReader, mdia: Box): string | undefined {
  const stsd = reader.path(mdia, ['minf', 'stbl', 'stsd']);
  if (stsd === undefined) return undefined;
  // stsd: FullBox header (4), entry_count (4), then sample entries; a visual entry has 78 bytes before its boxes, an
  // audio one 28.
  const first = reader.children(stsd.payloadStart + 8, stsd.end).next().value;
  if (first === undefined || !['encv', 'enca', 'encs', 'enct'].includes(first.type)) return undefined;
  const skip = first.type === 'encv' ? 78 : first.type === 'enca' ? 28 : 8;
  for (const box of reader.children(first.payloadStart + skip, first.end)) {
    if (box.type !== 'sinf') continue;
    const schm = reader.find(box, 'schm');
    return schm === undefined
      ? 'unknown'
      : reader.buffer.toString('latin1', schm.payloadStart + 4, schm.payloadStart + 8);
  }
  return 'unknown';
}

const tfhdBaseDataOffset = 0x01;
const tfhdSampleDescriptionIndex = 0x02;
const tfhdDefaultSampleDuration = 0x08;
const trunDataOffset = 0x01;
const trunFirstSampleFlags = 0x04;
const trunSampleDuration = 0x100;
const trunSampleSize = 0x200;
const trunSampleFlags = 0x400;
const trunCompositionOffset = 0x800;

/** Timing of every track fragment in the given `moof` boxes, merged per track. */
export function parseFragments(
  moofBuffers: readonly Buffer[],
  source: string,
  tracks: readonly InitTrack[],
): FragmentTiming[] {
  const byTrack = new Map<number, { base: number; duration: number; samples: number }>();
  for (const buffer of moofBuffers) {
    const reader = new BoxReader(buffer, source);
    for (const moof of reader.children(0, buffer.length)) {
      if (moof.type !== 'moof') continue;
      for (const traf of reader.findAll(moof, 'traf')) {
        const timing = parseTrackFragment(reader, traf, tracks);
        const merged = byTrack.get(timing.trackId);
        if (merged === undefined) {
          byTrack.set(timing.trackId, {
            base: timing.baseDecodeTimeTicks,
            duration: timing.durationTicks,
            samples: timing.sampleCount,
          });
        } else {
          merged.duration += timing.durationTicks;
          merged.samples += timing.sampleCount;
        }
      }
    }
  }
  return [...byTrack].map(([trackId, t]) => ({
    trackId,
    baseDecodeTimeTicks: t.base,
    durationTicks: t.duration,
    sampleCount: t.samples,
  }));
}

function parseTrackFragment(reader: BoxReader, traf: Box, tracks: readonly InitTrack[]): FragmentTiming {
  const tfhd = reader.find(traf, 'tfhd');
  if (tfhd === undefined) throw reader.corrupt('traf without tfhd', traf.start);
  const { flags: tfhdFlags } = reader.fullBoxHeader(tfhd);
  const trackId = reader.u32(tfhd.payloadStart + 4, tfhd.end);
  let cursor = tfhd.payloadStart + 8;
  if (tfhdFlags & tfhdBaseDataOffset) cursor += 8;
  if (tfhdFlags & tfhdSampleDescriptionIndex) cursor += 4;
  const track = tracks.find((t) => t.trackId === trackId);
  let defaultDuration = track?.defaultSampleDurationTicks ?? 0;
  if (tfhdFlags & tfhdDefaultSampleDuration) defaultDuration = reader.u32(cursor, tfhd.end);

  let baseDecodeTimeTicks = 0;
  const tfdt = reader.find(traf, 'tfdt');
  if (tfdt !== undefined) {
    const { version } = reader.fullBoxHeader(tfdt);
    baseDecodeTimeTicks =
      version === 1 ? reader.u64(tfdt.payloadStart + 4, tfdt.end) : reader.u32(tfdt.payloadStart + 4, tfdt.end);
  }

  let durationTicks = 0;
  let sampleCount = 0;
  for (const trun of reader.findAll(traf, 'trun')) {
    const { flags } = reader.fullBoxHeader(trun);
    const count = reader.u32(trun.payloadStart + 4, trun.end);
    let offset = trun.payloadStart + 8;
    if (flags & trunDataOffset) offset += 4;
    if (flags & trunFirstSampleFlags) offset += 4;
    const perSample =
      (flags & trunSampleDuration ? 4 : 0) +
      (flags & trunSampleSize ? 4 : 0) +
      (flags & trunSampleFlags ? 4 : 0) +
      (flags & trunCompositionOffset ? 4 : 0);
    reader.need(offset, perSample * count, trun.end);
    if (flags & trunSampleDuration) {
      for (let i = 0; i < count; i++) durationTicks += reader.buffer.readUInt32BE(offset + i * perSample);
    } else {
      durationTicks += defaultDuration * count;
    }
    sampleCount += count;
  }
  return { trackId, baseDecodeTimeTicks, durationTicks, sampleCount };
}

const tfhdDefaultSampleSize = 0x10;
const tfhdDefaultSampleFlags = 0x20;
const tfhdDefaultBaseIsMoof = 0x020000;

/**
 * The samples of one track fragment: where each lies in the file, its size, and its decode time and duration (ticks).
 */
export interface FragmentSamples {
  readonly trackId: number;
  readonly offsets: number[];
  readonly sizes: number[];
  readonly decodeTicks: number[];
  readonly durationTicks: number[];
}

/**
 * Every sample of a `moof` (a fragmented MP4's), with its byte position in the file: data offsets
 * from tfhd's base (explicit, the moof with default-base-is-moof, or as ISO/IEC 14496-12 8.8.7.1
 * has it, the moof for the first track fragment and the previous one's data end after it), sizes
 * and durations from trun, else tfhd's defaults, else trex's. `moofOffset` is the moof's place in
 * the file; `nextDecodeTicks` carries each track's decode time when a traf has no tfdt.
 */
export function fragmentSamples(
  moofBuffer: Buffer,
  moofOffset: number,
  source: string,
  tracks: readonly InitTrack[],
  nextDecodeTicks: Map<number, number>,
): FragmentSamples[] {
  const reader = new BoxReader(moofBuffer, source);
  const moof = reader.boxAt(0, moofBuffer.length);
  const out: FragmentSamples[] = [];
  let previousDataEnd = moofOffset;
  let first = true;
  for (const traf of reader.findAll(moof, 'traf')) {
    const tfhd = reader.find(traf, 'tfhd');
    if (tfhd === undefined) throw reader.corrupt('traf without tfhd', traf.start);
    const { flags } = reader.fullBoxHeader(tfhd);
    const trackId = reader.u32(tfhd.payloadStart + 4, tfhd.end);
    const track = tracks.find((t) => t.trackId === trackId);
    let cursor = tfhd.payloadStart + 8;
    let base = flags & tfhdDefaultBaseIsMoof || first ? moofOffset : previousDataEnd;
    if (flags & tfhdBaseDataOffset) {
      base = reader.u64(cursor, tfhd.end);
      cursor += 8;
    }
    if (flags & tfhdSampleDescriptionIndex) cursor += 4;
    let defaultDuration = track?.defaultSampleDurationTicks ?? 0;
    let defaultSize = track?.defaultSampleSizeBytes ?? 0;
    if (flags & tfhdDefaultSampleDuration) {
      defaultDuration = reader.u32(cursor, tfhd.end);
      cursor += 4;
    }
    if (flags & tfhdDefaultSampleSize) {
      defaultSize = reader.u32(cursor, tfhd.end);
      cursor += 4;
    }
    if (flags & tfhdDefaultSampleFlags) cursor += 4;
    const tfdt = reader.find(traf, 'tfdt');
    let decode = nextDecodeTicks.get(trackId) ?? 0;
    if (tfdt !== undefined) {
      const { version } = reader.fullBoxHeader(tfdt);
      decode =
        version === 1 ? reader.u64(tfdt.payloadStart + 4, tfdt.end) : reader.u32(tfdt.payloadStart + 4, tfdt.end);
    }
    const samples: FragmentSamples = { trackId, offsets: [], sizes: [], decodeTicks: [], durationTicks: [] };
    let dataAt = base;
    for (const trun of reader.findAll(traf, 'trun')) {
      const { flags: trunFlags } = reader.fullBoxHeader(trun);
      const count = reader.u32(trun.payloadStart + 4, trun.end);
      let at = trun.payloadStart + 8;
      if (trunFlags & trunDataOffset) {
        dataAt = base + reader.i32(at, trun.end);
        at += 4;
      }
      if (trunFlags & trunFirstSampleFlags) at += 4;
      const perSample =
        (trunFlags & trunSampleDuration ? 4 : 0) +
        (trunFlags & trunSampleSize ? 4 : 0) +
        (trunFlags & trunSampleFlags ? 4 : 0) +
        (trunFlags & trunCompositionOffset ? 4 : 0);
      reader.need(at, perSample * count, trun.end);
      for (let i = 0; i < count; i++) {
        let field = at + i * perSample;
        let duration = defaultDuration;
        let size = defaultSize;
        if (trunFlags & trunSampleDuration) {
          duration = reader.buffer.readUInt32BE(field);
          field += 4;
        }
        if (trunFlags & trunSampleSize) size = reader.buffer.readUInt32BE(field);
        samples.offsets.push(dataAt);
        samples.sizes.push(size);
        samples.decodeTicks.push(decode);
        samples.durationTicks.push(duration);
        dataAt += size;
        decode += duration;
      }
    }
    nextDecodeTicks.set(trackId, decode);
    previousDataEnd = dataAt;
    first = false;
    out.push(samples);
  }
  return out;
}

/**
 * Reads the `moof` boxes of a media segment (a whole file, or `span` of one) and returns their
 * timing; never reads an `mdat`. An `sidx`, `styp`, `prft` or `emsg` before them is passed over.
 */
export async function readSegmentTiming(
  file: MediaFileReader,
  tracks: readonly InitTrack[],
  span?: ByteSpan,
): Promise<{ timings: FragmentTiming[]; sizeBytes: number }> {
  const boxes = await file.boxes(span);
  const moofs = boxes.filter((box) => box.type === 'moof');
  if (moofs.length === 0) throw file.corrupt('media segment has no moof box', span?.offset ?? 0);
  return {
    timings: parseFragments(await file.boxBytes(moofs), file.path, tracks),
    sizeBytes: span?.sizeBytes ?? file.sizeBytes,
  };
}
