/**
 * One playback session, the single mediator between ABR, buffer and network (as in shaka-player):
 * it asks the ABR rule for a rendition, fetches the segment through a Fetcher, drains the buffer
 * by the time that took, and records startup, rebuffers, switches and bytes. Time comes from a
 * Clock, so the same code runs on simulated time (model mode) and real time (live mode).
 */
import type { AbrRule, ThroughputSample } from './abr/abr-rule.js';
import type { Content } from './content.js';

export interface Clock {
  nowMs(): number;
  sleep(ms: number): Promise<void>;
}

export interface FetchRequest {
  readonly renditionIndex: number;
  readonly segmentIndex: number;
  readonly mediaStartSec: number;
  readonly bufferSec: number;
  readonly maxBufferSec: number;
  /** Time since the previous download ended (connection idle). */
  readonly idleMs: number;
  readonly firstRequest: boolean;
  /** Set once playback has started and has not stalled since (CMCD `su` is its negation). */
  readonly startedUp: boolean;
}

export interface Fetcher {
  /** Downloads the segment (and its audio); resolves when the last byte arrived. */
  fetch(request: FetchRequest): Promise<{ bytes: number }>;
}

export interface SessionSettings {
  /** Playback starts once this much media is buffered. */
  readonly startupThresholdSec: number;
  /** After a stall, playback resumes once this much is buffered. */
  readonly resumeThresholdSec: number;
  /** The player stops requesting while the buffer would exceed this. */
  readonly maxBufferSec: number;
  /** The viewer leaves after this much wall time. */
  readonly sessionSeconds: number;
  /** The viewer leaves if playback has not started after this long; undefined: never. */
  readonly abandonAfterMs?: number | undefined;
  /**
   * Where playback begins, media seconds: from the segment that holds it, as a viewer who resumes or
   * follows a link into the middle (0 or undefined: the start).
   */
  readonly startSec?: number | undefined;
}

export const defaultSessionSettings: SessionSettings = {
  startupThresholdSec: 4,
  resumeThresholdSec: 4,
  maxBufferSec: 30,
  sessionSeconds: 600,
};

export interface Rebuffer {
  readonly startMs: number;
  readonly durationMs: number;
}

export interface SessionResult {
  readonly startupDelayMs: number | null;
  readonly rebuffers: readonly Rebuffer[];
  readonly sessionSec: number;
  readonly playedSec: number;
  readonly stalledSec: number;
  /** Played-time-weighted declared bitrate of what was played, bits/s. */
  readonly meanBitrateBps: number;
  readonly switches: number;
  readonly bytesDownloaded: number;
  /** Downloaded but never played (left in the buffer when the session ended). */
  readonly bytesWasted: number;
  readonly abandoned: boolean;
  readonly segments: number;
}

interface Buffered {
  readonly durationSec: number;
  readonly bitrateBps: number;
  readonly bytes: number;
  playedSec: number;
}

