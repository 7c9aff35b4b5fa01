/** Session records and QoE figures from player snapshots: pure, no browser. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { aggregateSessions, sessionAccount, sessionRecord, type PlayerSnapshot } from '../../src/index.js';

function snapshot(overrides: Partial<PlayerSnapshot>): PlayerSnapshot {
  return {
    asset: 'demo',
    player: 'dashjs',
    url: 'http://origin/media/demo/manifest.mpd',
    policy: null,
    cmcd: false,
    abr: 'dynamic',
    safetyFactor: null,
    bufferSeconds: null,
    startupMs: 1000,
    rebuffers: [],
    stalls: [],
    videoFreezes: [],
    bitrateTimeline: [{ atMs: 900, bitrateBps: 1e6 }],
    switches: [],
    bitrateBps: 1e6,
    playedSeconds: 0,
    slowPlayMs: 0,
    totalFrames: 1000,
    droppedFrames: 10,
    ended: true,
    errors: [],
    ...overrides,
  };
}

describe('session records', () => {
  it('closes a rebuffer still open at the end at the end, and keeps closed ones', () => {
    const record = sessionRecord({
      index: 0,
      snapshot: snapshot({
        rebuffers: [
          { startMs: 5000, durationMs: 2000, confirmedByWatchdog: true, bufferAheadSec: 0.1 },
          { startMs: 20_000, durationMs: null, confirmedByWatchdog: false, bufferAheadSec: null },
        ],
      }),
      events: [],
      sessionMs: 26_000,
      endReason: 'duration',
      attempts: 1,
    });
    assert.deepEqual(
      record.rebuffers.map((r) => r.durationMs),
      [2000, 6000],
    );
  });

  it("accounts for a session's wall time: startup, play, rebuffering, slow play and what is left", () => {
    // First frame at 0.04 s of media; a 2 s rebuffer at media 10.0 s, the element showing 50 ms more inside it; 20 s
    // played in all; 300 ms of slow play; 24.4 s of wall time: 1000 + 19 910 + 2000 + 300 = 23 210, 1190 unaccounted.
    const record = sessionRecord({
      index: 0,
      snapshot: snapshot({
        playedSeconds: 20,
        slowPlayMs: 300,
        rebuffers: [{ startMs: 11_000, durationMs: 2000, confirmedByWatchdog: true, bufferAheadSec: 0.05 }],
      }),
      events: [
        { atMs: 1000, type: 'startup', currentTime: 0.04 },
        { atMs: 11_000, type: 'rebuffer-start', currentTime: 10 },
        { atMs: 13_000, type: 'rebuffer-end', currentTime: 10.05 },
      ],
      sessionMs: 24_400,
      endReason: 'duration',
      attempts: 1,
    });
    const account = sessionAccount(record)!;
    assert.equal(account.startupMs, 1000);
    assert.ok(Math.abs(account.playedInRebuffersMs - 50) < 1e-6);
    assert.ok(Math.abs(account.playedMs - 19_910) < 1e-6);
    assert.equal(account.rebufferMs, 2000);
    assert.equal(account.slowPlayMs, 300);
    assert.ok(Math.abs(account.unaccountedMs - 1190) < 1e-6);
    assert.equal(
      sessionAccount(
        sessionRecord({
          ...record,
          snapshot: snapshot({ startupMs: null }),
          events: [],
          sessionMs: 5000,
          endReason: 'error',
          attempts: 1,
          index: 0,
        }),
      ),
      null,
    );
  });

  it('weights the bitrate by rendered time from startup, leaving rebuffers out', () => {
    // 1 Mbit/s from startup (1 s) to 11 s, 3 Mbit/s from 11 s to 21 s, of which 5 s were a rebuffer.
    const record = sessionRecord({
      index: 0,
      snapshot: snapshot({
        bitrateTimeline: [
          { atMs: 900, bitrateBps: 1e6 },
          { atMs: 11_000, bitrateBps: 3e6 },
        ],
        switches: [{ atMs: 11_000, bitrateBps: 3e6 }],
        rebuffers: [{ startMs: 14_000, durationMs: 5000, confirmedByWatchdog: true, bufferAheadSec: 0.1 }],
      }),
      events: [],
      sessionMs: 21_000,
      endReason: 'ended',
      attempts: 1,
    });
    assert.equal(record.meanBitrateBps, (10 * 1e6 + 5 * 3e6) / 15);
    assert.equal(record.switches, 1);
  });

  it('has no bitrate for a plain <video> and none before startup', () => {
    const native = sessionRecord({
      index: 0,
      snapshot: snapshot({ player: 'native', bitrateTimeline: [], bitrateBps: null }),
      events: [],
      sessionMs: 5000,
      endReason: 'ended',
      attempts: 1,
    });
    assert.equal(native.meanBitrateBps, null);
    const neverStarted = sessionRecord({
      index: 1,
      snapshot: snapshot({ startupMs: null, ended: false }),
      events: [],
      sessionMs: 60_000,
      endReason: 'timeout',
      attempts: 1,
    });
    assert.equal(neverStarted.meanBitrateBps, null);
  });
});

describe('QoE over browser sessions', () => {
  it('gives rebuffering chance and frequency as the paper defines them', () => {
    const record = (index: number, rebuffers: number, sessionMs: number, errors: string[] = []) =>
      sessionRecord({
        index,
        snapshot: snapshot({
          rebuffers: Array.from({ length: rebuffers }, (_, i) => ({
            startMs: 2000 + i * 3000,
            durationMs: 1000,
            confirmedByWatchdog: true,
            bufferAheadSec: 0,
          })),
          errors,
        }),
        events: [],
        sessionMs,
        endReason: errors.length > 0 ? 'error' : 'ended',
        attempts: 1,
      });
    const figures = aggregateSessions([
      record(0, 0, 30_000),
      record(1, 2, 30_000),
      record(2, 1, 40_000),
      record(3, 0, 20_000, ['dash.js error']),
    ]);
    assert.equal(figures.sessions, 4);
    assert.equal(figures.rebufferChance, 50);
    assert.equal(figures.rebufferFrequency, 3 / 120);
    assert.equal(figures.failedSessions, 1);
    assert.equal(figures.startupDelayMs.mean, 1000);
    assert.equal(figures.droppedFrameRatio, 0.01);
    assert.ok(!('bytesDownloaded' in figures), 'bytes are not measured in the browser and not reported');
  });
});
