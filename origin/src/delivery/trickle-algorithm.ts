/**
 * Algorithm 1 of the Trickle paper (Ghobadi et al., ATC'12), the decision taken for each block
 * in the throttling phase, as a pure function:
 *
 *   clamp = gain * R * rtt / MSS
 *   if goodput < R: clamp = inf          (catch up after congestion)
 *   if clamp < 10: clamp = 10, throttle writes at R
 *   apply clamp; write (throttled or all)
 *
 * Lifting the clamp for catch-up and restoring it once goodput has reached R again follows
 * section 3.4. Before goodput can be measured (the first block of the throttling phase), the
 * flow counts as on time. Goodput below R lifts the clamp only when the flow is network-limited:
 * with writes throttled at R the flow is one held-back block short of R just before each write,
 * by design, and lifting the clamp then would only turn that block into a burst.
 */
export interface TrickleInput {
  /** Target rate R of the media being sent, bytes/s. */
  readonly rateBytesPerSec: number;
  readonly rttUs: number;
  readonly mssBytes: number;
  /**
   * Bytes delivered (acknowledged) / time since the throttling phase began, bytes/s; undefined before the first
   * measurement.
   */
  readonly goodputBytesPerSec: number | undefined;
  /**
   * What goodput is compared with: R of the media sent so far in the phase (bytes over the media
   * time they carry). For VBR media this differs from the current block's R: comparing a
   * phase-long average with one block's rate would lift the clamp at every rise in bitrate.
   * Defaults to `rateBytesPerSec` (constant-rate media).
   */
  readonly goodputTargetBytesPerSec?: number;
  /**
   * Whether the last delivery-rate sample was app-limited (TCP_INFO), i.e. the sender, not the path, held the flow
   * back.
   */
  readonly appLimited: boolean;
  readonly gain: number;
  readonly floorPackets: number;
}

export type TrickleDecision =
  | {
      readonly action: 'clamp';
      readonly clampPackets: number;
      readonly throttleWrites: boolean;
      readonly reason: string;
    }
  | { readonly action: 'unclamp'; readonly reason: string };

export function trickleDecision(input: TrickleInput): TrickleDecision {
  const { rateBytesPerSec: rate, rttUs, mssBytes, goodputBytesPerSec: goodput } = input;
  const goodputTarget = input.goodputTargetBytesPerSec ?? rate;
  if (goodput !== undefined && goodput < goodputTarget && !input.appLimited) {
    return {
      action: 'unclamp',
      reason: `goodput ${Math.round(goodput)} B/s below R ${Math.round(goodputTarget)} B/s: clamp lifted to catch up`,
    };
  }
  const exact = (input.gain * rate * (rttUs / 1e6)) / mssBytes;
  if (exact < input.floorPackets) {
    return {
      action: 'clamp',
      clampPackets: input.floorPackets,
      throttleWrites: true,
      reason:
        `clamp ${exact.toFixed(2)} packets is below the floor: ${input.floorPackets} ` +
        `packets, writes throttled at R`,
    };
  }
  return {
    action: 'clamp',
    clampPackets: Math.ceil(exact),
    throttleWrites: false,
    reason: `clamp ${input.gain} x R x rtt / mss = ${Math.ceil(exact)} packets`,
  };
}
