/**
 * The media index: per rendition and per segment, byte size, media start and duration and hence
 * the segment's own bitrate; for the progressive file, a byte -> media-time map. This is what
 * per-VBR-block pacing rates are computed from.
 *
 * It reads standard VOD packaging whatever wrote it: every MPD and HLS playlist of the asset (DASH
 * segment files, byte ranges of one file, or an on-demand file's own sidx; HLS fMP4 or MPEG-TS,
 * whole files or byte ranges), so a request for a segment file, or for a byte range of a file that
 * holds many segments, is mapped to the segment(s) it carries. Sizes and durations come from the
 * media itself (moof/trun, sidx, PES timestamps), never from the manifest's nominal durations, and
 * need no keys (encrypted CENC/CBCS content has the same boxes). A rendition that cannot be read is
 * served plain with the reason, and the rest of the asset stays paced.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { OriginError } from '../errors.js';
import { MediaFileReader, withMediaFile } from './boxes.js';
import { parseInitSegment, readSegmentTiming, type InitTrack, type TrackKind } from './fragments.js';
import {
  isMasterPlaylist,
  loneMediaPlaylistRef,
  parseMasterPlaylist,
  parseMediaPlaylist,
  type HlsPlaylistRef,
} from './hls.js';
import type { ByteSpan, ManifestRendition, ManifestSegment } from './manifest.js';
import { readTsTimestamps, ticksToSec, typicalStepTicks } from './mpeg-ts.js';
import { parseMpd } from './mpd.js';
import { ByteTimeMap, readProgressiveLayout, type ProgressiveLayout } from './sample-table.js';
import { readSegmentIndex } from './sidx.js';

export interface SegmentEntry {
  /** What players ask for. */
  readonly file: string;
  /** The file its bytes are read from, when not `file` (a misnamed `$Time$` segment: see findMisnamedSegments). */
  readonly sourceFile?: string;
  readonly number: number;
  /** Where the segment's bytes start in its file (0 for a segment that is a file of its own). */
  readonly offsetBytes: number;
  readonly sizeBytes: number;
  /** Media start from the media itself (tfdt, sidx, first DTS). */
  readonly startSec: number;
  /** Media duration from the media itself (trun sample durations, sidx, DTS to the next segment's). */
  readonly durationSec: number;
  /** sizeBytes * 8 / durationSec: the rate at which this segment must arrive to play in real time. */
  readonly bitrateBps: number;
}

/** Whether a rendition's segments are paced, and where their durations came from; or why it is served plain. */
export type RenditionPacing =
  | { readonly paced: true; readonly timing: 'moof' | 'pes' | 'manifest'; readonly note?: string | undefined }
  | { readonly paced: false; readonly reason: string; readonly code?: string | undefined };

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
  /** The manifest it was read from, and how it addresses its segments. */
  readonly manifest: string;
  readonly container: ManifestRendition['container'];
  readonly addressing: 'files' | 'byte-ranges' | 'sidx';
  readonly period: number;
  /** When its Period starts in the presentation (0 for HLS and single-Period MPDs). */
  readonly periodStartSec: number;
  readonly trickPlay: boolean;
  /** The protection scheme when the media is encrypted (cenc, cbcs, or aes-128 for HLS whole-segment encryption). */
  readonly encryption: string | undefined;
  readonly pacing: RenditionPacing;
}

export interface ProgressiveIndex {
  readonly file: string;
  readonly sizeBytes: number;
  readonly durationSec: number;
  readonly averageBitrateBps: number;
  readonly faststart: boolean;
  readonly fragmented: boolean;
  readonly layout: ProgressiveLayout;
  readonly byteTime: ByteTimeMap;
}

/** A file that holds many segments of one rendition (an on-demand file, a single-file HLS or DASH rendition). */
export interface SegmentedFile {
  readonly rendition: RenditionIndex;
  /** Its segments in file order. */
  readonly segments: readonly SegmentEntry[];
  readonly sizeBytes: number;
  /** Byte -> media time through the segments' ends, for ranges that span several segments. */
  readonly byteTime: ByteTimeMap;
}

