/**
 * Where an origin serves an asset to a player: DASH for dash.js and Shaka Player, HLS for hls.js, the progressive MP4 for a plain
 * <video>.
 */
import type { PlayerKind } from './session-record.js';

/** Which of an asset's presentations a player plays: the one mapping of player to manifest kind. */
export function linkKindOf(player: PlayerKind): 'dash' | 'hls' | 'progressive' {
  if (player === 'dashjs' || player === 'shaka') return 'dash';
  if (player === 'hlsjs') return 'hls';
  return 'progressive';
}

const defaultFiles = { dash: 'manifest.mpd', hls: 'master.m3u8', progressive: 'progressive.mp4' } as const;

/** The presentation's path in an asset laid out as `trickle media demo` and `trickle package` write it. */
export function assetPath(asset: string, player: PlayerKind): string {
  return `/media/${encodeURIComponent(asset)}/${defaultFiles[linkKindOf(player)]}`;
}
