/**
 * AbrRule: picks the rendition of the next segment. Like dash.js's SwitchRequest, every decision
 * carries a reason. Rules are created per session (some keep state) and never read a clock.
 */

export interface ThroughputSample {
  readonly bytes: number;
  readonly durationMs: number;
}

export interface AbrContext {
  /** Declared bitrates of the renditions, ascending, bits/s. */
  readonly bitratesBps: readonly number[];
  readonly bufferSec: number;
  readonly maxBufferSec: number;
  /** Rendition of the previous segment; undefined for the first. */
  readonly lastIndex: number | undefined;
  readonly segmentDurationSec: number;
  /** Completed downloads, oldest first. */
  readonly throughput: readonly ThroughputSample[];
}

export interface AbrDecision {
  readonly index: number;
  readonly reason: string;
}

export interface AbrRule {
  readonly name: string;
  choose(context: AbrContext): AbrDecision;
}

/** The highest rendition whose bitrate is at most `budgetBps` (the lowest if none is). */
export function highestAtMost(bitratesBps: readonly number[], budgetBps: number): number {
  let index = 0;
  bitratesBps.forEach((bitrate, i) => {
    if (bitrate <= budgetBps) index = i;
  });
  return index;
}
