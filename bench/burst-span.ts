/**
 * A paced flow's rate over its whole bursts. Flows opened together and paced in bursts (a clamped
 * window's packets, a TSO segment) stay in phase: a window that holds n or n + 1 of every flow's
 * bursts reads every flow off its rate by the same fraction of a burst. From the first burst that
 * began in the window to the last one that did is whole bursts over their own period, the rate free
 * of that phase where the bursts are regular: each as large as the others (within `sizeRegularity`: a burst a late
 * reader split is not) and as far from the next (within `periodRegularity`, wider: a loaded reader's lateness moves
 * when a burst is read). A flow that sends on a clock of its own, in parts or at uneven times (nginx's limit_rate),
 * has no span and is read over the window: start to start is exact for a periodic flow only. Pure: the caller
 * gives each chunk's arrival time.
 */

/** From the first burst that began in the window to the last one that did: file offsets and the seconds between. */
export interface BurstSpan {
  readonly fromByte: number;
  readonly toByte: number;
  readonly seconds: number;
  /** Bursts that began from the first to the last, both counted. */
  readonly bursts: number;
}

/** A pause this long before a chunk makes it a burst's first (a loopback burst arrives within a millisecond or two). */
export const burstGapMs = 50;

/** Bursts are regular when the largest of their sizes is at most this times the smallest, and so of their periods. */
export const sizeRegularity = 1.25;
export const periodRegularity = 1.5;

const spread = (values: readonly number[]) => Math.max(...values) / Math.max(1e-9, Math.min(...values));

export class BurstSpanMeter {
  private lastChunkMs = Number.NEGATIVE_INFINITY;
  private readonly startBytes: number[] = [];
  private readonly startMs: number[] = [];

  /**
   * A chunk that arrived at `nowMs` and began at file offset `offsetByte`; `inWindow`: whether it counts
   * (a burst that began before the window is not one of its bursts, and its tail does not start one).
   */
  chunk(nowMs: number, offsetByte: number, inWindow: boolean): void {
    if (inWindow && nowMs - this.lastChunkMs >= burstGapMs) {
      this.startBytes.push(offsetByte);
      this.startMs.push(nowMs);
    }
    this.lastChunkMs = nowMs;
  }

  /** The span, or null where fewer than two bursts began in the window or they are not regular. */
  span(): BurstSpan | null {
    const count = this.startMs.length;
    if (count < 2) return null;
    const sizes = this.startBytes.slice(1).map((byte, i) => byte - this.startBytes[i]!);
    const periods = this.startMs.slice(1).map((ms, i) => ms - this.startMs[i]!);
    if (spread(sizes) > sizeRegularity || spread(periods) > periodRegularity) return null;
    return {
      fromByte: this.startBytes[0]!,
      toByte: this.startBytes[count - 1]!,
      seconds: (this.startMs[count - 1]! - this.startMs[0]!) / 1000,
      bursts: count,
    };
  }
}