export interface AssetIndex {
  readonly asset: string;
  /** The MPDs and HLS playlists (masters, or media playlists without one) the index read. */
  readonly mpdFiles: readonly string[];
  readonly hlsEntryFiles: readonly string[];
  readonly hlsPlaylists: readonly HlsPlaylistRef[];
  readonly renditions: readonly RenditionIndex[];
  /** Which manifest kinds the segment lists came from. */
  readonly segmentSource: 'mpd' | 'hls' | 'mpd+hls' | 'none';
  readonly progressive: ProgressiveIndex | undefined;
  readonly durationSec: number;
  /** Whole-file segments by file name, for the request path. */
  readonly segmentByFile: ReadonlyMap<string, { rendition: RenditionIndex; segment: SegmentEntry }>;
  /** Files that hold many segments, by file name. */
  readonly segmentedFiles: ReadonlyMap<string, SegmentedFile>;
  readonly renditionByInitFile: ReadonlyMap<string, RenditionIndex>;
  /** Byte ranges that I-frame playlists name (`file@offset+size`): trick play, served at full speed. */
  readonly trickPlayRanges: ReadonlySet<string>;
  /** Segment names players ask for that are served from another file (misnamed `$Time$` segments). */
  readonly fileAliases: ReadonlyMap<string, string>;
  /** Per rendition id: the ladder players compare throughput with, and the rendition's entry on it. */
  readonly abrLadders: ReadonlyMap<string, AbrLadder>;
  /** What the index could not read, and why (the asset's other parts are served; these plain). */
  readonly issues: readonly string[];
}

/**
 * The declared bitrates an adaptive player chooses among, ascending, for one kind of rendition:
 * video rungs carry the top audio rendition's bitrate too (an HLS variant declares video and audio
 * together, and a DASH player fetches both over the same path), audio and other rungs their own.
 * Renditions of different Periods, and trick-play ones, are on different ladders (none, for trick play).
 */
export interface AbrLadder {
  readonly ladderBps: readonly number[];
  readonly renditionBps: number;
  /** The highest entry of the period's video ladder (undefined: the period has no video). */
  readonly videoTopBps: number | undefined;
}

function declaredBps(rendition: RenditionIndex): number {
  return rendition.declaredBandwidthBps ?? rendition.averageBitrateBps;
}

export function abrLadders(renditions: readonly RenditionIndex[]): Map<string, AbrLadder> {
  const ladders = new Map<string, AbrLadder>();
  const onLadder = renditions.filter((r) => r.pacing.paced && !r.trickPlay && r.kind !== 'other');
  for (const rendition of onLadder) {
    const peers = onLadder.filter((r) => r.period === rendition.period);
    const audioBps = Math.max(0, ...peers.filter((r) => r.kind === 'audio').map(declaredBps));
    const entryOf = (r: RenditionIndex) => declaredBps(r) + (r.kind === 'video' ? audioBps : 0);
    const videoEntries = peers.filter((r) => r.kind === 'video').map(entryOf);
    const ladderBps = peers
      .filter((r) => r.kind === rendition.kind)
      .map(entryOf)
      .sort((a, b) => a - b);
    ladders.set(rendition.id, {
      ladderBps,
      renditionBps: entryOf(rendition),
      videoTopBps: videoEntries.length === 0 ? undefined : Math.max(...videoEntries),
    });
  }
  return ladders;
}

/** The files at the top of an asset's folder that may describe it. */
export interface AssetFiles {
  readonly mpdFiles: readonly string[];
  /** Every top-level HLS playlist: masters, and media playlists (those no master names stand alone). */
  readonly playlistFiles: readonly string[];
  /** MP4 files, among which the progressive file (the one no manifest names). */
  readonly mp4Files: readonly string[];
}

const preferredProgressive = 'progressive.mp4';

/** Sorts the names of an asset folder into manifests and MP4 candidates. */
export function assetFilesOf(names: readonly string[]): AssetFiles {
  const withExtension = (...extensions: string[]) =>
    names
      .filter((n) => extensions.some((e) => n.toLowerCase().endsWith(e)))
      .sort((a, b) =>
        a === 'manifest.mpd' || a === 'master.m3u8' || a === preferredProgressive
          ? -1
          : b === 'manifest.mpd' || b === 'master.m3u8' || b === preferredProgressive
            ? 1
            : a.localeCompare(b),
      );
  return {
    mpdFiles: withExtension('.mpd'),
    playlistFiles: withExtension('.m3u8'),
    mp4Files: withExtension('.mp4', '.m4v', '.mov'),
  };
}

