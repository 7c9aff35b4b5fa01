import type { TrackKind } from './fragments.js';

/** What a manifest (MPD or HLS) says about one rendition, before the segments are measured. */
export interface ManifestRendition {
  readonly id: string;
  readonly kind: TrackKind;
  readonly declaredBandwidthBps: number | undefined;
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly codecs: string | undefined;
  /** Init segment file, relative to the asset directory. */
  readonly initFile: string | undefined;
  readonly segments: readonly ManifestSegment[];
}

export interface ManifestSegment {
  /** Media segment file, relative to the asset directory. */
  readonly file: string;
  readonly number: number;
  readonly manifestStartSec: number;
  readonly manifestDurationSec: number;
}
