/**
 * What one browser session measured, and the QoE figures over sessions. Pure: the snapshot comes
 * from the player page (`window.trickle`, see origin/player/player.ts), the figures are
 * player-sim's (`aggregate`), so browser and simulated sessions are judged by the same rules.
 */
import { aggregate, type Aggregates, type SessionResult } from '@trickle/player-sim';

export type PlayerKind = 'dashjs' | 'hlsjs' | 'shaka' | 'native';

export interface Episode {
  readonly startMs: number;
  readonly durationMs: number | null;
}

/** The player page's `window.trickle` (times in ms since the page started the player). */
export interface PlayerSnapshot {
  readonly asset: string | null;
  readonly player: PlayerKind;
  readonly url: string;
  readonly policy: string | null;
  readonly cmcd: boolean;
  readonly abr: string;
  readonly safetyFactor: number | null;
  readonly bufferSeconds: number | null;
  readonly startupMs: number | null;
  /** `bufferAheadSec`: media buffered ahead when the watchdog confirmed it (null until then). */
  readonly rebuffers: readonly (Episode & {
    readonly confirmedByWatchdog: boolean;
    readonly bufferAheadSec: number | null;
  })[];
  readonly stalls: readonly Episode[];
  readonly videoFreezes: readonly Episode[];
  readonly bitrateTimeline: readonly { readonly atMs: number; readonly bitrateBps: number }[];
  readonly switches: readonly { readonly atMs: number; readonly bitrateBps: number }[];
  readonly bitrateBps: number | null;
  readonly playedSeconds: number;
  /**
   * Wall time the machine, not the delivery, held play back outside rebuffers (the media clock behind the wall clock,
   * or standing still with media in hand), ms.
   */
  readonly slowPlayMs: number;
  readonly totalFrames: number;
  readonly droppedFrames: number;
  readonly ended: boolean;
  /**
   * When the end was, ms since the player's start (a player parked at the end is taken as ended a second
   * later: the session ends where it parked, not where that was seen).
   */
  readonly endedAtMs?: number | null;
  readonly errors: readonly string[];
}

export interface PlayerEvent {
  readonly atMs: number;
  readonly type: string;
  readonly [key: string]: unknown;
}

/** One session as written to `<out>/sessions/<n>.json`. */
export interface SessionRecord {
  readonly index: number;
  readonly url: string;
  readonly player: PlayerKind;
  /** Wall time from the player's start to the session's end (ended, duration reached, or fatal error), ms. */
  readonly sessionMs: number;
  readonly endReason: 'ended' | 'duration' | 'error' | 'timeout';
  /** Harness attempts it took (a retry follows only a harness failure, never a QoE outcome). */
  readonly attempts: number;
  readonly startupMs: number | null;
  /** Rebuffers with their durations; one still open when the session ended lasts until then. */
  readonly rebuffers: readonly {
    readonly startMs: number;
    readonly durationMs: number;
    readonly confirmedByWatchdog: boolean;
    readonly bufferAheadSec: number | null;
  }[];
  readonly stalls: readonly { readonly startMs: number; readonly durationMs: number }[];
  readonly videoFreezes: readonly { readonly startMs: number; readonly durationMs: number }[];
  readonly bitrateTimeline: PlayerSnapshot['bitrateTimeline'];
  readonly switches: number;
  /**
   * Wall-time-weighted bitrate of what was rendered from startup to the end, outside rebuffers; null without a bitrate
   * (plain <video>).
   */
  readonly meanBitrateBps: number | null;
  readonly playedSeconds: number;
  /**
   * Wall time the machine, not the delivery, held play back outside rebuffers, ms: the media clock behind the wall
   * clock while it moved (a starved renderer plays slower than real time), or standing still with media in hand. The
   * session's wall time is startup + played + rebuffering + this, to the watchdog's resolution.
   */
  readonly slowPlayMs: number;
  readonly totalFrames: number;
  readonly droppedFrames: number;
  readonly errors: readonly string[];
  readonly events: readonly PlayerEvent[];
}

function closed(episodes: readonly Episode[], endMs: number): { startMs: number; durationMs: number }[] {
  return episodes.map((e) => ({ startMs: e.startMs, durationMs: e.durationMs ?? Math.max(0, endMs - e.startMs) }));
}

/** Time-weighted mean of a step function over [fromMs, toMs], leaving out the given gaps. */
function meanBitrate(
  timeline: PlayerSnapshot['bitrateTimeline'],
  fromMs: number,
  toMs: number,
  gaps: readonly { startMs: number; durationMs: number }[],
): number | null {
  if (timeline.length === 0 || toMs <= fromMs) return null;
  let weighted = 0;
  let total = 0;
  for (let i = 0; i < timeline.length; i++) {
    const start = Math.max(fromMs, i === 0 ? fromMs : timeline[i]!.atMs);
    const end = Math.min(toMs, timeline[i + 1]?.atMs ?? toMs);
    if (end <= start) continue;
    const gapMs = gaps.reduce(
      (sum, g) => sum + Math.max(0, Math.min(end, g.startMs + g.durationMs) - Math.max(start, g.startMs)),
      0,
    );
    const ms = end - start - gapMs;
    weighted += ms * timeline[i]!.bitrateBps;
    total += ms;
  }
  return total > 0 ? weighted / total : timeline[timeline.length - 1]!.bitrateBps;
}

