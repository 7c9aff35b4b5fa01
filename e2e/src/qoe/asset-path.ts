/**
 * Where an origin serves an asset to a player: DASH for dash.js and Shaka Player, HLS for hls.js, the progressive MP4 for a plain
 * <video>.
 */
import type { PlayerKind } from './session-record.js';

export function assetPath(asset: string, player: PlayerKind): string {
  const name = encodeURIComponent(asset);
  if (player === 'dashjs' || player === 'shaka') return `/media/${name}/manifest.mpd`;
  if (player === 'hlsjs') return `/media/${name}/master.m3u8`;
  return `/media/${name}/progressive.mp4`;
}