export function hasMedia(files: AssetFiles): boolean {
  return files.mpdFiles.length + files.playlistFiles.length + files.mp4Files.length > 0;
}

/** Runs `task` over `items` with at most `limit` in flight, preserving order. */
async function mapLimited<T, R>(
  items: readonly T[],
  limit: number,
  task: (item: T, index: number) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await task(items[index]!, index);
    }
  });
  await Promise.all(workers);
  return results;
}

function describeError(error: unknown): { message: string; code: string | undefined } {
  const code = (error as { code?: unknown }).code;
  return { message: (error as Error).message, code: typeof code === 'string' ? code : undefined };
}

interface ManifestRead {
  readonly renditions: ManifestRendition[];
  readonly mpdFiles: string[];
  readonly hlsEntryFiles: string[];
  readonly hlsPlaylists: HlsPlaylistRef[];
  readonly issues: string[];
}

/**
 * Every manifest of the asset: each MPD, each master playlist's media playlists, and media playlists no master names.
 */
async function readManifests(assetDir: string, files: AssetFiles): Promise<ManifestRead> {
  const read: ManifestRead = { renditions: [], mpdFiles: [], hlsEntryFiles: [], hlsPlaylists: [], issues: [] };
  for (const mpdFile of files.mpdFiles) {
    try {
      read.renditions.push(
        ...parseMpd(await readFile(join(assetDir, mpdFile), 'utf8'), join(assetDir, mpdFile), mpdFile).renditions,
      );
      read.mpdFiles.push(mpdFile);
    } catch (error) {
      read.issues.push(`${mpdFile}: ${describeError(error).message.replace(`${join(assetDir, mpdFile)}: `, '')}`);
    }
  }
  const texts = new Map<string, string>();
  for (const name of files.playlistFiles) texts.set(name, await readFile(join(assetDir, name), 'utf8').catch(() => ''));
  const named = new Set<string>();
  const refs: HlsPlaylistRef[] = [];
  for (const [name, text] of texts) {
    if (!isMasterPlaylist(text)) continue;
    try {
      const masterRefs = parseMasterPlaylist(text, name);
      for (const ref of masterRefs) named.add(ref.uri);
      refs.push(...masterRefs);
      read.hlsEntryFiles.push(name);
    } catch (error) {
      read.issues.push(`${name}: ${describeError(error).message.replace(`${name}: `, '')}`);
    }
  }
  for (const [name, text] of texts) {
    if (isMasterPlaylist(text) || named.has(name) || !text.startsWith('#EXTM3U')) continue;
    refs.push(loneMediaPlaylistRef(name));
    read.hlsEntryFiles.push(name);
  }
  const seen = new Set<string>();
  for (const ref of refs) {
    if (seen.has(ref.uri)) continue;
    seen.add(ref.uri);
    read.hlsPlaylists.push(ref);
    try {
      read.renditions.push(parseMediaPlaylist(await readFile(join(assetDir, ref.uri), 'utf8'), ref.uri, ref));
    } catch (error) {
      read.issues.push(
        `${ref.uri}: ` +
          (describeError(error).code === 'ENOENT'
            ? 'the playlist a master names is missing'
            : describeError(error).message.replace(`${ref.uri}: `, '')),
      );
    }
  }
  return read;
}

/**
 * The identity of a rendition's media: its init and first segment (an HLS playlist and an MPD of one packaging describe
 * the same bytes).
 */
function mediaKey(rendition: ManifestRendition): string {
  const first = rendition.segmentBase?.file ?? rendition.segments[0]?.file ?? '';
  return `${rendition.trickPlay === true ? 'trick-play ' : ''}${rendition.initFile ?? ''}|${first}`;
}

/** Files a rendition names (init and media), to tell the progressive file from a rendition's own MP4. */
function namedFiles(rendition: ManifestRendition): string[] {
  return [rendition.initFile, rendition.segmentBase?.file, ...rendition.segments.map((s) => s.file)].filter(
    (f): f is string => f !== undefined,
  );
}