export async function runSession(
  content: Content,
  abr: AbrRule,
  fetcher: Fetcher,
  clock: Clock,
  settings: SessionSettings,
): Promise<SessionResult> {
  const bitrates = content.renditions.map((r) => r.bitrateBps);
  const segmentCount = Math.min(...content.renditions.map((r) => r.segments.length));
  const startMs = clock.nowMs();
  const endLimitMs = startMs + settings.sessionSeconds * 1000;
  const queue: Buffered[] = [];
  const throughput: ThroughputSample[] = [];
  const rebuffers: Rebuffer[] = [];
  let bufferSec = 0;
  let playing = false;
  let stallStartMs: number | undefined;
  let startupDelayMs: number | null = null;
  let playedSec = 0;
  let bitrateTime = 0;
  let switches = 0;
  let lastPlayedBitrate: number | undefined;
  let bytesDownloaded = 0;
  let lastIndex: number | undefined;
  let lastFetchEndMs = startMs;
  let abandoned = false;
  const segmentDurations = content.renditions[0]!.segments.map((s) => s.durationSec);
  let firstSegment = 0;
  let mediaSec = 0;
  const startSec = settings.startSec ?? 0;
  while (firstSegment < segmentCount - 1 && mediaSec + segmentDurations[firstSegment]! <= startSec)
    mediaSec += segmentDurations[firstSegment++]!;

  /** Plays from `fromMs` to `toMs`; a buffer running dry starts a stall at the moment it ran out. */
  const drain = (fromMs: number, toMs: number) => {
    const seconds = (toMs - fromMs) / 1000;
    if (!playing || seconds <= 0) return;
    const bufferStartSec = bufferSec;
    let remaining = Math.min(seconds, bufferSec);
    bufferSec -= remaining;
    playedSec += remaining;
    while (remaining > 1e-12 && queue.length > 0) {
      const head = queue[0]!;
      const take = Math.min(remaining, head.durationSec - head.playedSec);
      if (lastPlayedBitrate !== undefined && lastPlayedBitrate !== head.bitrateBps && head.playedSec === 0) switches++;
      lastPlayedBitrate = head.bitrateBps;
      head.playedSec += take;
      bitrateTime += take * head.bitrateBps;
      remaining -= take;
      if (head.playedSec >= head.durationSec - 1e-9) queue.shift();
    }
    if (seconds >= bufferStartSec) {
      bufferSec = 0;
      playing = false;
      stallStartMs = fromMs + bufferStartSec * 1000;
    }
  };

  for (let segment = firstSegment; segment < segmentCount; segment++) {
    const segmentSec = segmentDurations[segment]!;
    // Idle while the buffer is full: the gaps between requests that shape TCP's behaviour.
    if (playing && bufferSec + segmentSec > settings.maxBufferSec) {
      const waitMs = (bufferSec + segmentSec - settings.maxBufferSec) * 1000;
      const fromMs = clock.nowMs();
      await clock.sleep(Math.min(fromMs + waitMs, endLimitMs) - fromMs);
      drain(fromMs, clock.nowMs());
    }
    if (clock.nowMs() >= endLimitMs) break;

    const decision = abr.choose({
      bitratesBps: bitrates,
      bufferSec,
      maxBufferSec: settings.maxBufferSec,
      lastIndex,
      segmentDurationSec: segmentSec,
      throughput,
    });
    const requestMs = clock.nowMs();
    const { bytes } = await fetcher.fetch({
      renditionIndex: decision.index,
      segmentIndex: segment,
      mediaStartSec: mediaSec,
      bufferSec,
      maxBufferSec: settings.maxBufferSec,
      idleMs: requestMs - lastFetchEndMs,
      firstRequest: segment === firstSegment,
      startedUp: playing,
    });
    const doneMs = clock.nowMs();
    const tookMs = doneMs - requestMs;
    drain(requestMs, doneMs);
    if (doneMs > endLimitMs) {
      // The viewer left before this download finished.
      if (stallStartMs !== undefined && stallStartMs < endLimitMs && !playing && startupDelayMs !== null)
        rebuffers.push({ startMs: stallStartMs - startMs, durationMs: endLimitMs - stallStartMs });
      stallStartMs = undefined;
      bytesDownloaded += bytes;
      break;
    }
    throughput.push({ bytes, durationMs: tookMs });
    bytesDownloaded += bytes;
    lastFetchEndMs = doneMs;
    bufferSec += segmentSec;
    mediaSec += segmentSec;
    queue.push({ durationSec: segmentSec, bitrateBps: bitrates[decision.index]!, bytes, playedSec: 0 });
    lastIndex = decision.index;

    const last = segment === segmentCount - 1;
    if (startupDelayMs === null) {
      if (bufferSec >= settings.startupThresholdSec || last) {
        startupDelayMs = doneMs - startMs;
        playing = true;
      } else if (settings.abandonAfterMs !== undefined && doneMs - startMs > settings.abandonAfterMs) {
        abandoned = true;
        break;
      }
    } else if (!playing && (bufferSec >= settings.resumeThresholdSec || last)) {
      rebuffers.push({ startMs: stallStartMs! - startMs, durationMs: doneMs - stallStartMs! });
      stallStartMs = undefined;
      playing = true;
    }
  }

  // Play out what is buffered, up to the session's end.
  if (playing && bufferSec > 0 && !abandoned) {
    const fromMs = clock.nowMs();
    await clock.sleep(Math.min(bufferSec * 1000, Math.max(0, endLimitMs - fromMs)));
    drain(fromMs, clock.nowMs());
    // Running out at the end of the content is the end, not a stall.
    if (!playing && bufferSec === 0) stallStartMs = undefined;
  }
  if (stallStartMs !== undefined && startupDelayMs !== null) {
    const endMs = Math.min(clock.nowMs(), endLimitMs);
    rebuffers.push({ startMs: stallStartMs - startMs, durationMs: Math.max(0, endMs - stallStartMs) });
  }
  const endMs = Math.min(clock.nowMs(), endLimitMs);
  const wastedBytes = queue.reduce((sum, b) => sum + (b.bytes * (b.durationSec - b.playedSec)) / b.durationSec, 0);
  return {
    startupDelayMs,
    rebuffers,
    sessionSec: (endMs - startMs) / 1000,
    playedSec,
    stalledSec: rebuffers.reduce((sum, r) => sum + r.durationMs, 0) / 1000,
    meanBitrateBps: playedSec > 0 ? bitrateTime / playedSec : 0,
    switches,
    bytesDownloaded,
    bytesWasted: Math.round(wastedBytes),
    abandoned,
    segments: throughput.length,
  };
}
