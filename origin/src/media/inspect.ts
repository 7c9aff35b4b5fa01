/**
 * `trickle media inspect <dir>`: what the origin understood of one asset folder: the manifests it
 * read, each rendition (how it is packed and addressed, its segments and their rate range, where
 * the durations came from), the progressive file, and what it could not read and why.
 */
import { readdir } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import { OriginError } from '../errors.js';
import { assetFilesOf, buildAssetIndex, hasMedia, type AssetIndex } from './media-index.js';

/** Indexes one asset folder as `trickle serve` would (the folder's name is the asset's). */
export async function inspectAsset(dir: string): Promise<AssetIndex> {
  const path = resolve(dir);
  const names = await readdir(path).catch((error: unknown) => {
    throw new OriginError(
      'ORIGIN_ERR_INPUT_UNREADABLE',
      `${path} is not a readable folder (${(error as Error).message})`,
      { dir: path },
      { cause: error },
    );
  });
  const files = assetFilesOf(names);
  if (!hasMedia(files))
    throw new OriginError(
      'ORIGIN_ERR_INPUT_UNREADABLE',
      `${path} holds no MPD, HLS playlist or MP4 at its top: give an asset's folder`,
      { dir: path },
    );
  return buildAssetIndex(basename(path), path, files);
}

/** One line per rendition: what the index understood. */
export function describeRenditions(index: AssetIndex): string[] {
  return index.renditions.map((r) => {
    const what =
      `${r.id} (${r.kind}${r.height === undefined ? '' : ` ${r.height}p`}, ` +
      `${r.container}, ${r.addressing}` +
      `${r.encryption === undefined ? '' : `, ${r.encryption}`}` +
      `${r.trickPlay ? ', I-frames' : ''}, ` +
      `from ${r.manifest})`;
    if (!r.pacing.paced) return `${what}: plain: ${r.pacing.reason}`;
    const kbps = (bps: number) => `${Math.round(bps / 1000)}`;
    return (
      `${what}: paced, ${r.segments.length} segments, ${r.durationSec.toFixed(2)} ` +
      `s, ${kbps(r.minSegmentBitrateBps)}-${kbps(r.peakSegmentBitrateBps)} kbit/s ` +
      `(mean ${kbps(r.averageBitrateBps)}), durations ` +
      `from ${r.pacing.timing}${r.pacing.note === undefined ? '' : ` (${r.pacing.note})`}`
    );
  });
}

/** The inspection as text lines. */
export function describeAsset(index: AssetIndex): string[] {
  const progressive = index.progressive;
  return [
    `asset ${index.asset}: ${index.durationSec.toFixed(2)} s, segments from ${index.segmentSource}`,
    `manifests: ${[...index.mpdFiles, ...index.hlsEntryFiles].join(', ') || 'none'}`,
    ...describeRenditions(index).map((line) => `  ${line}`),
    progressive === undefined
      ? 'progressive: none'
      : `progressive: ${progressive.file} ` +
        `(${progressive.faststart ? 'faststart' : 'moov at the end'}` +
        `${progressive.fragmented ? ', fragmented' : ''}), ` +
        `${progressive.durationSec.toFixed(2)} ` +
        `s, ${Math.round(progressive.averageBitrateBps / 1000)} kbit/s: paced per VBR block`,
    ...(index.issues.length === 0
      ? ['nothing left unread']
      : ['not paced, and why:', ...index.issues.map((issue) => `  ${issue}`)]),
  ];
}
