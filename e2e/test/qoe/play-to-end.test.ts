import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { starvedStalls } from '../../src/index.js';

describe('starvedStalls', () => {
  it('keeps the confirmed stalls with under half a second buffered ahead, and only those', () => {
    const starved = { startMs: 1000, durationMs: 900, confirmedByWatchdog: true, bufferAheadSec: 0.2 };
    const gap = { startMs: 2000, durationMs: 700, confirmedByWatchdog: true, bufferAheadSec: 0 };
    const decoder = { startMs: 5500, durationMs: 988, confirmedByWatchdog: true, bufferAheadSec: 1.4 };
    const brief = { startMs: 8000, durationMs: 180, confirmedByWatchdog: false, bufferAheadSec: null };
    assert.deepEqual(starvedStalls({ rebuffers: [starved, gap, decoder, brief] }), [starved, gap]);
  });

  it('takes a confirmed stall whose buffer was not read as starved', () => {
    const unread = { startMs: 1000, durationMs: 900, confirmedByWatchdog: true, bufferAheadSec: null };
    assert.deepEqual(starvedStalls({ rebuffers: [unread] }), [unread]);
  });
});
