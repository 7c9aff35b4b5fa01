/**
 * `@trickle/origin/manifests`: the repository's one DASH MPD reader and one HLS playlist reader,
 * and the media index built on them, without fastify: the player simulator and the browser harness
 * read manifests through this entry.
 */
export { parseIsoDurationSec, parseMpd, type MpdPeriod, type ParsedMpd } from './media/mpd.js';
export {
  assetPath,
  isMasterPlaylist,
  loneMediaPlaylistRef,
  parseMasterPlaylist,
  parseMediaPlaylist,
  parsePlaylist,
  type HlsPlaylistRef,
} from './media/hls.js';
export type { ByteSpan, ManifestRendition, ManifestSegment } from './media/manifest.js';
export {
  assetFilesOf,
  buildAssetIndex,
  summarizeIndex,
  type AssetFiles,
  type AssetIndex,
  type RenditionIndex,
  type SegmentEntry,
} from './media/media-index.js';
