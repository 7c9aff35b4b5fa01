/**
 * A progressive-download viewer (the paper's YouTube flows): one GET of the whole MP4, playback
 * starting once enough media is playable and following the bytes as they arrive. The playback
 * accounting is pure and event driven (bytes arrive at given times; stalls begin exactly when the
 * playhead reaches the playable edge between arrivals), so it is tested without sockets or clocks.
 */
import { Agent, request } from 'undici';
import { SimError } from './errors.js';
import type { Clock, Rebuffer, SessionResult } from './session.js';

export interface ProgressiveMedia {
  readonly sizeBytes: number;
  readonly durationSec: number;
  /** Media seconds fully playable once the first `bytes` of the file arrived (moov first: faststart). */
  mediaSecAtByte(bytes: number): number;
}

export interface ProgressiveSettings {
  readonly startupThresholdSec: number;
  readonly resumeThresholdSec: number;
  readonly sessionSeconds: number;
}

export const defaultProgressiveSettings: ProgressiveSettings = {
  startupThresholdSec: 2,
  resumeThresholdSec: 2,
  sessionSeconds: 600,
};

/** Playback state fed with byte arrivals; `finish` closes the session at a time. */
export class ProgressivePlayback {
  private lastMs: number;
  private bytes = 0;
  private playableSec = 0;
  private playheadSec = 0;
  private playing = false;
  private startupDelayMs: number | null = null;
  private stallStartMs: number | undefined;
  private readonly rebuffers: Rebuffer[] = [];

  constructor(
    private readonly media: ProgressiveMedia,
    private readonly settings: ProgressiveSettings,
    private readonly startMs: number,
  ) {
    this.lastMs = startMs;
  }

  /**
   * Advances playback to `nowMs` with nothing new arriving: a stall starts where the playhead meets the playable edge.
   */
  private advance(nowMs: number): void {
    if (this.playing) {
      const reachMs = this.lastMs + (this.playableSec - this.playheadSec) * 1000;
      if (reachMs <= nowMs && this.playableSec < this.media.durationSec) {
        this.playheadSec = this.playableSec;
        this.playing = false;
        this.stallStartMs = reachMs;
      } else {
        this.playheadSec = Math.min(this.playableSec, this.playheadSec + (nowMs - this.lastMs) / 1000);
      }
    }
    this.lastMs = nowMs;
  }

  /** `totalBytes` of the file have arrived by `nowMs`. */
  onBytes(nowMs: number, totalBytes: number): void {
    this.advance(nowMs);
    this.bytes = totalBytes;
    this.playableSec = Math.min(this.media.durationSec, this.media.mediaSecAtByte(totalBytes));
    if (this.playing) return;
    const ahead = this.playableSec - this.playheadSec;
    const complete = this.playableSec >= this.media.durationSec;
    if (this.startupDelayMs === null) {
      if (ahead >= this.settings.startupThresholdSec || (complete && ahead > 0)) {
        this.startupDelayMs = nowMs - this.startMs;
        this.playing = true;
      }
    } else if (ahead >= this.settings.resumeThresholdSec || (complete && ahead > 0)) {
      this.rebuffers.push({ startMs: this.stallStartMs! - this.startMs, durationMs: nowMs - this.stallStartMs! });
      this.stallStartMs = undefined;
      this.playing = true;
    }
  }

  finish(nowMs: number, abandoned = false): SessionResult {
    this.advance(nowMs);
    const sessionSec = (nowMs - this.startMs) / 1000;
    const stalledMs =
      this.rebuffers.reduce((sum, r) => sum + r.durationMs, 0) +
      (this.stallStartMs === undefined ? 0 : nowMs - this.stallStartMs);
    // A stall still open when the viewer leaves counts: the viewer saw it.
    const rebuffers =
      this.stallStartMs === undefined
        ? this.rebuffers
        : [...this.rebuffers, { startMs: this.stallStartMs - this.startMs, durationMs: nowMs - this.stallStartMs }];
    const meanBitrateBps = (this.media.sizeBytes * 8) / this.media.durationSec;
    const playedBytes = Math.min(
      this.bytes,
      Math.round((this.playheadSec / this.media.durationSec) * this.media.sizeBytes),
    );
    return {
      startupDelayMs: this.startupDelayMs,
      rebuffers,
      sessionSec,
      playedSec: this.playheadSec,
      stalledSec: this.startupDelayMs === null ? 0 : stalledMs / 1000,
      meanBitrateBps,
      switches: 0,
      bytesDownloaded: this.bytes,
      bytesWasted: Math.max(0, this.bytes - playedBytes),
      abandoned,
      segments: 0,
    };
  }
}

export interface ProgressiveRunOptions {
  readonly url: string;
  readonly media: ProgressiveMedia;
  readonly settings?: Partial<ProgressiveSettings>;
  readonly clock: Clock;
  /** Told the response headers (e.g. Server-Timing naming the A/B group). */
  readonly onResponseHeaders?: (headers: Record<string, string | string[] | undefined>) => void;
  /** Connect from this local address (a viewer of a population lab, on its own access link). */
  readonly localAddress?: string | undefined;
}

/** Plays `url` progressively on its own connection for the session's length (or to the end of the file). */
export async function runProgressive(options: ProgressiveRunOptions): Promise<SessionResult> {
  const settings = { ...defaultProgressiveSettings, ...options.settings };
  const startMs = options.clock.nowMs();
  const playback = new ProgressivePlayback(options.media, settings, startMs);
  const agent = new Agent({
    connections: 1,
    ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
  });
  const leave = new AbortController();
  const timer = setTimeout(() => leave.abort(), settings.sessionSeconds * 1000);
  try {
    const response = await request(options.url, { dispatcher: agent, signal: leave.signal }).catch((error: Error) => {
      if (leave.signal.aborted) return undefined;
      throw new SimError('SIM_ERR_FETCH', `GET ${options.url}: ${error.message}`, { cause: error });
    });
    // No answer within the session: the viewer left before playback started.
    if (response === undefined) return playback.finish(options.clock.nowMs(), true);
    if (response.statusCode !== 200) {
      await response.body.dump();
      throw new SimError('SIM_ERR_FETCH', `GET ${options.url} answered ${response.statusCode}`);
    }
    options.onResponseHeaders?.(response.headers);
    let bytes = 0;
    try {
      for await (const chunk of response.body) {
        bytes += (chunk as Buffer).length;
        playback.onBytes(options.clock.nowMs(), bytes);
      }
    } catch (error) {
      if (!leave.signal.aborted)
        throw new SimError('SIM_ERR_FETCH', `GET ${options.url}: ${(error as Error).message}`, { cause: error });
    }
    // Downloaded early: the viewer keeps watching until the session's end.
    if (!leave.signal.aborted)
      await options.clock.sleep(startMs + settings.sessionSeconds * 1000 - options.clock.nowMs());
    return playback.finish(options.clock.nowMs());
  } finally {
    clearTimeout(timer);
    await agent.close();
  }
}