async function readInit(
  assetDir: string,
  rendition: ManifestRendition,
): Promise<{ tracks: InitTrack[]; sizeBytes: number }> {
  if (rendition.initFile === undefined)
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `rendition ${rendition.id} has no init segment`, {
      rendition: rendition.id,
    });
  const path = join(assetDir, rendition.initFile);
  const range = rendition.initRange;
  const buffer =
    range === undefined
      ? await readFile(path)
      : await withMediaFile(path, (file) => file.read(range.offset, range.sizeBytes));
  if (range !== undefined && buffer.length !== range.sizeBytes)
    throw new OriginError(
      'ORIGIN_ERR_CORRUPT_MEDIA',
      `${path}: the init range ${range.offset}+${range.sizeBytes} runs past the end of the file`,
      { file: path },
    );
  return { tracks: parseInitSegment(buffer, path), sizeBytes: buffer.length };
}

/** Open media files of one rendition, shared by its segments (a single-file rendition is opened once). */
class OpenFiles {
  private readonly open = new Map<string, Promise<MediaFileReader>>();

  constructor(private readonly assetDir: string) {}

  get(file: string): Promise<MediaFileReader> {
    let reader = this.open.get(file);
    if (reader === undefined) {
      reader = MediaFileReader.open(join(this.assetDir, file));
      this.open.set(file, reader);
    }
    return reader;
  }

  /** Closes a file no later segment of the rendition needs. */
  async release(file: string): Promise<void> {
    const reader = this.open.get(file);
    this.open.delete(file);
    await (await reader?.catch(() => undefined))?.close();
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.open.keys()].map((file) => this.release(file)));
  }
}

interface MeasuredSegment {
  readonly startSec: number;
  readonly durationSec: number;
  readonly sizeBytes: number;
  readonly offsetBytes: number;
}

async function measureFmp4(
  rendition: ManifestRendition,
  tracks: readonly InitTrack[],
  files: OpenFiles,
): Promise<{ segments: MeasuredSegment[]; timescale: number }> {
  const track = tracks.find((t) => t.kind === rendition.kind) ?? tracks[0]!;
  const source = (segment: ManifestSegment) => segment.sourceFile ?? segment.file;
  const last = new Map(rendition.segments.map((s, i) => [source(s), i]));
  // One file: in order, through its read-ahead window. Files of their own: 16 at a time.
  const single = last.size === 1;
  const segments = await mapLimited(rendition.segments, single ? 1 : 16, async (segment, i) => {
    const file = await files.get(source(segment));
    try {
      const { timings, sizeBytes } = await readSegmentTiming(file, tracks, segment.range);
      const timing = timings.find((t) => t.trackId === track.trackId) ?? timings[0];
      if (timing === undefined || timing.durationTicks <= 0)
        throw file.corrupt('segment carries no samples', segment.range?.offset ?? 0);
      return {
        startSec: timing.baseDecodeTimeTicks / track.timescale,
        durationSec: timing.durationTicks / track.timescale,
        sizeBytes,
        offsetBytes: segment.range?.offset ?? 0,
      };
    } finally {
      if (last.get(source(segment)) === i) await files.release(source(segment));
    }
  });
  return { segments, timescale: track.timescale };
}

/**
 * MPEG-TS segments: each one's first video DTS (from its first packets), its duration the step to
 * the next segment's first DTS; the last segment, and any whose step is not a plausible duration
 * (a discontinuity), read whole: its span of DTS plus one frame.
 */
