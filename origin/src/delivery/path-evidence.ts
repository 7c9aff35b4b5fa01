/**
 * What a connection's last paced segment says about its path: whether the path, not the pace, held it back. The
 * ABR-aware rate aims at 2-3 x the next rung to keep that rung visible to the player's estimator; on a link slower
 * than the aim the flow is link-limited, and even a clamp from the path's minimum RTT (1.2 x R x the base RTT) can
 * hold more than the path's BDP and buffer: the excess is lost (dc2-like links, bench/results/abr-slow-links.md:
 * 3.65 % of such responses' packets retransmitted against 0.38 % where the clamp fit). A segment that reached less
 * than `limitedBelow` of its aim was link-limited; the next one on the connection aims no higher than `headroom` x
 * the goodput it got, which still fills the link (a clamp of 1.2 x 1.25 = 1.5 x the path's BDP) with half a base
 * RTT of queue at most, and the player's estimator sees the link as before. Held while segments reach less than
 * `recoveredAbove` of the held aim (a faster link shows as more), so the aim does not flip between held and not.
 * Pure: the engine passes each completed segment's outcome.
 */

export interface PathOptions {
  /** The held aim over the goodput the path gave. */
  readonly headroom: number;
  /** A segment that reached less than this fraction of its aim was held back by the path. */
  readonly limitedBelow: number;
  /** Once held, the hold ends when a segment reaches this fraction of its (held) aim. */
  readonly recoveredAbove: number;
  /** Segments whose paced phase carried fewer bytes say little (a few round trips): they leave the evidence as is. */
  readonly minPhaseBytes: number;
}

/** A completed segment's paced phase. */
export interface PhaseOutcome {
  /** The rate aimed at (bits/s). */
  readonly aimBps: number;
  /** What the phase's bytes arrived at (bits/s). */
  readonly goodputBps: number;
  readonly bytes: number;
}

/** The path held the connection's last segment back: the next aims no higher than `holdBps`. */
export interface PathHold {
  readonly holdBps: number;
  readonly goodputBps: number;
  readonly aimBps: number;
}

/** The evidence after one more outcome (undefined: the path did not hold the last segment back). */
export function nextPathHold(
  previous: PathHold | undefined,
  outcome: PhaseOutcome,
  options: PathOptions,
): PathHold | undefined {
  if (outcome.bytes < options.minPhaseBytes || !(outcome.aimBps > 0) || !(outcome.goodputBps > 0)) return previous;
  const reached = outcome.goodputBps / outcome.aimBps;
  const limited = reached < (previous === undefined ? options.limitedBelow : options.recoveredAbove);
  if (!limited) return undefined;
  return {
    holdBps: options.headroom * outcome.goodputBps,
    goodputBps: outcome.goodputBps,
    aimBps: outcome.aimBps,
  };
}
