/**
 * CMAF/fMP4 timing: track timescales from an init segment, and the exact media start and duration
 * carried by a media segment, from its `moof` boxes (tfhd defaults, tfdt, trun sample durations).
 */
import { BoxReader, readBoxes, scanTopLevelBoxes, type Box } from './boxes.js';

export type TrackKind = 'video' | 'audio' | 'other';

export interface InitTrack {
  readonly trackId: number;
  readonly kind: TrackKind;
  readonly timescale: number;
  /** From `mvex/trex`, used when a fragment's tfhd and trun give no duration. */
  readonly defaultSampleDurationTicks: number;
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
  const trexDefaults = new Map<number, number>();
  const mvex = reader.find(moov, 'mvex');
  if (mvex !== undefined) {
    for (const trex of reader.findAll(mvex, 'trex')) {
      const trackId = reader.u32(trex.payloadStart + 4, trex.end);
      trexDefaults.set(trackId, reader.u32(trex.payloadStart + 12, trex.end));
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
      defaultSampleDurationTicks: trexDefaults.get(trackId) ?? 0,
    });
  }
  if (tracks.length === 0) throw reader.corrupt('init segment has no tracks', moov.start);
  return tracks;
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
export function parseFragments(moofBuffers: readonly Buffer[], source: string, tracks: readonly InitTrack[]): FragmentTiming[] {
  const byTrack = new Map<number, { base: number; duration: number; samples: number }>();
  for (const buffer of moofBuffers) {
    const reader = new BoxReader(buffer, source);
    for (const moof of reader.children(0, buffer.length)) {
      if (moof.type !== 'moof') continue;
      for (const traf of reader.findAll(moof, 'traf')) {
        const timing = parseTrackFragment(reader, traf, tracks);
        const merged = byTrack.get(timing.trackId);
        if (merged === undefined) {
          byTrack.set(timing.trackId, { base: timing.baseDecodeTimeTicks, duration: timing.durationTicks, samples: timing.sampleCount });
        } else {
          merged.duration += timing.durationTicks;
          merged.samples += timing.sampleCount;
        }
      }
    }
  }
  return [...byTrack].map(([trackId, t]) => ({ trackId, baseDecodeTimeTicks: t.base, durationTicks: t.duration, sampleCount: t.samples }));
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
    baseDecodeTimeTicks = version === 1 ? reader.u64(tfdt.payloadStart + 4, tfdt.end) : reader.u32(tfdt.payloadStart + 4, tfdt.end);
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

/** Reads a media segment's `moof` boxes only (never its `mdat`) and returns their timing. */
export async function readSegmentTiming(path: string, tracks: readonly InitTrack[]): Promise<{ timings: FragmentTiming[]; sizeBytes: number }> {
  const { boxes, fileSizeBytes } = await scanTopLevelBoxes(path);
  const moofs = boxes.filter((box) => box.type === 'moof');
  if (moofs.length === 0) {
    throw new BoxReader(Buffer.alloc(0), path).corrupt('media segment has no moof box', 0);
  }
  const buffers = await readBoxes(path, moofs);
  return { timings: parseFragments(buffers, path, tracks), sizeBytes: fileSizeBytes };
}
