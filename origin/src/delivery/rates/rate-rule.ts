/**
 * RateRule: what rate a response's bytes should arrive at, and from which byte. One half of a
 * delivery policy (the other is the Enforcer: how that rate is enforced). A rule sees the media
 * facts of the response (a segment and its ladder, or a progressive range and its VBR blocks),
 * the client's CMCD and what this viewer fetched before, and answers with a plan: where the
 * startup phase (full speed) ends, the target rate R of any run of bytes after it, and why.
 * Pure: no sockets, no clocks (the time comes in the context).
 */
import type { Cmcd } from '@svta/common-media-library/cmcd';
import type { PathHold } from '../path-evidence.js';
import type { VbrBlocks } from '../rate-plan.js';
import type { ViewerRunState } from '../viewer-runs.js';

export interface SegmentFacts {
  readonly number: number;
  readonly renditionId: string;
  readonly kind: 'video' | 'audio' | 'other';
  /** Media start relative to the presentation's first segment. */
  readonly presentationSec: number;
  readonly durationSec: number;
  readonly sizeBytes: number;
  /** The segment's own rate: its size over its duration (bits/s). */
  readonly bitrateBps: number;
  /**
   * The declared bitrates players compare their throughput estimates with, ascending, for the
   * renditions of this segment's kind (video rungs with the audio added, as HLS variants declare
   * them), and this rendition's own entry.
   */
  readonly ladderBps: readonly number[];
  readonly renditionBps: number;
  /**
   * The top of the video ladder of the segment's period (undefined without video): what an audio
   * segment's arrival rate must not fall below, for players that estimate throughput from every
   * request on the path (Shaka Player, ExoPlayer), audio included.
   */
  readonly videoTopBps?: number | undefined;
}

export interface ProgressiveFacts {
  readonly blocks: VbrBlocks;
}

/** One media response as rules see it. */
export interface MediaResponse {
  readonly asset: string;
  readonly file: string;
  readonly role: 'segment' | 'progressive';
  /** Inclusive byte range of the file being sent. */
  readonly rangeStart: number;
  readonly rangeEnd: number;
  readonly cmcd: Cmcd | undefined;
  readonly segment?: SegmentFacts;
  readonly progressive?: ProgressiveFacts;
}

export interface RateContext {
  readonly response: MediaResponse;
  /** Segments: this viewer's run of consecutive segments so far (see viewer-runs.ts). */
  readonly viewer: ViewerRunState | undefined;
  /** Segments: whether the path held this connection's last paced segment back (see path-evidence.ts). */
  readonly path?: PathHold | undefined;
  readonly nowMs: number;
}

/** A rate by byte offset (bytes/s), uniform between its steps. */
export interface MediaRates {
  rateAt(offset: number, sizeBytes: number): number;
  /**
   * The offsets strictly between `startOffset` and `endOffset` where the rate may change, ascending (none for a
   * constant rate): where a schedule cut into runs of uniform rate must cut.
   */
  stepsWithin(startOffset: number, endOffset: number): readonly number[];
}

/**
 * `rateAt`: the target rate R (bytes/s) of the bytes [offset, offset + sizeBytes), what enforcers apply their headroom
 * to; `stepsWithin`: where R may change.
 */
export interface RatePlan extends MediaRates {
  /** Absolute byte offset of the file at which the throttling phase begins (past the range: never). */
  readonly startupEndOffset: number;
  /** The media's own rate of the same bytes (equal to `rateAt` for the paper's rule). */
  readonly media: MediaRates;
  /** Why the plan is what it is (records and logs). */
  readonly reason: string;
  /** Response headers the rule adds (CMSD, Server-Timing rate). */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * The floor of the response's cwnd clamp in packets, where the rule knows the path holds fewer than the enforcer's
   * (the abr rule on a connection the path holds); undefined: the enforcer's own. An enforcer only lowers its floor.
   */
  readonly floorPackets?: number | undefined;
}

export interface RateRule {
  readonly name: string;
  plan(context: RateContext): RatePlan;
}

/** A constant rate over a segment (or a part of one). */
export function constantRate(bytesPerSec: number): MediaRates {
  return { rateAt: () => bytesPerSec, stepsWithin: () => [] };
}
