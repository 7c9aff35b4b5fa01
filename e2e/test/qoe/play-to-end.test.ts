import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { machineStalls, starvedStalls } from '../../src/index.js';

describe('starvedStalls', () => {
  it('keeps the confirmed stalls with under half a second buffered ahead, and only those', () => {
    const starved = { startMs: 1000, durationMs: 900, confirmedByWatchdog: true, bufferAheadSec: 0.2 };
    const gap = { startMs: 2000, durationMs: 700, confirmedByWatchdog: true, bufferAheadSec: 0 };
    const decoder = { startMs: 5500, durationMs: 988, confirmedByWatchdog: true, bufferAheadSec: 1.4 };
    const brief = { startMs: 8000, durationMs: 180, confirmedByWatchdog: false, bufferAheadSec: null };
    const session = { rebuffers: [starved, gap, decoder, brief], videoFreezes: [] };
    assert.deepEqual(starvedStalls(session), [starved, gap]);
    assert.deepEqual(machineStalls(session), [decoder]);
  });

  it('takes a confirmed stall whose buffer was not read as starved', () => {
    const unread = { startMs: 1000, durationMs: 900, confirmedByWatchdog: true, bufferAheadSec: null };
    assert.deepEqual(starvedStalls({ rebuffers: [unread], videoFreezes: [] }), [unread]);
  });

  it('gives the machine a starved stall that begins in a video freeze or within 2 s of its end, and only those', () => {
    // As a hunt saw under trickle: the decoder froze 1.5 s, the player's requests starved with it, and the buffer ran
    // out 0.5 s after the freeze ended.
    const freeze = { startMs: 7497, durationMs: 1506 };
    const afterIt = { startMs: 8910, durationMs: 753, confirmedByWatchdog: true, bufferAheadSec: 0.05 };
    const during = { startMs: 7600, durationMs: 600, confirmedByWatchdog: true, bufferAheadSec: 0 };
    const later = { startMs: 11_100, durationMs: 600, confirmedByWatchdog: true, bufferAheadSec: 0 };
    const before = { startMs: 7000, durationMs: 600, confirmedByWatchdog: true, bufferAheadSec: 0 };
    const session = { rebuffers: [before, during, afterIt, later], videoFreezes: [freeze] };
    assert.deepEqual(starvedStalls(session), [before, later]);
    assert.deepEqual(machineStalls(session), [during, afterIt]);
    const ongoing = { rebuffers: [later], videoFreezes: [{ startMs: 7497, durationMs: null }] };
    assert.deepEqual(starvedStalls(ongoing), [], 'a freeze still open when the session ended covers what follows');
  });
});