async function measureTs(rendition: ManifestRendition, files: OpenFiles): Promise<MeasuredSegment[]> {
  const sizes = await mapLimited(
    rendition.segments,
    16,
    async (segment) => segment.range?.sizeBytes ?? (await files.get(segment.file)).sizeBytes,
  );
  const firsts = await mapLimited(rendition.segments, 16, async (segment) => {
    const found = await readTsTimestamps(await files.get(segment.file), segment.range, true);
    if (found.ticks.length === 0)
      throw new OriginError(
        'ORIGIN_ERR_CORRUPT_MEDIA',
        `${segment.file}: an MPEG-TS segment with no timestamped audio or video`,
        { file: segment.file },
      );
    return found.ticks[0]!;
  });
  const measured = await mapLimited(rendition.segments, 16, async (segment, i): Promise<MeasuredSegment> => {
    const next = firsts[i + 1];
    let durationTicks = next === undefined ? undefined : next - firsts[i]!;
    const nominalTicks = segment.manifestDurationSec * 90_000;
    if (durationTicks === undefined || durationTicks <= 0 || durationTicks > 2 * nominalTicks + 90_000) {
      const whole = await readTsTimestamps(await files.get(segment.file), segment.range, false);
      durationTicks = Math.max(...whole.ticks) - Math.min(...whole.ticks) + typicalStepTicks(whole.ticks);
    }
    if (!(durationTicks > 0))
      throw new OriginError(
        'ORIGIN_ERR_CORRUPT_MEDIA',
        `${segment.file}: an MPEG-TS segment whose timestamps span no time`,
        { file: segment.file },
      );
    return {
      startSec: ticksToSec(firsts[i]!),
      durationSec: ticksToSec(durationTicks),
      sizeBytes: sizes[i]!,
      offsetBytes: segment.range?.offset ?? 0,
    };
  });
  await files.closeAll();
  return measured;
}

/** Durations from the manifest (media that cannot be read without a key), sizes from the files. */
async function measureFromManifest(rendition: ManifestRendition, files: OpenFiles): Promise<MeasuredSegment[]> {
  const measured = await mapLimited(rendition.segments, 16, async (segment) => ({
    startSec: segment.manifestStartSec,
    durationSec: segment.manifestDurationSec,
    sizeBytes: segment.range?.sizeBytes ?? (await files.get(segment.file)).sizeBytes,
    offsetBytes: segment.range?.offset ?? 0,
  }));
  await files.closeAll();
  return measured;
}

function summarize(
  manifest: ManifestRendition,
  fields: Pick<RenditionIndex, 'timescale' | 'initSizeBytes' | 'segments' | 'encryption' | 'pacing'>,
): RenditionIndex {
  const { segments } = fields;
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
    initFile: manifest.initFile,
    durationSec,
    averageBitrateBps: durationSec > 0 ? (totalBytes * 8) / durationSec : 0,
    meanSegmentBitrateBps: rates.length > 0 ? rates.reduce((a, b) => a + b, 0) / rates.length : 0,
    peakSegmentBitrateBps: rates.length > 0 ? Math.max(...rates) : 0,
    minSegmentBitrateBps: rates.length > 0 ? Math.min(...rates) : 0,
    manifest: manifest.manifest,
    container: manifest.container,
    addressing:
      manifest.segmentBase !== undefined
        ? 'sidx'
        : manifest.segments.some((s) => s.range !== undefined)
          ? 'byte-ranges'
          : 'files',
    period: manifest.period.index,
    periodStartSec: manifest.period.startSec,
    trickPlay: manifest.trickPlay === true,
    ...fields,
  };
}

function plain(manifest: ManifestRendition, reason: string, code?: string): RenditionIndex {
  return summarize(manifest, {
    timescale: 1,
    initSizeBytes: 0,
    segments: [],
    encryption: undefined,
    pacing: { paced: false, reason, code },
  });
}

/**
 * A `$Time$` rendition whose segment files are named by other times than its timeline's: each
 * missing file is looked for among the folder's files of the same template, at the nearest time
 * within half a segment (ffmpeg's DASH muxer names an AAC track's first segment by its time before
 * the encoder's priming, -1024, while its MPD says 0). Found ones are read, and served under the
 * manifest's name, from that file.
 */
