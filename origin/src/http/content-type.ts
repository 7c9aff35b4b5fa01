/** Media types for the files an asset holds (RFC 8216 for HLS, ISO/IEC 23009-1 for DASH). */
import { extname } from 'node:path';

export type FileRole = 'manifest' | 'init' | 'segment' | 'progressive' | 'other';

const byExtension: Record<string, { contentType: string; role: FileRole }> = {
  '.mpd': { contentType: 'application/dash+xml', role: 'manifest' },
  '.m3u8': { contentType: 'application/vnd.apple.mpegurl', role: 'manifest' },
  '.m4s': { contentType: 'video/iso.segment', role: 'segment' },
  '.cmfv': { contentType: 'video/iso.segment', role: 'segment' },
  '.cmfa': { contentType: 'video/iso.segment', role: 'segment' },
  '.mp4': { contentType: 'video/mp4', role: 'progressive' },
  '.m4v': { contentType: 'video/mp4', role: 'progressive' },
  '.m4a': { contentType: 'audio/mp4', role: 'progressive' },
  '.vtt': { contentType: 'text/vtt; charset=utf-8', role: 'other' },
  '.json': { contentType: 'application/json; charset=utf-8', role: 'other' },
};

/**
 * `initKind` is the track kind when the index knows the file is an init segment: init segments
 * are complete MP4 headers, so they get video/mp4 or audio/mp4 rather than iso.segment.
 */
export function classifyFile(fileName: string, initKind?: 'video' | 'audio' | 'other'): { contentType: string; role: FileRole } {
  if (initKind !== undefined) return { contentType: initKind === 'audio' ? 'audio/mp4' : 'video/mp4', role: 'init' };
  return byExtension[extname(fileName).toLowerCase()] ?? { contentType: 'application/octet-stream', role: 'other' };
}
