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
 * A segment sent whole at full speed (a startup segment) shows the link too: slow start from the initial window
 * doubles the window each base RTT until it carries the link's rate, and the rest drains at that rate, so the
 * transfer's duration gives the rate (its goodput alone reads 0.85 of it at the median on dc2-like links: the
 * ramp's round trips count against it). The first paced segment after it then aims no higher than `headroom` x that
 * rate, so it does not overflow the buffer before a paced segment could say so (abr-slow-links: the first paced
 * segments of dc2-like connections retransmitted 8 % of their packets). Only a transfer without retransmissions
 * (a loss breaks the model) that lasted `fullSpeedExtraRtts` base RTTs longer than slow start alone would have
 * (delayed ACKs and the request's turn account for less) says anything: over abr-slow3's dc2-like connections the
 * most such transfers showed was 0.98-1.16 x the link's rate (1st to 90th percentile). A paced phase too short for
 * its goodput to show the link (under `minPhaseBytes`) is judged by the same model: the asset's 2 s audio segments
 * (32 kB) are all such phases, and a connection that carries them never learnt its path (abr-dc2-ab48: 271 of the
 * 481 responses whose clamp exceeded the path with nothing holding it came after one).
 * Pure: the engine passes each completed segment's outcome.
 */

/** Linux's initial congestion window (TCP_INIT_CWND, RFC 6928) where the origin sets none. */
const linuxInitialWindowPackets = 10;

/** The initial window a connection's transfers started from: one the kernel refused, or was never asked, was not. */
export function initialWindowInUse(asked: { readonly packets: number; readonly status: string } | undefined): number {
  return asked?.status === 'applied' ? asked.packets : linuxInitialWindowPackets;
}

export interface PathOptions {
  /** The held aim over the goodput the path gave. */
  readonly headroom: number;
  /** A segment that reached less than this fraction of its aim was held back by the path. */
  readonly limitedBelow: number;
  /** Once held, the hold ends when a segment reaches this fraction of its (held) aim. */
  readonly recoveredAbove: number;
  /** Segments whose paced phase carried fewer bytes say little (a few round trips): they leave the evidence as is. */
  readonly minPhaseBytes: number;
  /** A segment sent at full speed shows the link once it took this many base RTTs longer than slow start alone. */
  readonly fullSpeedExtraRtts: number;
}

/** A completed segment's paced phase. */
export interface PhaseOutcome {
  /** The rate aimed at (bits/s). */
  readonly aimBps: number;
  /** What the phase's bytes arrived at (bits/s). */
  readonly goodputBps: number;
  readonly bytes: number;
  /** The phase as a transfer, what a phase under `minPhaseBytes` is judged by (undefined: no such figures). */
  readonly transfer?: PhaseTransfer | undefined;
}

/** A transfer's timing and the connection's figures, for the model of slow start then the link. */
export type PhaseTransfer = Omit<FullSpeedOutcome, 'bytes' | 'retransmittedSegments'>;

/** A completed segment sent whole at full speed. */
export interface FullSpeedOutcome {
  readonly bytes: number;
  /** From its first byte written to its last acknowledged. */
  readonly durationMs: number;
  readonly retransmittedSegments: number;
  /** The connection's minimum RTT at its end. */
  readonly minRttUs: number;
  readonly mssBytes: number;
  readonly initialWindowPackets: number;
}

/** The path held the connection's last segment back: the next aims no higher than `holdBps`. */
export interface PathHold {
  readonly holdBps: number;
  /** What the path gave the segment (sent at full speed: the link's rate its duration shows). */
  readonly goodputBps: number;
  /** What the segment aimed at (undefined: it was sent at full speed). */
  readonly aimBps: number | undefined;
}

/** The evidence after one more outcome (undefined: the path did not hold the last segment back). */
export function nextPathHold(
  previous: PathHold | undefined,
  outcome: PhaseOutcome,
  options: PathOptions,
): PathHold | undefined {
  if (!(outcome.aimBps > 0) || !(outcome.goodputBps > 0)) return previous;
  let shownBps = outcome.goodputBps;
  if (outcome.bytes < options.minPhaseBytes) {
    // Its goodput reads slow start's ramp (32 kB restarted from 10 packets takes 2-3 RTTs at any rate): the model,
    // from the initial window, the slowest start the phase can have had, so the rate it gives is if anything above
    // the link's. It can show a path slower than the aim, never that the path has recovered: on a warm connection
    // there was no ramp, and the model reads the link high (letting go on it, abr-dc2-short: 270 responses after a
    // released hold overflowed the path). Under two initial windows (one or two round trips, which a 40 ms delayed
    // ACK can double), or too short even for the model: the evidence stays. A loss reads the link low; unlike at full
    // speed it still counts: such phases are the ones that lose (6-8 % on dc2-like links).
    const transfer = outcome.transfer;
    if (transfer === undefined || outcome.bytes < 2 * transfer.initialWindowPackets * transfer.mssBytes)
      return previous;
    const linkBps = linkRateOfTransfer({ ...transfer, bytes: outcome.bytes }, options.fullSpeedExtraRtts);
    if (linkBps === undefined || linkBps >= options.limitedBelow * outcome.aimBps) return previous;
    shownBps = linkBps;
  }
  const reached = shownBps / outcome.aimBps;
  const limited = reached < (previous === undefined ? options.limitedBelow : options.recoveredAbove);
  if (!limited) return undefined;
  return { holdBps: options.headroom * shownBps, goodputBps: shownBps, aimBps: outcome.aimBps };
}

/** The evidence after a segment sent at full speed: the link's rate, when its duration shows one. */
export function pathAfterFullSpeed(
  previous: PathHold | undefined,
  outcome: FullSpeedOutcome,
  options: PathOptions,
): PathHold | undefined {
  if (outcome.bytes < options.minPhaseBytes || outcome.retransmittedSegments > 0) return previous;
  const linkBps = linkRateOfTransfer(outcome, options.fullSpeedExtraRtts);
  if (linkBps === undefined) return previous;
  // Several full-speed segments in a row: the most one showed (a concurrent transfer on the link shows less).
  const shownBps = previous?.aimBps === undefined ? Math.max(linkBps, previous?.goodputBps ?? 0) : linkBps;
  return { holdBps: options.headroom * shownBps, goodputBps: shownBps, aimBps: undefined };
}

/** Seconds a transfer of `bytes` takes from the initial window over a link of `rateBps` (Infinity: slow start only). */
export function slowStartTransferSec(
  transfer: Pick<FullSpeedOutcome, 'bytes' | 'mssBytes' | 'initialWindowPackets'>,
  rateBps: number,
  baseRttSec: number,
): number {
  let sentBytes = 0;
  let rounds = 0;
  let windowBytes = transfer.initialWindowPackets * transfer.mssBytes;
  while (sentBytes < transfer.bytes) {
    // The window now carries the link's rate: the rest drains at it, its last acknowledgement one RTT later.
    if ((windowBytes * 8) / baseRttSec >= rateBps)
      return rounds * baseRttSec + ((transfer.bytes - sentBytes) * 8) / rateBps + baseRttSec;
    sentBytes += windowBytes;
    rounds++;
    windowBytes *= 2;
  }
  return rounds * baseRttSec;
}

/**
 * The link rate that explains a full-speed transfer's duration (bits/s), undefined when it took less than
 * `extraRtts` base RTTs longer than slow start alone. The duration falls as the rate grows: bisection.
 */
export function linkRateOfTransfer(
  outcome: Omit<FullSpeedOutcome, 'retransmittedSegments'>,
  extraRtts: number,
): number | undefined {
  const baseRttSec = outcome.minRttUs / 1e6;
  const durationSec = outcome.durationMs / 1000;
  if (!(baseRttSec > 0) || !(outcome.mssBytes > 0) || !(outcome.initialWindowPackets > 0)) return undefined;
  if (durationSec < slowStartTransferSec(outcome, Infinity, baseRttSec) + extraRtts * baseRttSec) return undefined;
  let lowBps = 1e3;
  let highBps = 1e11;
  while (highBps / lowBps > 1.001) {
    const middleBps = Math.sqrt(lowBps * highBps);
    if (slowStartTransferSec(outcome, middleBps, baseRttSec) > durationSec) lowBps = middleBps;
    else highBps = middleBps;
  }
  return lowBps;
}