export function sessionRecord(input: {
  index: number;
  snapshot: PlayerSnapshot;
  events: readonly PlayerEvent[];
  sessionMs: number;
  endReason: SessionRecord['endReason'];
  attempts: number;
}): SessionRecord {
  const { snapshot, sessionMs } = input;
  const rebuffers = snapshot.rebuffers.map((r) => ({
    startMs: r.startMs,
    durationMs: r.durationMs ?? Math.max(0, sessionMs - r.startMs),
    confirmedByWatchdog: r.confirmedByWatchdog,
    bufferAheadSec: r.bufferAheadSec,
  }));
  return {
    index: input.index,
    url: snapshot.url,
    player: snapshot.player,
    sessionMs,
    endReason: input.endReason,
    attempts: input.attempts,
    startupMs: snapshot.startupMs === null ? null : Math.round(snapshot.startupMs),
    rebuffers,
    stalls: closed(snapshot.stalls, sessionMs),
    videoFreezes: closed(snapshot.videoFreezes, sessionMs),
    bitrateTimeline: snapshot.bitrateTimeline,
    switches: snapshot.switches.length,
    meanBitrateBps:
      snapshot.startupMs === null
        ? null
        : meanBitrate(snapshot.bitrateTimeline, snapshot.startupMs, sessionMs, rebuffers),
    playedSeconds: snapshot.playedSeconds,
    slowPlayMs: Math.round(snapshot.slowPlayMs),
    totalFrames: snapshot.totalFrames,
    droppedFrames: snapshot.droppedFrames,
    errors: snapshot.errors,
    events: input.events,
  };
}

/** Where a session's wall time went (`sessionAccount`), ms. */
export interface SessionAccount {
  readonly startupMs: number;
  /** Media played after the first frame, less what the element showed inside rebuffers (counted there). */
  readonly playedMs: number;
  /** Media the element showed inside rebuffers (it says `waiting` with ~50 ms still to show). */
  readonly playedInRebuffersMs: number;
  readonly rebufferMs: number;
  readonly slowPlayMs: number;
  /**
   * What none of the above explains: the watchdog's resolution (one 100 ms interval either way at each rebuffer's
   * edges) when the harness saw everything; a stop it missed is left over whole.
   */
  readonly unaccountedMs: number;
}

/**
 * The harness's account of a session: wall time = startup + media played + rebuffering + slow play + what is left.
 * Play starts at the first frame's media time (a few ms in); a rebuffer open at the end of the media is closed by
 * `ended`. Null before startup.
 */
export function sessionAccount(record: SessionRecord): SessionAccount | null {
  if (record.startupMs === null) return null;
  const ofType = (type: string) => record.events.filter((event) => event.type === type);
  const starts = ofType('rebuffer-start');
  const ends = record.events.filter((event) => event.type === 'rebuffer-end' || event.type === 'ended');
  const playedInRebuffersMs = starts.reduce(
    (sum, start, index) => sum + (Number(ends[index]?.currentTime) - Number(start.currentTime)) * 1000,
    0,
  );
  const startedAtMs = Number(ofType('startup')[0]?.currentTime ?? 0) * 1000;
  const playedMs = record.playedSeconds * 1000 - startedAtMs - playedInRebuffersMs;
  const rebufferMs = record.rebuffers.reduce((sum, r) => sum + r.durationMs, 0);
  return {
    startupMs: record.startupMs,
    playedMs,
    playedInRebuffersMs,
    rebufferMs,
    slowPlayMs: record.slowPlayMs,
    unaccountedMs: record.sessionMs - record.startupMs - playedMs - rebufferMs - record.slowPlayMs,
  };
}

/**
 * A browser session in player-sim's terms. Bytes are not measured in the browser: they stay 0 and out of the figures.
 */
export function asSessionResult(record: SessionRecord): SessionResult {
  const stalledMs = record.rebuffers.reduce((sum, r) => sum + r.durationMs, 0);
  return {
    startupDelayMs: record.startupMs,
    rebuffers: record.rebuffers.map((r) => ({ startMs: r.startMs, durationMs: r.durationMs })),
    sessionSec: record.sessionMs / 1000,
    playedSec: record.startupMs === null ? 0 : Math.max(0, (record.sessionMs - record.startupMs - stalledMs) / 1000),
    stalledSec: stalledMs / 1000,
    meanBitrateBps: record.meanBitrateBps ?? 0,
    switches: record.switches,
    bytesDownloaded: 0,
    bytesWasted: 0,
    abandoned: record.endReason === 'error',
    segments: 0,
  };
}

/** The QoE figures the CLI's --json prints (player-sim's definitions; see its metrics.ts). */
export type BrowserAggregates = Omit<Aggregates, 'bytesDownloaded' | 'bytesWasted'> & {
  /** Sessions with a player or media error. */
  readonly failedSessions: number;
  readonly videoFreezes: number;
  readonly droppedFrameRatio: number;
};

export function aggregateSessions(records: readonly SessionRecord[]): BrowserAggregates {
  const { bytesDownloaded: _downloaded, bytesWasted: _wasted, ...figures } = aggregate(records.map(asSessionResult));
  const frames = records.reduce((sum, r) => sum + r.totalFrames, 0);
  return {
    ...figures,
    failedSessions: records.filter((r) => r.errors.length > 0).length,
    videoFreezes: records.reduce((sum, r) => sum + r.videoFreezes.length, 0),
    droppedFrameRatio: frames > 0 ? records.reduce((sum, r) => sum + r.droppedFrames, 0) / frames : 0,
  };
}

/** What a `trickle e2e` run gives back: every session's record and their aggregates. */
export interface E2eRunResult {
  readonly aggregates: BrowserAggregates;
  readonly sessions: readonly SessionRecord[];
  readonly url: string;
  readonly link: string | null;
  readonly concurrency: number;
}
