/**
 * Sammy's pace-rate selection (Algorithm 1 of Spang et al., SIGCOMM 2023) as a table: the initial phase, empty and full
 * buffers, without CMCD.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sammyDecision, sammyRateRule, type SammyRateOptions } from '../../../src/delivery/rates/sammy-rate.js';
import type { MediaResponse } from '../../../src/delivery/rates/rate-rule.js';
import type { ViewerRunState } from '../../../src/delivery/viewer-runs.js';

const options: SammyRateOptions = { c0: 3.2, c1: 2.8, maxBufferMs: 30_000, startupSec: 35 };
const ladderBps = [400e3, 800e3, 1.4e6, 2.8e6];
const segment = { presentationSec: 60, ladderBps };
const viewer = (fetchedSec: number, elapsedSec: number): ViewerRunState => ({
  segmentsBefore: Math.round(fetchedSec / 2),
  fetchedSec,
  elapsedSec,
  bufferLowerBoundSec: fetchedSec - elapsedSec,
});

function paced(decision: ReturnType<typeof sammyDecision>): {
  rateBps: number;
  multiplier: number;
  bufferFraction: number;
} {
  assert.equal(decision.initial, false, JSON.stringify(decision));
  return decision as { rateBps: number; multiplier: number; bufferFraction: number };
}

describe('the sammy rate rule', () => {
  it("paces at (c1 B + c0 (1 - B)) x the ladder's highest bitrate, B the buffer over the max buffer", () => {
    const table: [bufferMs: number, multiplier: number][] = [
      [0, 3.2],
      [7_500, 3.1],
      [15_000, 3.0],
      [30_000, 2.8],
      [90_000, 2.8],
    ];
    for (const [bufferMs, multiplier] of table) {
      const decision = paced(sammyDecision({ segment, cmcd: { bl: bufferMs }, viewer: undefined }, options));
      assert.ok(Math.abs(decision.multiplier - multiplier) < 1e-12, `${bufferMs} ms: ${decision.multiplier}`);
      assert.ok(Math.abs(decision.rateBps - multiplier * 2.8e6) < 1e-6, `${bufferMs} ms: ${decision.rateBps}`);
    }
    // Whatever rung the segment is of: the highest bitrate, not the next rung or the segment's own.
    assert.equal(
      paced(
        sammyDecision(
          { segment: { ...segment, ladderBps: [2.8e6, 400e3] }, cmcd: { bl: 30_000 }, viewer: undefined },
          options,
        ),
      ).rateBps,
      2.8 * 2.8e6,
    );
  });

  it(
    "does not pace in the initial phase: CMCD su, or without CMCD the presentation's " +
      'first startupSec and a viewer run shorter than that',
    () => {
      assert.equal(
        sammyDecision({ segment, cmcd: { su: true, bl: 20_000 }, viewer: undefined }, options).initial,
        true,
      );
      assert.equal(
        sammyDecision({ segment: { ...segment, presentationSec: 10 }, cmcd: undefined, viewer: undefined }, options)
          .initial,
        true,
      );
      assert.equal(
        sammyDecision({ segment, cmcd: undefined, viewer: viewer(20, 5) }, options).initial,
        true,
        'a seek: a new run',
      );
      // With CMCD the player's word decides: a buffer and no su is the playing phase, even early in the presentation.
      assert.equal(
        sammyDecision({ segment: { ...segment, presentationSec: 10 }, cmcd: { bl: 4_000 }, viewer: undefined }, options)
          .initial,
        false,
      );
    },
  );

  it("without CMCD reads the buffer from the viewer's run, and takes an unknown one as empty", () => {
    const run = paced(sammyDecision({ segment, cmcd: undefined, viewer: viewer(60, 45) }, options));
    assert.equal(run.bufferFraction, 0.5);
    assert.ok(Math.abs(run.rateBps - 3.0 * 2.8e6) < 1e-6);
    assert.equal(paced(sammyDecision({ segment, cmcd: undefined, viewer: undefined }, options)).multiplier, 3.2);
  });

  it(
    'plans a segment at the decided rate from its first byte, an initial-phase one at ' +
      "full speed, and a progressive range at the media's rate",
    () => {
      const rule = sammyRateRule(options);
      const response: MediaResponse = {
        asset: 'a',
        file: 'seg.m4s',
        role: 'segment',
        rangeStart: 0,
        rangeEnd: 99_999,
        cmcd: { bl: 30_000 },
        segment: {
          number: 31,
          renditionId: '1',
          kind: 'video',
          presentationSec: 60,
          durationSec: 2,
          sizeBytes: 100_000,
          bitrateBps: 400e3,
          ladderBps,
          renditionBps: 800e3,
        },
      };
      const plan = rule.plan({ response, viewer: undefined, nowMs: 0 });
      assert.equal(plan.startupEndOffset, 0);
      assert.equal(plan.rateAt(0, 1000), (2.8 * 2.8e6) / 8);
      assert.equal(plan.media.rateAt(0, 1000), 50_000, "the media rate stays the segment's own");
      assert.match(plan.headers['server-timing'] ?? '', /^rate;desc="7840 kbit\/s: CMCD bl 30000 ms/);
      const initial = rule.plan({ response: { ...response, cmcd: { su: true } }, viewer: undefined, nowMs: 0 });
      assert.equal(initial.startupEndOffset, 100_000);
      assert.match(initial.reason, /^sammy: initial phase \(CMCD su\)/);
    },
  );
});
