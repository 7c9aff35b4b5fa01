/**
 * The media index: per rendition and per segment, byte size, media start and duration and hence
 * the segment's own bitrate; for the progressive file, a byte -> media-time map. This is what
 * per-VBR-block pacing rates are computed from.
 */
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { OriginError } from '../errors.js';
import { parseInitSegment, readSegmentTiming, type InitTrack, type TrackKind } from './fragments.js';
import { isMasterPlaylist, parseMasterPlaylist, parseMediaPlaylist, type HlsPlaylistRef } from './hls.js';
import type { ManifestRendition } from './manifest.js';
import { parseMpd } from './mpd.js';
import { ByteTimeMap, readProgressiveLayout, type ProgressiveLayout } from './sample-table.js';

export interface SegmentEntry {
  readonly file: string;
  readonly number: number;
  readonly sizeBytes: number;
  /** Media start from the segment's own tfdt. */
  readonly startSec: number;
  /** Media duration from the segment's own trun sample durations. */
  readonly durationSec: number;
  /** sizeBytes * 8 / durationSec: the rate at which this segment must arrive to play in real time. */
  readonly bitrateBps: number;
}

export interface RenditionIndex {
  readonly id: string;
  readonly kind: TrackKind;
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly codecs: string | undefined;
  /** What the manifest declares (DASH @bandwidth is the average, HLS BANDWIDTH should be the peak). */
  readonly declaredBandwidthBps: number | undefined;
  readonly timescale: number;
  readonly initFile: string | undefined;
  readonly initSizeBytes: number;
  readonly segments: readonly SegmentEntry[];
  readonly durationSec: number;
  /** Total segment bits / total duration. */
  readonly averageBitrateBps: number;
  /** Arithmetic mean of the per-segment bitrates. */
  readonly meanSegmentBitrateBps: number;
  readonly peakSegmentBitrateBps: number;
  readonly minSegmentBitrateBps: number;
}

export interface ProgressiveIndex {
  readonly file: string;
  readonly sizeBytes: number;
  readonly durationSec: number;
  readonly averageBitrateBps: number;
  readonly faststart: boolean;
  readonly layout: ProgressiveLayout;
  readonly byteTime: ByteTimeMap;
}

export interface AssetIndex {
  readonly asset: string;
  readonly mpdFile: string | undefined;
  readonly hlsMasterFile: string | undefined;
  readonly hlsPlaylists: readonly HlsPlaylistRef[];
  readonly renditions: readonly RenditionIndex[];
  /** Which manifest the segment list came from. */
  readonly segmentSource: 'mpd' | 'hls' | 'none';
  readonly progressive: ProgressiveIndex | undefined;
  readonly durationSec: number;
  /** Renditions, segments and file name -> segment lookups for the request path. */
  readonly segmentByFile: ReadonlyMap<string, { rendition: RenditionIndex; segment: SegmentEntry }>;
  readonly renditionByInitFile: ReadonlyMap<string, RenditionIndex>;
  /** Per rendition id: the ladder players compare throughput with, and the rendition's entry on it. */
  readonly abrLadders: ReadonlyMap<string, AbrLadder>;
}

/**
 * The declared bitrates an adaptive player chooses among, ascending, for one kind of rendition:
 * video rungs carry the top audio rendition's bitrate too (an HLS variant declares video and audio
 * together, and a DASH player fetches both over the same path), audio and other rungs their own.
 */
export interface AbrLadder {
  readonly ladderBps: readonly number[];
  readonly renditionBps: number;
}

function declaredBps(rendition: RenditionIndex): number {
  return rendition.declaredBandwidthBps ?? rendition.averageBitrateBps;
}

