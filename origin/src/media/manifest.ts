import type { ByteSpan } from './boxes.js';
import type { TrackKind } from './fragments.js';

export type { ByteSpan };

/** What a manifest (MPD or HLS) says about one rendition, before the segments are measured. */
export interface ManifestRendition {
  /**
   * Unique within the asset (a DASH Representation id, prefixed by its Period's index when there are several; an HLS
   * playlist's path).
   */
  readonly id: string;
  readonly kind: TrackKind;
  readonly declaredBandwidthBps: number | undefined;
  readonly width: number | undefined;
  readonly height: number | undefined;
  readonly codecs: string | undefined;
  /** Init segment file, relative to the asset directory. */
  readonly initFile: string | undefined;
  /** The init segment's bytes when it is part of a larger file (DASH Initialization@range, HLS EXT-X-MAP BYTERANGE). */
  readonly initRange?: ByteSpan | undefined;
  /** Listed segments (empty for SegmentBase, whose segments are the file's own `sidx`). */
  readonly segments: readonly ManifestSegment[];
  /**
   * DASH SegmentBase: one file whose segments its `sidx` lists (found at `indexRange`, else by scanning its top-level
   * boxes).
   */
  readonly segmentBase?: { readonly file: string; readonly indexRange: ByteSpan | undefined } | undefined;
  /** How the segments are packed: fragmented MP4 (CMAF), MPEG-TS, or text (WebVTT subtitles, served but not paced). */
  readonly container: 'fmp4' | 'ts' | 'text';
  /** A trick-play rendition (DASH trickmode, HLS I-frame playlist): served, not on the ABR ladder, not paced. */
  readonly trickPlay?: boolean | undefined;
  /** The DASH Period it belongs to (0 for HLS) and when that Period starts in the presentation. */
  readonly period: { readonly index: number; readonly startSec: number };
  /** The manifest it was read from, relative to the asset directory. */
  readonly manifest: string;
  /**
   * A `$Time$` template's file pattern (the time written as `{time}`) and timescale, so a segment file
   * named by a slightly different time than the manifest's (ffmpeg names an AAC track's first segment
   * by its time before the encoder's priming) can still be found.
   */
  readonly timeTemplate?: { readonly pattern: string; readonly timescale: number } | undefined;
  /**
   * Why its segments' durations come from the manifest rather than the media, when they do (whole-segment encryption).
   */
  readonly timingFromManifest?: string | undefined;
  /** Why the rendition cannot be indexed although its manifest is valid, when it cannot (it is then served plain). */
  readonly unsupported?: string | undefined;
}

export interface ManifestSegment {
  /** Media segment file, relative to the asset directory: what players ask for. */
  readonly file: string;
  /** The file that holds its bytes when that is not `file` (found by its time: see `timeTemplate`). */
  readonly sourceFile?: string | undefined;
  /** The segment's bytes when it is part of a larger file (SegmentList@mediaRange, EXT-X-BYTERANGE). */
  readonly range?: ByteSpan | undefined;
  readonly number: number;
  readonly manifestStartSec: number;
  readonly manifestDurationSec: number;
}