async function findMisnamedSegments(
  assetDir: string,
  manifest: ManifestRendition,
): Promise<{ manifest: ManifestRendition; found: string[] }> {
  const template = manifest.timeTemplate;
  if (template === undefined) return { manifest, found: [] };
  const listings = new Map<string, Set<string>>();
  const listing = async (folder: string) => {
    let names = listings.get(folder);
    if (names === undefined) {
      names = new Set(await readdir(join(assetDir, folder)).catch(() => []));
      listings.set(folder, names);
    }
    return names;
  };
  const folder = posix.dirname(template.pattern);
  const names = await listing(folder);
  const escaped = posix
    .basename(template.pattern)
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace('\\{time\\}', '(-?\\d+)');
  const pattern = new RegExp(`^${escaped}$`);
  const times = [...names]
    .map((name) => ({ name, ticks: Number(pattern.exec(name)?.[1]) }))
    .filter((c) => Number.isFinite(c.ticks));
  const found: string[] = [];
  const segments = manifest.segments.map((segment) => {
    if (names.has(posix.basename(segment.file))) return segment;
    const ticks = segment.manifestStartSec * template.timescale;
    const best = times.map((c) => ({ ...c, off: Math.abs(c.ticks - ticks) })).sort((a, b) => a.off - b.off)[0];
    if (best === undefined || best.off >= (segment.manifestDurationSec * template.timescale) / 2) return segment;
    const sourceFile = folder === '.' ? best.name : `${folder}/${best.name}`;
    found.push(`${segment.file} from ${sourceFile}`);
    return { ...segment, sourceFile };
  });
  return { manifest: { ...manifest, segments }, found };
}

