/**
 * The repository's one HLS playlist reader (hls-parser underneath; the origin's index, the player
 * simulator and the browser harness use it): a master playlist's variants, alternate audio and
 * subtitle renditions and I-frame playlists, and each media playlist's init map and segments:
 * fMP4 (EXT-X-MAP) or MPEG-TS, whole files or EXT-X-BYTERANGE ranges (explicit or implied
 * offsets), WebVTT subtitles. A media playlist alone (no master) is an asset of one variant.
 */
import { posix } from 'node:path';
import * as HLS from 'hls-parser';
import { OriginError } from '../errors.js';
import type { ManifestRendition, ManifestSegment } from './manifest.js';

export type HlsMasterPlaylist = HLS.types.MasterPlaylist;
export type HlsMediaPlaylist = HLS.types.MediaPlaylist;

export interface HlsPlaylistRef {
  /** Path of the media playlist relative to the asset directory. */
  readonly uri: string;
  readonly kind: 'video' | 'audio' | 'subtitles';
  /** An I-frame playlist (EXT-X-I-FRAME-STREAM-INF): trick play. */
  readonly iFrame: boolean;
  readonly bandwidthBps: number | undefined;
  readonly averageBandwidthBps: number | undefined;
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly codecs: string | undefined;
  /** The group an alternate rendition belongs to (EXT-X-MEDIA GROUP-ID), or the audio group a variant uses. */
  readonly groupId: string | undefined;
}

/** Parses playlist text; a malformed playlist is ORIGIN_ERR_CORRUPT_MEDIA naming `source`. */
export function parsePlaylist(text: string, source: string): HLS.types.MasterPlaylist | HLS.types.MediaPlaylist {
  try {
    return HLS.parse(text);
  } catch (error) {
    throw new OriginError(
      'ORIGIN_ERR_CORRUPT_MEDIA',
      `${source}: not a valid HLS playlist: ${(error as Error).message}`,
      { file: source },
      { cause: error },
    );
  }
}

export function isMasterPlaylist(text: string): boolean {
  return text.includes('#EXT-X-STREAM-INF') || text.includes('#EXT-X-I-FRAME-STREAM-INF');
}

/**
 * A URI of a playlist, relative to the asset directory; undefined for one that leaves the asset (absolute, or above
 * it).
 */
export function assetPath(playlistPath: string, uri: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(uri) || uri.startsWith('/')) return undefined;
  const joined = posix.normalize(posix.join(posix.dirname(playlistPath), decodeURIComponent(uri.split('?')[0]!)));
  return joined.startsWith('../') || joined === '..' ? undefined : joined;
}

/** An audio-only variant declares audio codecs and no resolution. */
function variantKind(variant: HLS.types.Variant): 'video' | 'audio' {
  const codecs = (variant.codecs ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean);
  return variant.resolution === undefined &&
    codecs.length > 0 &&
    codecs.every((c) => /^(mp4a|ac-3|ec-3|opus|flac|alac)/i.test(c))
    ? 'audio'
    : 'video';
}

