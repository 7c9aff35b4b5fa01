/**
 * HLS reading (hls-parser): the master playlist's variants and audio renditions, and each media
 * playlist's init map and segment files. Used to list an asset's playlists and, for assets that
 * have no MPD, as the source of the segment list.
 */
import * as HLS from 'hls-parser';
import { OriginError } from '../errors.js';
import type { ManifestRendition } from './manifest.js';

export interface HlsPlaylistRef {
  readonly uri: string;
  readonly kind: 'video' | 'audio';
  readonly bandwidthBps: number | undefined;
  readonly averageBandwidthBps: number | undefined;
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly codecs: string | undefined;
}

function parseText(text: string, source: string): HLS.types.MasterPlaylist | HLS.types.MediaPlaylist {
  try {
    return HLS.parse(text);
  } catch (error) {
    throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: not a valid HLS playlist: ${(error as Error).message}`, { file: source }, { cause: error });
  }
}

export function isMasterPlaylist(text: string): boolean {
  return text.includes('#EXT-X-STREAM-INF');
}

export function parseMasterPlaylist(text: string, source: string): HlsPlaylistRef[] {
  const playlist = parseText(text, source);
  if (!playlist.isMasterPlaylist) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: expected a master playlist`, { file: source });
  const refs: HlsPlaylistRef[] = [];
  const seen = new Set<string>();
  for (const variant of (playlist as HLS.types.MasterPlaylist).variants) {
    if (variant.isIFrameOnly) continue;
    if (!seen.has(variant.uri)) {
      seen.add(variant.uri);
      refs.push({
        uri: variant.uri,
        kind: 'video',
        bandwidthBps: variant.bandwidth,
        averageBandwidthBps: variant.averageBandwidth,
        width: variant.resolution?.width,
        height: variant.resolution?.height,
        codecs: variant.codecs,
      });
    }
    for (const audio of variant.audio) {
      if (audio.uri === undefined || seen.has(audio.uri)) continue;
      seen.add(audio.uri);
      refs.push({ uri: audio.uri, kind: 'audio', bandwidthBps: undefined, averageBandwidthBps: undefined, width: undefined, height: undefined, codecs: undefined });
    }
  }
  return refs;
}

export function parseMediaPlaylist(text: string, source: string, ref: HlsPlaylistRef): ManifestRendition {
  const playlist = parseText(text, source);
  if (playlist.isMasterPlaylist) throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: expected a media playlist`, { file: source });
  const media = playlist as HLS.types.MediaPlaylist;
  let startSec = 0;
  let initFile: string | undefined;
  const segments = media.segments.map((segment, k) => {
    if (segment.byterange !== undefined) {
      throw new OriginError('ORIGIN_ERR_CORRUPT_MEDIA', `${source}: EXT-X-BYTERANGE segments are served but not indexed`, { file: source });
    }
    initFile ??= segment.map?.uri;
    const entry = { file: segment.uri, number: (media.mediaSequenceBase ?? 0) + k, manifestStartSec: startSec, manifestDurationSec: segment.duration };
    startSec += segment.duration;
    return entry;
  });
  return {
    id: ref.uri.replace(/\.m3u8$/, ''),
    kind: ref.kind,
    declaredBandwidthBps: ref.averageBandwidthBps ?? ref.bandwidthBps,
    width: ref.width,
    height: ref.height,
    codecs: ref.codecs,
    initFile,
    segments,
  };
}
