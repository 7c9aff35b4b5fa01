/**
 * What a viewer has fetched so far, for rate rules that need the player's state when the player
 * does not send it (no CMCD). A run is one viewer's stretch of segments of one media kind: segment
 * n continues the run that has fetched up to n - 1; a segment the run already fetched, or one
 * between its first and its highest, is a replacement (a player fetching a buffered segment again
 * at another rung, or retrying one) as long as the player cannot have played all of it. Anything
 * else starts a new run: a new viewer, a seek, a viewer back after a long pause.
 * Runs are keyed by who asks (CMCD `sid` when sent, else the client address) with the asset and
 * kind, so one viewer's several connections count together, and viewers behind one address are
 * told apart by their position.
 *
 * From a run follows a lower bound on the player's buffer: the media fetched before this request,
 * less the wall time since the run's first request (a player that paused or stalled has played
 * less than that, so it holds more). Pure: the time is passed in.
 */
import { LRUCache } from 'lru-cache';

export interface ViewerRunState {
  /** Distinct segments of the run before this request. */
  readonly segmentsBefore: number;
  /** Media seconds of those segments. */
  readonly fetchedSec: number;
  /** Wall seconds since the run's first request. */
  readonly elapsedSec: number;
  /** fetchedSec - elapsedSec: the least the player's buffer holds now. */
  readonly bufferLowerBoundSec: number;
}

/** The segment a request is for. */
export interface RunSegment {
  readonly number: number;
  /** Its media start in the presentation, seconds. */
  readonly startSec: number;
  readonly durationSec: number;
}

interface Run {
  readonly firstStartSec: number;
  readonly firstNumber: number;
  highestNumber: number;
  fetchedSec: number;
  segments: number;
  readonly startedAtMs: number;
  lastSeenMs: number;
}

export interface ViewerRunsOptions {
  /** A run not continued for this long is over. */
  readonly idleMs: number;
  /** Runs kept per key (viewers behind one address), the least recent dropped first. */
  readonly maxRunsPerKey: number;
  /** Keys kept (clients x assets x kinds), the least recent dropped first. */
  readonly maxKeys: number;
}

export const defaultViewerRunsOptions: ViewerRunsOptions = { idleMs: 120_000, maxRunsPerKey: 64, maxKeys: 50_000 };

export class ViewerRuns {
  private readonly runs: LRUCache<string, Run[]>;

  constructor(private readonly options: ViewerRunsOptions = defaultViewerRunsOptions) {
    this.runs = new LRUCache<string, Run[]>({ max: options.maxKeys });
  }

  /** Adds the segment to the run it belongs to under `key` (or a new one) and returns the run as it was before it. */
  join(key: string, segment: RunSegment, nowMs: number): ViewerRunState {
    const live = (this.runs.get(key) ?? []).filter((run) => nowMs - run.lastSeenMs <= this.options.idleMs);
    let run = this.belongsTo(live, segment, nowMs);
    if (run === undefined) {
      run = {
        firstStartSec: segment.startSec,
        firstNumber: segment.number,
        highestNumber: segment.number - 1,
        fetchedSec: 0,
        segments: 0,
        startedAtMs: nowMs,
        lastSeenMs: nowMs,
      };
      live.push(run);
      if (live.length > this.options.maxRunsPerKey) {
        live.sort((a, b) => a.lastSeenMs - b.lastSeenMs);
        live.splice(0, live.length - this.options.maxRunsPerKey);
      }
    }
    const elapsedSec = (nowMs - run.startedAtMs) / 1000;
    const state: ViewerRunState = {
      segmentsBefore: run.segments,
      fetchedSec: run.fetchedSec,
      elapsedSec,
      bufferLowerBoundSec: run.fetchedSec - elapsedSec,
    };
    if (segment.number === run.highestNumber + 1) {
      run.highestNumber = segment.number;
      run.fetchedSec += segment.durationSec;
      run.segments++;
    }
    run.lastSeenMs = nowMs;
    this.runs.set(key, live);
    return state;
  }

  /** The most recently seen run this segment continues, or replaces a segment of ahead of its playback. */
  private belongsTo(runs: readonly Run[], segment: RunSegment, nowMs: number): Run | undefined {
    let best: Run | undefined;
    for (const run of runs) {
      const continues = segment.number === run.highestNumber + 1;
      // Playback cannot be past the run's first segment plus the time since: a segment that ends after that has not
      // been played whole, and a player may still fetch it again at another rung (dash.js does for the segments just
      // ahead of its playhead, whose start the bound has often passed: a new run there restarted the startup phase).
      const replaces =
        segment.number >= run.firstNumber &&
        segment.number <= run.highestNumber &&
        segment.startSec + segment.durationSec > run.firstStartSec + (nowMs - run.startedAtMs) / 1000;
      if (!continues && !replaces) continue;
      if (best === undefined || run.lastSeenMs > best.lastSeenMs) best = run;
    }
    return best;
  }
}