/** The media playlists a master names, each once: variants, I-frame playlists, alternate audio and subtitles. */
export function parseMasterPlaylist(text: string, masterPath: string): HlsPlaylistRef[] {
  const playlist = parsePlaylist(text, masterPath);
  if (!playlist.isMasterPlaylist)
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${masterPath}: expected a master playlist`, {
      file: masterPath,
    });
  const refs: HlsPlaylistRef[] = [];
  const seen = new Set<string>();
  const add = (uri: string | undefined, ref: Omit<HlsPlaylistRef, 'uri'>) => {
    if (uri === undefined) return;
    const path = assetPath(masterPath, uri) ?? uri;
    if (seen.has(path)) return;
    seen.add(path);
    refs.push({ uri: path, ...ref });
  };
  const none = {
    bandwidthBps: undefined,
    averageBandwidthBps: undefined,
    width: undefined,
    height: undefined,
    codecs: undefined,
  };
  for (const variant of (playlist as HLS.types.MasterPlaylist).variants) {
    add(variant.uri, {
      kind: variant.isIFrameOnly === true ? 'video' : variantKind(variant),
      iFrame: variant.isIFrameOnly === true,
      bandwidthBps: variant.bandwidth,
      averageBandwidthBps: variant.averageBandwidth,
      width: variant.resolution?.width,
      height: variant.resolution?.height,
      codecs: variant.codecs,
      groupId: variant.audio[0]?.groupId,
    });
    for (const audio of variant.audio)
      add(audio.uri, { ...none, kind: 'audio', iFrame: false, groupId: audio.groupId });
    for (const subtitles of variant.subtitles)
      add(subtitles.uri, { ...none, kind: 'subtitles', iFrame: false, groupId: subtitles.groupId });
  }
  return refs;
}

/** The ref a lone media playlist stands for (an asset without a master playlist). */
export function loneMediaPlaylistRef(path: string): HlsPlaylistRef {
  return {
    uri: path,
    kind: 'video',
    iFrame: false,
    bandwidthBps: undefined,
    averageBandwidthBps: undefined,
    width: undefined,
    height: undefined,
    codecs: undefined,
    groupId: undefined,
  };
}

function containerOf(media: HLS.types.MediaPlaylist, ref: HlsPlaylistRef): ManifestRendition['container'] {
  if (ref.kind === 'subtitles') return 'text';
  if (media.segments.some((s) => s.map != null)) return 'fmp4';
  const file = (media.segments[0]?.uri ?? '').split('?')[0]!.toLowerCase();
  if (file.endsWith('.vtt') || file.endsWith('.webvtt')) return 'text';
  if (file.endsWith('.mp4') || file.endsWith('.m4s') || file.endsWith('.cmfv') || file.endsWith('.cmfa')) return 'fmp4';
  return 'ts';
}

/** One media playlist as a rendition; `playlistPath` is its path relative to the asset directory. */
export function parseMediaPlaylist(text: string, playlistPath: string, ref: HlsPlaylistRef): ManifestRendition {
  const playlist = parsePlaylist(text, playlistPath);
  if (playlist.isMasterPlaylist)
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${playlistPath}: expected a media playlist`, {
      file: playlistPath,
    });
  const media = playlist as HLS.types.MediaPlaylist;
  const container = containerOf(media, ref);
  const base = {
    id: ref.uri.replace(/\.m3u8$/, ''),
    kind: ref.kind === 'subtitles' ? ('other' as const) : ref.kind,
    container,
    declaredBandwidthBps: ref.averageBandwidthBps ?? ref.bandwidthBps,
    width: ref.width,
    height: ref.height,
    codecs: ref.codecs,
    trickPlay: ref.iFrame || undefined,
    period: { index: 0, startSec: 0 },
    manifest: playlistPath,
  };
  if (!media.endlist && media.playlistType !== 'VOD') {
    return {
      ...base,
      initFile: undefined,
      segments: [],
      unsupported: 'a live playlist (no EXT-X-ENDLIST): the origin indexes VOD',
    };
  }
  let startSec = 0;
  let initFile: string | undefined;
  let initRange: ManifestRendition['initRange'];
  let outside: string | undefined;
  let wholeSegmentEncryption = false;
  const segments: ManifestSegment[] = media.segments.map((segment, k) => {
    const file = assetPath(playlistPath, segment.uri);
    if (file === undefined) outside ??= segment.uri;
    if (initFile === undefined && segment.map != null) {
      initFile = assetPath(playlistPath, segment.map.uri);
      if (initFile === undefined) outside ??= segment.map.uri;
      initRange =
        segment.map.byterange == null
          ? undefined
          : { offset: segment.map.byterange.offset, sizeBytes: segment.map.byterange.length };
    }
    if (segment.key?.method === 'AES-128') wholeSegmentEncryption = true;
    const entry: ManifestSegment = {
      file: file ?? segment.uri,
      range:
        segment.byterange == null
          ? undefined
          : { offset: segment.byterange.offset, sizeBytes: segment.byterange.length },
      number: (media.mediaSequenceBase ?? 0) + k,
      manifestStartSec: startSec,
      manifestDurationSec: segment.duration,
    };
    startSec += segment.duration;
    return entry;
  });
  if (outside !== undefined)
    return {
      ...base,
      initFile,
      initRange,
      segments: [],
      unsupported: `it names "${outside}", which is not a file of this asset ${outsideWhy}`,
    };
  return {
    ...base,
    initFile,
    initRange,
    segments,
    // Whole-segment AES-128: the bytes cannot be read without the key; the playlist's durations stand in.
    unsupported: undefined,
    ...(wholeSegmentEncryption
      ? {
          timingFromManifest:
            "its segments are AES-128 encrypted whole: durations are the playlist's EXTINF, not the media's",
        }
      : {}),
  };
}

const outsideWhy = "(an absolute URI, or above the asset's folder)";
