/**
 * QoE aggregates over sessions, the paper's (section 5.4, after Mok et al. 2011) and the usual:
 * - rebufferChance: % of sessions with at least one rebuffering event;
 * - rebufferFrequency: rebuffering events per second of session, pooled (sum of events / sum of
 *   session seconds), in events/s;
 * - startupDelayMs: time from the first request to playback start (mean, p50, p95; sessions that
 *   never started are left out and counted in `neverStarted`);
 * - rebufferRatio: stalled seconds / session seconds, pooled;
 * - meanBitrateBps: played-time-weighted declared bitrate, pooled over played seconds;
 * - switchesPerMinute: rendition changes per minute of playback, pooled;
 * - bytesDownloaded / bytesWasted: totals (wasted: downloaded but never played).
 */
import type { SessionResult } from './session.js';
import { percentile } from './statistics.js';

export interface Aggregates {
  readonly sessions: number;
  readonly rebufferChance: number;
  readonly rebufferFrequency: number;
  readonly startupDelayMs: { readonly mean: number; readonly p50: number; readonly p95: number };
  readonly neverStarted: number;
  readonly abandoned: number;
  readonly rebufferRatio: number;
  readonly meanBitrateBps: number;
  readonly switchesPerMinute: number;
  readonly bytesDownloaded: number;
  readonly bytesWasted: number;
}

export function aggregate(results: readonly SessionResult[]): Aggregates {
  const sum = (pick: (r: SessionResult) => number) => results.reduce((total, r) => total + pick(r), 0);
  const sessionSec = sum((r) => r.sessionSec);
  const playedSec = sum((r) => r.playedSec);
  const startups = results.map((r) => r.startupDelayMs).filter((v): v is number => v !== null);
  return {
    sessions: results.length,
    rebufferChance:
      results.length === 0 ? 0 : (100 * results.filter((r) => r.rebuffers.length > 0).length) / results.length,
    rebufferFrequency: sessionSec > 0 ? sum((r) => r.rebuffers.length) / sessionSec : 0,
    startupDelayMs: {
      mean: startups.length === 0 ? Number.NaN : startups.reduce((a, b) => a + b, 0) / startups.length,
      p50: percentile(startups, 50),
      p95: percentile(startups, 95),
    },
    neverStarted: results.length - startups.length,
    abandoned: results.filter((r) => r.abandoned).length,
    rebufferRatio: sessionSec > 0 ? sum((r) => r.stalledSec) / sessionSec : 0,
    meanBitrateBps: playedSec > 0 ? sum((r) => r.meanBitrateBps * r.playedSec) / playedSec : 0,
    switchesPerMinute: playedSec > 0 ? (sum((r) => r.switches) * 60) / playedSec : 0,
    bytesDownloaded: sum((r) => r.bytesDownloaded),
    bytesWasted: sum((r) => r.bytesWasted),
  };
}
