/** Replaying a trace on a link: the rate of the trace's present moment, on the trace's own clock. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { stepTrace } from '@trickle/player-sim';
import { replayTrace } from '../../src/lab/trace-replay.js';

describe('replayTrace', () => {
  it("applies the trace's first point at once when it starts with its trace", () => {
    const rates: number[] = [];
    const stop = replayTrace(stepTrace(8e6, 2e6, 60_000), {
      setDownRate: (rateBps) => rates.push(rateBps),
      setDownDelay: async () => undefined,
    });
    stop();
    assert.deepEqual(rates, [8e6]);
  });

  it('joins its trace where it is when it starts late (a slow host or guest), not at its beginning', () => {
    const rates: number[] = [];
    // The trace began 5 s ago and stepped at 3 s: the replayer's first rate is the step's.
    const stop = replayTrace(
      stepTrace(8e6, 2e6, 3000, 600_000),
      { setDownRate: (rateBps) => rates.push(rateBps), setDownDelay: async () => undefined },
      Date.now() - 5000,
    );
    stop();
    assert.deepEqual(rates, [2e6]);
  });
});