async function indexRendition(assetDir: string, manifest: ManifestRendition): Promise<RenditionIndex> {
  if (manifest.unsupported !== undefined) return plain(manifest, manifest.unsupported, 'ORIGIN_ERR_UNSUPPORTED_MEDIA');
  if (manifest.container === 'text') return plain(manifest, 'subtitles (WebVTT or TTML) are served, not paced');
  if (manifest.trickPlay === true)
    return plain(
      manifest,
      'trick play (I-frame) ranges are served at full speed: a player scrubbing wants them at once',
    );
  const files = new OpenFiles(assetDir);
  try {
    let measured: MeasuredSegment[];
    let timescale = 90_000;
    let initSizeBytes = 0;
    let encryption: string | undefined;
    let timing: 'moof' | 'pes' | 'manifest';
    let note: string | undefined;
    if (manifest.timingFromManifest !== undefined) {
      measured = await measureFromManifest(manifest, files);
      timing = 'manifest';
      note = manifest.timingFromManifest;
      encryption = 'aes-128';
    } else if (manifest.container === 'ts') {
      measured = await measureTs(manifest, files);
      timing = 'pes';
    } else {
      const init = await readInit(assetDir, manifest);
      initSizeBytes = init.sizeBytes;
      encryption =
        init.tracks.find((t) => t.kind === manifest.kind)?.encryptionScheme ?? init.tracks[0]?.encryptionScheme;
      if (manifest.segmentBase !== undefined) {
        // The sidx says where the segments are; their moof boxes say how much media each carries
        // (the sidx's durations are presentation times: an AAC track's first one leaves out the priming its bytes
        // carry).
        const base = manifest.segmentBase;
        const index = await readSegmentIndex(await files.get(base.file), base.indexRange);
        const listed: ManifestRendition = {
          ...manifest,
          segments: index.subsegments.map((s, i) => ({
            file: base.file,
            range: { offset: s.offset, sizeBytes: s.sizeBytes },
            number: i + 1,
            manifestStartSec: s.startTicks / index.timescale,
            manifestDurationSec: s.durationTicks / index.timescale,
          })),
        };
        ({ segments: measured, timescale } = await measureFmp4(listed, init.tracks, files));
        timing = 'moof';
      } else {
        ({ segments: measured, timescale } = await measureFmp4(manifest, init.tracks, files));
        timing = 'moof';
      }
    }
    const file = (i: number) => manifest.segmentBase?.file ?? manifest.segments[i]!.file;
    const segments: SegmentEntry[] = measured.map((m, i) => {
      if (!(m.durationSec > 0))
        throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${file(i)}: segment ${i + 1} carries no media time`, {
          file: file(i),
        });
      const sourceFile = manifest.segments[i]?.sourceFile;
      return {
        file: file(i),
        ...(sourceFile === undefined ? {} : { sourceFile }),
        number: manifest.segmentBase !== undefined ? i + 1 : manifest.segments[i]!.number,
        offsetBytes: m.offsetBytes,
        sizeBytes: m.sizeBytes,
        startSec: m.startSec,
        durationSec: m.durationSec,
        bitrateBps: (m.sizeBytes * 8) / m.durationSec,
      };
    });
    return summarize(manifest, {
      timescale,
      initSizeBytes,
      segments,
      encryption,
      pacing: { paced: true, timing, note },
    });
  } catch (error) {
    await files.closeAll();
    const { message, code } = describeError(error);
    if (code === 'ENOENT') {
      const missing = /open '([^']+)'/.exec(message)?.[1];
      return plain(
        manifest,
        `a file it names is missing: ${missing === undefined ? message : missing.slice(assetDir.length + 1)}`,
        'ORIGIN_ERR_CORRUPT_MEDIA',
      );
    }
    return plain(manifest, message.startsWith(assetDir) ? message.slice(assetDir.length + 1) : message, code);
  }
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
    fragmented: layout.fragmented,
    layout,
    byteTime: new ByteTimeMap(layout),
  };
}

function segmentedFile(rendition: RenditionIndex, segments: SegmentEntry[], sizeBytes: number): SegmentedFile {
  const sorted = [...segments].sort((a, b) => a.offsetBytes - b.offsetBytes);
  const firstSec = Math.min(...sorted.map((s) => s.startSec));
  let completeSec = 0;
  const completes = sorted.map((s) => (completeSec = Math.max(completeSec, s.startSec - firstSec + s.durationSec)));
  // The first point is where media starts (after the init and the index): none of it is complete there.
  const endBytes = [sorted[0]!.offsetBytes, ...sorted.map((s) => s.offsetBytes + s.sizeBytes)];
  return {
    rendition,
    segments: sorted,
    sizeBytes,
    byteTime: new ByteTimeMap({ endBytes, completeSec: [0, ...completes] }),
  };
}

export async function buildAssetIndex(asset: string, assetDir: string, files: AssetFiles): Promise<AssetIndex> {
  const manifests = await readManifests(assetDir, files);
  const issues = [...manifests.issues];
  // The same media described twice (an MPD and HLS playlists of one packaging) is indexed once, from the first manifest
  // that names it.
  const seen = new Set<string>();
  const unique = manifests.renditions.filter((rendition) => {
    const key = mediaKey(rendition);
    if (key === '|') return true;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  const misnamed = await mapLimited(unique, 4, (rendition) => findMisnamedSegments(assetDir, rendition));
  const renditions = await mapLimited(misnamed, 4, ({ manifest, found }) =>
    indexRendition(assetDir, manifest).then((rendition) =>
      found.length === 0 || !rendition.pacing.paced
        ? rendition
        : {
            ...rendition,
            pacing: {
              ...rendition.pacing,
              note:
                `served under the manifest's name: ${found.join(', ')} (the file is named by ` +
                `another time than the timeline's)`,
            },
          },
    ),
  );
  for (const rendition of renditions) {
    if (!rendition.pacing.paced && rendition.pacing.code !== undefined)
      issues.push(`${rendition.manifest}: rendition ${rendition.id}: ${rendition.pacing.reason}`);
  }

  const named = new Set(manifests.renditions.flatMap(namedFiles));
  const progressiveFile = files.mp4Files.find((file) => !named.has(file));
  let progressive: ProgressiveIndex | undefined;
  if (progressiveFile !== undefined) {
    try {
      progressive = await indexProgressive(assetDir, progressiveFile);
    } catch (error) {
      issues.push(
        `${progressiveFile}: ${describeError(error).message.replace(`${join(assetDir, progressiveFile)}: `, '')}`,
      );
    }
  }

  const segmentByFile = new Map<string, { rendition: RenditionIndex; segment: SegmentEntry }>();
  const segmentedFiles = new Map<string, SegmentedFile>();
  const renditionByInitFile = new Map<string, RenditionIndex>();
  const trickPlayRanges = new Set<string>();
  const fileAliases = new Map<string, string>();
  for (const [i, rendition] of renditions.entries()) {
    const manifest = misnamed[i]!.manifest;
    for (const segment of rendition.pacing.paced ? rendition.segments : [])
      if (segment.sourceFile !== undefined) fileAliases.set(segment.file, segment.sourceFile);
    if (rendition.trickPlay)
      for (const s of manifest.segments) if (s.range !== undefined) trickPlayRanges.add(rangeKey(s.file, s.range));
    if (rendition.initFile !== undefined && manifest.initRange === undefined)
      renditionByInitFile.set(rendition.initFile, rendition);
    if (!rendition.pacing.paced) continue;
    const byFile = new Map<string, SegmentEntry[]>();
    for (const segment of rendition.segments) byFile.set(segment.file, [...(byFile.get(segment.file) ?? []), segment]);
    for (const [file, segments] of byFile) {
      if (rendition.addressing === 'files') {
        for (const segment of segments) segmentByFile.set(file, { rendition, segment });
      } else {
        const sizeBytes = (await stat(join(assetDir, file))).size;
        segmentedFiles.set(file, segmentedFile(rendition, segments, sizeBytes));
      }
    }
  }
  const paced = renditions.filter((r) => r.pacing.paced);
  if (paced.length === 0 && progressive === undefined) {
    const first = renditions.find((r) => !r.pacing.paced);
    const reason =
      issues[0] ??
      (first !== undefined && !first.pacing.paced
        ? `rendition ${first.id}: ${first.pacing.reason}`
        : 'no manifest or MP4 the index can read');
    const code = issues.length === 0 && first !== undefined && !first.pacing.paced ? first.pacing.code : undefined;
    throw new OriginError(
      code === 'ORIGIN_ERR_UNSUPPORTED_MEDIA' ? 'ORIGIN_ERR_UNSUPPORTED_MEDIA' : 'ORIGIN_ERR_CORRUPT_MEDIA',
      `${assetDir}: nothing of the asset can be paced: ${reason}`,
      { asset },
    );
  }
  const sources = new Set(paced.map((r) => (manifests.mpdFiles.includes(r.manifest) ? 'mpd' : 'hls')));
  return {
    asset,
    mpdFiles: manifests.mpdFiles,
    hlsEntryFiles: manifests.hlsEntryFiles,
    hlsPlaylists: manifests.hlsPlaylists,
    renditions,
    segmentSource: sources.size === 2 ? 'mpd+hls' : sources.has('mpd') ? 'mpd' : sources.has('hls') ? 'hls' : 'none',
    progressive,
    durationSec: Math.max(0, ...renditions.map((r) => r.durationSec), progressive?.durationSec ?? 0),
    segmentByFile,
    segmentedFiles,
    renditionByInitFile,
    trickPlayRanges,
    fileAliases,
    abrLadders: abrLadders(renditions),
    issues,
  };
}