export function abrLadders(renditions: readonly RenditionIndex[]): Map<string, AbrLadder> {
  const audioBps = Math.max(0, ...renditions.filter((r) => r.kind === 'audio').map(declaredBps));
  const entryOf = (r: RenditionIndex) => declaredBps(r) + (r.kind === 'video' ? audioBps : 0);
  const ladders = new Map<string, AbrLadder>();
  for (const rendition of renditions) {
    const ladderBps = renditions.filter((r) => r.kind === rendition.kind).map(entryOf).sort((a, b) => a - b);
    ladders.set(rendition.id, { ladderBps, renditionBps: entryOf(rendition) });
  }
  return ladders;
}

export interface AssetFiles {
  readonly mpdFile: string | undefined;
  readonly hlsMasterFile: string | undefined;
  readonly progressiveFile: string | undefined;
}

/** Runs `task` over `items` with at most `limit` in flight, preserving order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, task: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!);
    }
  });
  await Promise.all(workers);
  return results;
}

async function readManifestRenditions(assetDir: string, files: AssetFiles): Promise<{ renditions: ManifestRendition[]; source: 'mpd' | 'hls' | 'none'; hlsPlaylists: HlsPlaylistRef[] }> {
  let hlsPlaylists: HlsPlaylistRef[] = [];
  if (files.hlsMasterFile !== undefined) {
    const path = join(assetDir, files.hlsMasterFile);
    hlsPlaylists = parseMasterPlaylist(await readFile(path, 'utf8'), path);
  }
  if (files.mpdFile !== undefined) {
    const path = join(assetDir, files.mpdFile);
    return { renditions: parseMpd(await readFile(path, 'utf8'), path).renditions, source: 'mpd', hlsPlaylists };
  }
  if (hlsPlaylists.length > 0) {
    const renditions = await Promise.all(
      hlsPlaylists.map(async (ref) => {
        const path = join(assetDir, ref.uri);
        return parseMediaPlaylist(await readFile(path, 'utf8'), path, ref);
      }),
    );
    return { renditions, source: 'hls', hlsPlaylists };
  }
  return { renditions: [], source: 'none', hlsPlaylists };
}

async function indexRendition(assetDir: string, manifest: ManifestRendition): Promise<RenditionIndex> {
  if (manifest.initFile === undefined) {
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${assetDir}: rendition ${manifest.id} has no init segment`, { rendition: manifest.id });
  }
  const initPath = join(assetDir, manifest.initFile);
  const initBuffer = await readFile(initPath);
  const tracks: InitTrack[] = parseInitSegment(initBuffer, initPath);
  const track = tracks.find((t) => t.kind === manifest.kind) ?? tracks[0]!;

  const segments = await mapLimited(manifest.segments, 16, async (segment): Promise<SegmentEntry> => {
    const path = join(assetDir, segment.file);
    const { timings, sizeBytes } = await readSegmentTiming(path, tracks);
    const timing = timings.find((t) => t.trackId === track.trackId) ?? timings[0];
    if (timing === undefined || timing.durationTicks <= 0) {
      throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${path}: segment carries no samples`, { file: path });
    }
    const durationSec = timing.durationTicks / track.timescale;
    return {
      file: segment.file,
      number: segment.number,
      sizeBytes,
      startSec: timing.baseDecodeTimeTicks / track.timescale,
      durationSec,
      bitrateBps: (sizeBytes * 8) / durationSec,
    };
  });

  const durationSec = segments.reduce((sum, s) => sum + s.durationSec, 0);
  const totalBytes = segments.reduce((sum, s) => sum + s.sizeBytes, 0);
  const rates = segments.map((s) => s.bitrateBps);
  return {
    id: manifest.id,
    kind: manifest.kind,
    width: manifest.width,
    height: manifest.height,
    codecs: manifest.codecs,
    declaredBandwidthBps: manifest.declaredBandwidthBps,
    timescale: track.timescale,
    initFile: manifest.initFile,
    initSizeBytes: initBuffer.length,
    segments,
    durationSec,
    averageBitrateBps: durationSec > 0 ? (totalBytes * 8) / durationSec : 0,
    meanSegmentBitrateBps: rates.length > 0 ? rates.reduce((a, b) => a + b, 0) / rates.length : 0,
    peakSegmentBitrateBps: rates.length > 0 ? Math.max(...rates) : 0,
    minSegmentBitrateBps: rates.length > 0 ? Math.min(...rates) : 0,
  };
}

async function indexProgressive(assetDir: string, file: string): Promise<ProgressiveIndex> {
  const path = join(assetDir, file);
  const layout = await readProgressiveLayout(path);
  const { size } = await stat(path);
  return {
    file,
    sizeBytes: size,
    durationSec: layout.durationSec,
    averageBitrateBps: layout.durationSec > 0 ? (size * 8) / layout.durationSec : 0,
    faststart: layout.faststart,
    layout,
    byteTime: new ByteTimeMap(layout),
  };
}

export async function buildAssetIndex(asset: string, assetDir: string, files: AssetFiles): Promise<AssetIndex> {
  const { renditions: manifestRenditions, source, hlsPlaylists } = await readManifestRenditions(assetDir, files);
  const renditions: RenditionIndex[] = [];
  for (const manifest of manifestRenditions) renditions.push(await indexRendition(assetDir, manifest));
  const progressive = files.progressiveFile === undefined ? undefined : await indexProgressive(assetDir, files.progressiveFile);

  const segmentByFile = new Map<string, { rendition: RenditionIndex; segment: SegmentEntry }>();
  const renditionByInitFile = new Map<string, RenditionIndex>();
  for (const rendition of renditions) {
    if (rendition.initFile !== undefined) renditionByInitFile.set(rendition.initFile, rendition);
    for (const segment of rendition.segments) segmentByFile.set(segment.file, { rendition, segment });
  }
  const durations = [...renditions.map((r) => r.durationSec), progressive?.durationSec ?? 0];
  return {
    asset,
    mpdFile: files.mpdFile,
    hlsMasterFile: files.hlsMasterFile,
    hlsPlaylists,
    renditions,
    segmentSource: source,
    progressive,
    durationSec: Math.max(0, ...durations),
    segmentByFile,
    renditionByInitFile,
    abrLadders: abrLadders(renditions),
  };
}

/** The JSON summary served at /api/assets/<asset>. */
export function summarizeIndex(index: AssetIndex, options: { includeSegments: boolean }) {
  return {
    asset: index.asset,
    durationSec: index.durationSec,
    manifests: { dash: index.mpdFile ?? null, hls: index.hlsMasterFile ?? null },
    segmentSource: index.segmentSource,
    renditions: index.renditions.map((r) => ({
      id: r.id,
      kind: r.kind,
      width: r.width ?? null,
      height: r.height ?? null,
      codecs: r.codecs ?? null,
      declaredBandwidthBps: r.declaredBandwidthBps ?? null,
      initFile: r.initFile ?? null,
      segmentCount: r.segments.length,
      durationSec: r.durationSec,
      averageBitrateBps: Math.round(r.averageBitrateBps),
      meanSegmentBitrateBps: Math.round(r.meanSegmentBitrateBps),
      peakSegmentBitrateBps: Math.round(r.peakSegmentBitrateBps),
      minSegmentBitrateBps: Math.round(r.minSegmentBitrateBps),
      ...(options.includeSegments
        ? {
            segments: r.segments.map((s) => ({
              file: s.file,
              number: s.number,
              sizeBytes: s.sizeBytes,
              startSec: s.startSec,
              durationSec: s.durationSec,
              bitrateBps: Math.round(s.bitrateBps),
            })),
          }
        : {}),
    })),
    progressive:
      index.progressive === undefined
        ? null
        : {
            file: index.progressive.file,
            sizeBytes: index.progressive.sizeBytes,
            durationSec: index.progressive.durationSec,
            averageBitrateBps: Math.round(index.progressive.averageBitrateBps),
            faststart: index.progressive.faststart,
          },
  };
}
