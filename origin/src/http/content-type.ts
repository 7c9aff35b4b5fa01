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
  '.ts': { contentType: 'video/mp2t', role: 'segment' },
  '.aac': { contentType: 'audio/aac', role: 'other' },
  '.mov': { contentType: 'video/quicktime', role: 'progressive' },
  '.vtt': { contentType: 'text/vtt; charset=utf-8', role: 'other' },
  '.webvtt': { contentType: 'text/vtt; charset=utf-8', role: 'other' },
  '.json': { contentType: 'application/json; charset=utf-8', role: 'other' },
};

/** A file's type and role by its extension alone (the media index says more once it is built: library.ts). */
export function classifyFile(fileName: string): { contentType: string; role: FileRole } {
  return byExtension[extname(fileName).toLowerCase()] ?? { contentType: 'application/octet-stream', role: 'other' };
}