export function rangeKey(file: string, span: ByteSpan): string {
  return `${file}@${span.offset}+${span.sizeBytes}`;
}

/** The segments of a segmented file that the inclusive byte range [start, end] overlaps, in file order. */
export function segmentsInRange(file: SegmentedFile, start: number, end: number): SegmentEntry[] {
  const segments = file.segments;
  let lo = 0;
  let hi = segments.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (segments[mid]!.offsetBytes + segments[mid]!.sizeBytes <= start) lo = mid + 1;
    else hi = mid;
  }
  const covered: SegmentEntry[] = [];
  for (let i = lo; i < segments.length && segments[i]!.offsetBytes <= end; i++) covered.push(segments[i]!);
  return covered;
}

/** The JSON summary served at /api/assets/<asset>. */
export function summarizeIndex(index: AssetIndex, options: { includeSegments: boolean }) {
  return {
    asset: index.asset,
    durationSec: index.durationSec,
    manifests: {
      dash: index.mpdFiles[0] ?? null,
      hls: index.hlsEntryFiles[0] ?? null,
      all: [...index.mpdFiles, ...index.hlsEntryFiles],
    },
    segmentSource: index.segmentSource,
    issues: index.issues,
    renditions: index.renditions.map((r) => ({
      id: r.id,
      kind: r.kind,
      width: r.width ?? null,
      height: r.height ?? null,
      codecs: r.codecs ?? null,
      declaredBandwidthBps: r.declaredBandwidthBps ?? null,
      manifest: r.manifest,
      container: r.container,
      addressing: r.addressing,
      encryption: r.encryption ?? null,
      trickPlay: r.trickPlay,
      paced: r.pacing.paced,
      ...(r.pacing.paced
        ? { timing: r.pacing.timing, ...(r.pacing.note === undefined ? {} : { note: r.pacing.note }) }
        : { reason: r.pacing.reason }),
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
              ...(r.addressing === 'files' ? {} : { offsetBytes: s.offsetBytes }),
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
            fragmented: index.progressive.fragmented,
          },
  };
}
