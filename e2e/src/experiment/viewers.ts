/** What the runner tells the viewers process (viewers-main.ts) and what it reports back; pure helpers. */
import type { ProgressiveMedia, SessionResult } from '@trickle/player-sim';

/** The progressive MP4's byte -> playback-time map, sampled every `stepSec` of media (from its sample tables). */
export interface ProgressiveTable {
  readonly sizeBytes: number;
  readonly durationSec: number;
  readonly stepSec: number;
  /** bytesAtStep[k]: bytes needed before k x stepSec of media is playable (non-decreasing). */
  readonly bytesAtStep: readonly number[];
}

export interface ViewerPlan {
  readonly originUrl: string;
  readonly asset: string;
  readonly dash: number;
  readonly progressive: number;
  readonly sessionSeconds: number;
  readonly startSpreadMs: number;
  readonly seed: number;
  readonly abr: string;
  readonly cmcd: boolean;
  readonly maxBufferSec: number;
  /** Where the DASH viewers begin playback, media seconds (default: the start). */
  readonly startSec?: number | undefined;
  /** Needed when `progressive` > 0. */
  readonly progressiveTable: ProgressiveTable | undefined;
  /** A population lab: viewer i (progressive first, then DASH) connects from localAddresses[i], its own link. */
  readonly localAddresses?: readonly string[] | undefined;
}

export type ViewerReport =
  | {
      readonly kind: 'dash' | 'progressive';
      readonly index: number;
      readonly startOffsetMs: number;
      readonly group: string | null;
      readonly result: SessionResult;
    }
  | {
      readonly kind: 'dash' | 'progressive';
      readonly index: number;
      readonly startOffsetMs: number;
      readonly group: string | null;
      readonly error: string;
    }
  | { readonly done: true };

/** The A/B group named in a Server-Timing header (`ab;desc="<group>"`), if any. */
export function groupFromServerTiming(header: string | string[] | undefined): string | undefined {
  const text = Array.isArray(header) ? header.join(', ') : header;
  if (text === undefined) return undefined;
  return /(?:^|,)\s*ab;desc="?([A-Za-z0-9_-]+)"?/.exec(text)?.[1];
}

/** Playable media after n bytes: the last sampled step whose bytes have all arrived (never overstated). */
export function progressiveMediaFromTable(table: ProgressiveTable): ProgressiveMedia {
  const steps = table.bytesAtStep;
  return {
    sizeBytes: table.sizeBytes,
    durationSec: table.durationSec,
    mediaSecAtByte(bytes) {
      if (bytes >= table.sizeBytes) return table.durationSec;
      let lo = 0;
      let hi = steps.length;
      while (lo < hi) {
        const mid = (lo + hi) >>> 1;
        if (steps[mid]! <= bytes) lo = mid + 1;
        else hi = mid;
      }
      return Math.max(0, (lo - 1) * table.stepSec);
    },
  };
}
