/** Viewer runs (pure, time passed in): what a viewer fetched, and the lower bound on its buffer that follows. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ViewerRuns } from '../../src/delivery/viewer-runs.js';

const segment = (number: number) => ({ number, startSec: (number - 1) * 2, durationSec: 2 });

describe('viewer runs', () => {
  it(
    'follows consecutive segments and bounds the buffer by what was fetched less the ' + 'time since the first request',
    () => {
      const runs = new ViewerRuns();
      assert.deepEqual(runs.join('a', segment(1), 0), {
        segmentsBefore: 0,
        fetchedSec: 0,
        elapsedSec: 0,
        bufferLowerBoundSec: 0,
      });
      runs.join('a', segment(2), 500);
      runs.join('a', segment(3), 1000);
      const fourth = runs.join('a', segment(4), 3000);
      assert.equal(fourth.segmentsBefore, 3);
      assert.equal(fourth.fetchedSec, 6);
      assert.equal(fourth.bufferLowerBoundSec, 3);
    },
  );

  it('counts a segment fetched again ahead of playback (another rung, a retry) once, and keeps the run', () => {
    const runs = new ViewerRuns();
    for (let n = 1; n <= 10; n++) runs.join('a', segment(n), n * 100);
    // At 1.1 s nothing past 1.1 s of media can have played: segment 5 (8 s) is still ahead, a replacement.
    const again = runs.join('a', segment(5), 1100);
    assert.equal(again.fetchedSec, 20);
    assert.equal(runs.join('a', segment(6), 1200).fetchedSec, 20);
    assert.equal(runs.join('a', segment(11), 1300).fetchedSec, 20);
    assert.equal(runs.join('a', segment(12), 1400).fetchedSec, 22);
  });

  it('keeps the run when a player fetches again the segment its playhead may have entered but not left', () => {
    // dash.js on dsl-6mbit: 17 segments fetched from 0 s, then at 19 s segment 10 (18-20 s of media) again at a higher
    // rung, then 11 onwards. Playback can be at most at 19 s: segment 10 is not played whole, a replacement.
    const runs = new ViewerRuns();
    for (let n = 1; n <= 17; n++) runs.join('a', segment(n), (n - 1) * 1000);
    assert.equal(runs.join('a', segment(10), 19_000).fetchedSec, 34);
    for (let n = 11; n <= 17; n++) runs.join('a', segment(n), 19_000 + n * 10);
    assert.equal(runs.join('a', segment(18), 20_000).fetchedSec, 34, 'the run goes on: no second startup');
    // At 20 s segment 9 (16-18 s of media) has been played whole if at all: fetching it again is a seek back.
    assert.equal(runs.join('a', segment(9), 20_100).fetchedSec, 0);
  });

  it('starts a new run on a seek forward, a seek back behind playback, a new key, or after a long pause', () => {
    const runs = new ViewerRuns();
    for (let n = 1; n <= 10; n++) runs.join('a', segment(n), n * 1000);
    assert.equal(runs.join('a', segment(30), 11_000).fetchedSec, 0, 'a seek forward');
    // At 20 s, segment 2 (2 s of media) lies behind anything still playing: a seek back.
    for (let n = 1; n <= 5; n++) runs.join('b', segment(n), n * 1000);
    assert.equal(runs.join('b', segment(2), 20_000).fetchedSec, 0);
    assert.equal(runs.join('c', segment(11), 11_000).fetchedSec, 0, 'another viewer');
    assert.equal(runs.join('a', segment(31), 500_000).fetchedSec, 0, 'back after the idle limit');
  });

  it('tells apart viewers behind one address by their position', () => {
    const runs = new ViewerRuns();
    for (let n = 1; n <= 5; n++) {
      runs.join('shared', segment(n), n * 1000);
      runs.join('shared', segment(n + 20), n * 1000 + 10);
    }
    assert.equal(runs.join('shared', segment(6), 6000).fetchedSec, 10);
    assert.equal(runs.join('shared', segment(26), 6000).fetchedSec, 10);
  });

  it('keeps at most maxRunsPerKey runs and maxKeys keys', () => {
    const runs = new ViewerRuns({ idleMs: 1e9, maxRunsPerKey: 2, maxKeys: 2 });
    runs.join('a', segment(1), 0);
    runs.join('a', segment(50), 1);
    runs.join('a', segment(90), 2);
    assert.equal(runs.join('a', segment(2), 3).fetchedSec, 0, 'the least recent run was dropped');
    runs.join('b', segment(1), 4);
    runs.join('c', segment(1), 5);
    assert.equal(runs.join('a', segment(91), 6).fetchedSec, 0, 'the least recent key was dropped');
  });
});
