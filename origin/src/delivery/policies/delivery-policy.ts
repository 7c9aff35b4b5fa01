/**
 * DeliveryPolicy: how one response's bytes go onto its socket. The delivery engine splits a
 * response into blocks; blocks before the plan's startup end go at full speed, the rest ask the
 * policy first (`beforeBlock`: how long to wait, and the socket options to set on the way). A
 * policy reaches the socket only through the SocketControl port, and never throws on the request
 * path for a socket option: it reports the failure through `env.socketError` and carries on.
 */
import type { Cmcd } from '@svta/common-media-library/cmcd';
import type { ClampBackendName, SocketControl, SocketLike, TcpInfo } from '@trickle/native';
import type { PolicyName } from '../../config/config.js';
import type { Summary } from '../running-stats.js';

/** Where the startup phase ends and what rate each block of a response should arrive at. */
export interface MediaRatePlan {
  /** Absolute byte offset of the file at which the throttling phase begins (beyond the range: never). */
  readonly startupEndOffset: number;
  /** Target media rate R (bytes/s) of the block at `offset` of `sizeBytes` bytes. */
  rateAt(offset: number, sizeBytes: number): number;
  /** Why the plan is what it is (for records and logs). */
  readonly reason: string;
}

export interface MediaResponse {
  readonly asset: string;
  readonly file: string;
  readonly role: 'segment' | 'progressive';
  /** Inclusive byte range of the file being sent. */
  readonly rangeStart: number;
  readonly rangeEnd: number;
  /** The plan derived from the media index (per segment, or per VBR block of a progressive file). */
  readonly mediaPlan: MediaRatePlan;
  /** Segments: the segment's own bitrate and the bitrates of its kind's renditions, ascending. */
  readonly segment?: { readonly bitrateBps: number; readonly renditionBitratesBps: readonly number[]; readonly kind: 'video' | 'audio' | 'other' };
  readonly cmcd: Cmcd | undefined;
}

/** What a policy may touch. `socketError` logs and counts a failed socket call (never a 500). */
export interface PolicyEnv {
  readonly socket: SocketLike;
  readonly control: SocketControl;
  /**
   * The socket's TCP_INFO now; a failure is reported through `socketError` and gives undefined.
   * Policies read it here rather than through `control`, so the engine can record the same reading
   * for the block instead of making a second call.
   */
  tcpInfo(): TcpInfo | undefined;
  socketError(operation: string, error: unknown): void;
}

export interface Block {
  /** Absolute offset of the block's first byte in the file. */
  readonly offset: number;
  readonly sizeBytes: number;
  /** Target media rate R for this block, bytes/s. */
  readonly rateBytesPerSec: number;
  readonly nowMs: number;
}

/**
 * Startup bytes still unsent in the socket when throttling begins, and the media rate they carry.
 * Under a limit in the socket they leave at the throttled pace, so they are the phase's first bytes.
 */
export interface UnsentStartup {
  readonly sizeBytes: number;
  readonly rateBytesPerSec: number;
}

/** The per-policy part of a flow record. */
export interface PolicyReport {
  /** What actually limited the rate: the clamp backend for trickle, `app` for token buckets, `kernel-pacing`, or `none`. */
  readonly backend: ClampBackendName | 'app' | 'kernel-pacing';
  /** Why a weaker backend than the policy's preferred one was used. */
  readonly fallbackReason: string | undefined;
  /** The rate the policy aimed each throttled block at (bits/s), over blocks. */
  readonly paceRateBps: Summary | null;
  /** trickle: the clamp user space computed per block (packets) and what the kernel applied; null if no cwnd clamp was applied. */
  readonly clampPackets: Summary | null;
  readonly appliedClampPackets: Summary | null;
  /** trickle with bpf: the socket's cwnd read in the same breath as each applied clamp above. */
  readonly cwndWhileClampedPackets: Summary | null;
  /** trickle: how often the clamp was lifted to catch up, and how many blocks had writes throttled at R. */
  readonly catchUps: number;
  readonly throttledWriteBlocks: number;
  /** The last decision's reason (as dash.js SwitchRequests carry one). */
  readonly reason: string;
}

/** One response under a policy. */
export interface PolicyDelivery {
  /** The plan this policy follows (usually the media plan; cmcd makes its own). */
  readonly plan: MediaRatePlan;
  readonly blockBytes: number;
  /**
   * Blocks that may wait in user space while the socket is full (0: a block is produced only when
   * the socket has taken the previous one, so decisions track what is being sent).
   */
  readonly readAheadBlocks: number;
  /**
   * The throttled rate is enforced in the socket (a clamp, a pacing rate), so startup bytes still
   * unsent in the socket when throttling begins leave at that rate: they belong to the throttled
   * phase's goodput. With an application-level limit they leave at full speed, as startup.
   */
  readonly limitsInSocket: boolean;
  /** Response headers the policy adds (CMSD, Server-Timing). */
  readonly headers: Readonly<Record<string, string>>;
  /** The first throttled block is about to be considered; `info` is the socket's state then. */
  startThrottling(nowMs: number, info: TcpInfo | undefined, unsent: UnsentStartup): void;
  /** Milliseconds to wait before writing this throttled block (0: now). */
  beforeBlock(block: Block): number;
  /** The block was handed to the socket. */
  afterBlock(block: Block): void;
  /** The response ended (its last byte acknowledged, the next request came, or it was aborted): undo what it set on the socket. */
  end(): void;
  report(): PolicyReport;
}

export interface DeliveryPolicy {
  readonly name: PolicyName;
  /** False for bulk: the engine sends the body in one go and only records the flow. */
  readonly paced: boolean;
  start(response: MediaResponse, env: PolicyEnv): PolicyDelivery;
}
