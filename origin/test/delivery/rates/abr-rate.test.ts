/**
 * The ABR-aware rate rule's decisions (pure): startup, the next rung x the buffer multiplier, CMCD keys, the viewer run
 * without CMCD.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  abrDecision,
  abrRateRule,
  bufferMultiplier,
  type AbrRateOptions,
} from '../../../src/delivery/rates/abr-rate.js';
import type { MediaResponse } from '../../../src/delivery/rates/rate-rule.js';
import type { ViewerRunState } from '../../../src/delivery/viewer-runs.js';

const options: AbrRateOptions = {
  startupSec: 35,
  multiplierAtEmpty: 3,
  multiplierAtFull: 2,
  multiplierAtTop: 1.5,
  fullBufferMs: 30_000,
  lowBufferMs: 5_000,
  pathHold: { floorPackets: 4 },
};
const ladderBps = [400e3, 800e3, 1.4e6, 2.8e6];
/** A segment of the 800k rung at 60 s, its own rate 600 kbit/s (below its rung's average: VBR). */
const segment = { presentationSec: 60, bitrateBps: 600e3, ladderBps, renditionBps: 800e3 };
const viewer = (fetchedSec: number, elapsedSec: number): ViewerRunState => ({
  segmentsBefore: Math.round(fetchedSec / 2),
  fetchedSec,
  elapsedSec,
  bufferLowerBoundSec: fetchedSec - elapsedSec,
});

function rateOf(decision: ReturnType<typeof abrDecision>): number {
  assert.equal(decision.fullSpeed, false, JSON.stringify(decision));
  return (decision as { rateBps: number }).rateBps;
}

describe('the ABR-aware rate rule', () => {
  it(
    'aims at the next rung x a multiplier that falls from 3 (empty buffer) to 2 (full), ' +
      '1.5 x its own at the top rung, never below the segment',
    () => {
      assert.equal(bufferMultiplier(0, options), 3);
      assert.equal(bufferMultiplier(15_000, options), 2.5);
      assert.equal(bufferMultiplier(60_000, options), 2);
      assert.equal(rateOf(abrDecision({ segment, cmcd: { bl: 30_000 }, viewer: undefined }, options)), 2 * 1.4e6);
      assert.equal(rateOf(abrDecision({ segment, cmcd: { bl: 15_000 }, viewer: undefined }, options)), 2.5 * 1.4e6);
      // The top rung has no next one: its own declared rate, at the top multiplier whatever the buffer.
      assert.equal(
        rateOf(
          abrDecision(
            { segment: { ...segment, renditionBps: 2.8e6 }, cmcd: { bl: 30_000 }, viewer: undefined },
            options,
          ),
        ),
        1.5 * 2.8e6,
      );
      assert.equal(
        rateOf(
          abrDecision(
            { segment: { ...segment, renditionBps: 2.8e6 }, cmcd: { bl: 10_000 }, viewer: undefined },
            options,
          ),
        ),
        1.5 * 2.8e6,
      );
      // A segment far above its rung's average is never paced below its own rate.
      assert.equal(
        rateOf(
          abrDecision({ segment: { ...segment, bitrateBps: 5e6 }, cmcd: { bl: 30_000 }, viewer: undefined }, options),
        ),
        5e6,
      );
    },
  );

  it("holds the aim to the path's evidence, never below the segment's own rate, and says so", () => {
    // The connection's last segment got 700 kbit/s of a 2.8 Mbit/s aim: this one aims at 1.25 x 700.
    const path = { holdBps: 875e3, goodputBps: 700e3, aimBps: 2.8e6 };
    const held = abrDecision({ segment, cmcd: { bl: 30_000 }, viewer: undefined, path }, options);
    assert.equal(rateOf(held), 875e3);
    assert.match(held.reason, /held to 875 kbit\/s: the connection's last segment got 700 of its 2800 kbit\/s/);
    // A path that slow may hold fewer packets than the paper's floor of 10: the held clamp's floor is the option's.
    assert.equal(!held.fullSpeed && held.floorPackets, 4);
    assert.match(held.reason, /clamp floor 4 packets$/);
    // Below the segment's own rate the hold stops there (the paper's R: the media must still arrive in time).
    assert.equal(
      rateOf(
        abrDecision({ segment, cmcd: { bl: 30_000 }, viewer: undefined, path: { ...path, holdBps: 300e3 } }, options),
      ),
      600e3,
    );
    // A hold above the aim changes nothing (a player that stepped down aims lower than the path gave).
    const above = abrDecision(
      { segment, cmcd: { bl: 30_000 }, viewer: undefined, path: { ...path, holdBps: 5e6 } },
      options,
    );
    assert.equal(rateOf(above), 2 * 1.4e6);
    assert.doesNotMatch(above.reason, /held|floor/);
    assert.equal(!above.fullSpeed && above.floorPackets, undefined);
    // Evidence from a segment sent at full speed says so.
    const fullSpeed = abrDecision(
      { segment, cmcd: { bl: 30_000 }, viewer: undefined, path: { ...path, aimBps: undefined } },
      options,
    );
    assert.equal(rateOf(fullSpeed), 875e3);
    assert.match(
      fullSpeed.reason,
      /held to 875 kbit\/s: the connection's last segment got a 700 kbit\/s link at full speed/,
    );
    // Full speed stays full speed: startup is not the path's business.
    assert.equal(abrDecision({ segment, cmcd: { su: true }, viewer: undefined, path }, options).fullSpeed, true);
  });

  it('goes at full speed when the client says it is starting up or its buffer is low', () => {
    assert.equal(abrDecision({ segment, cmcd: { su: true, bl: 20_000 }, viewer: undefined }, options).fullSpeed, true);
    assert.equal(abrDecision({ segment, cmcd: { bl: 3_000 }, viewer: undefined }, options).fullSpeed, true);
    // With CMCD the client's buffer decides, not the presentation time (a seek back to 10 s with a full buffer is
    // paced).
    assert.equal(
      abrDecision({ segment: { ...segment, presentationSec: 10 }, cmcd: { bl: 20_000 }, viewer: undefined }, options)
        .fullSpeed,
      false,
    );
  });

  it(
    'honours rtp only down to what keeps the next rung visible, and goes full speed ' +
      'when mtp is below the next rung',
    () => {
      // dash.js at a 30 s buffer: rtp = 5 x 800 x 2 / 30 = 267 kbit/s, below its own rung.
      const capped = abrDecision({ segment, cmcd: { bl: 30_000, rtp: 300 }, viewer: undefined }, options);
      assert.equal(rateOf(capped), 2 * 1.4e6);
      const half = abrDecision({ segment, cmcd: { bl: 15_000, rtp: 3200 }, viewer: undefined }, options);
      assert.equal(rateOf(half), 3.2e6);
      assert.match(half.reason, /rtp 3200/);
      // At the top rung rtp lowers it down to the top multiple of its own rate.
      assert.equal(
        rateOf(
          abrDecision(
            { segment: { ...segment, renditionBps: 2.8e6 }, cmcd: { bl: 30_000, rtp: 300 }, viewer: undefined },
            options,
          ),
        ),
        1.5 * 2.8e6,
      );
      const mtp = abrDecision({ segment, cmcd: { bl: 20_000, mtp: 1000 }, viewer: undefined }, options);
      assert.equal(mtp.fullSpeed, true);
      assert.match(mtp.reason, /mtp/);
      assert.equal(
        abrDecision({ segment, cmcd: { bl: 20_000, mtp: 5000 }, viewer: undefined }, options).fullSpeed,
        false,
      );
    },
  );

  it(
    'without CMCD keeps a startup phase: the first 35 s of the presentation, a young ' + 'run, a low estimated buffer',
    () => {
      assert.equal(
        abrDecision({ segment: { ...segment, presentationSec: 20 }, cmcd: undefined, viewer: viewer(40, 10) }, options)
          .fullSpeed,
        true,
      );
      // A seek to 60 s starts a new run: its first 35 s of media go at full speed.
      const young = abrDecision({ segment, cmcd: undefined, viewer: viewer(20, 5) }, options);
      assert.equal(young.fullSpeed, true);
      assert.match(young.reason, /run has fetched 20.0 s/);
      // 40 s fetched over 37 s: at least 3 s buffered, below 5 s.
      assert.equal(abrDecision({ segment, cmcd: undefined, viewer: viewer(40, 37) }, options).fullSpeed, true);
      // 60 s fetched over 30 s: at least 30 s buffered, a full buffer.
      assert.equal(rateOf(abrDecision({ segment, cmcd: undefined, viewer: viewer(60, 30) }, options)), 2 * 1.4e6);
      // No CMCD and no run (the engine always has one; a caller may not): the presentation rule, then a full buffer's
      // multiplier.
      assert.equal(rateOf(abrDecision({ segment, cmcd: undefined, viewer: undefined }, options)), 2 * 1.4e6);
    },
  );

  it(
    "paces audio no slower than the top video rung's multiple, for players that estimate from audio too; " +
      'video, and audio without video, as before',
    () => {
      const audio = { presentationSec: 60, bitrateBps: 130e3, ladderBps: [128e3], renditionBps: 128e3 };
      // Its own ladder's top: 1.5 x 128 kbit/s, unless the period's video ladder (top 2.8 Mbit/s) says more.
      assert.equal(
        rateOf(abrDecision({ segment: audio, cmcd: { bl: 30_000 }, viewer: undefined }, options)),
        1.5 * 128e3,
      );
      const withVideo = { ...audio, kind: 'audio' as const, videoTopBps: 2.8e6 };
      const decision = abrDecision({ segment: withVideo, cmcd: { bl: 30_000 }, viewer: undefined }, options);
      assert.equal(rateOf(decision), 1.5 * 2.8e6);
      assert.match(decision.reason, /raised to 1\.5 x the top video rung 2800 kbit\/s/);
      // CMCD rtp does not take it below that either; startup is still full speed.
      assert.equal(
        rateOf(abrDecision({ segment: withVideo, cmcd: { bl: 30_000, rtp: 100 }, viewer: undefined }, options)),
        1.5 * 2.8e6,
      );
      assert.equal(abrDecision({ segment: withVideo, cmcd: { su: true }, viewer: undefined }, options).fullSpeed, true);
      // A video segment's rate is its ladder's business alone.
      const video = { ...segment, kind: 'video' as const, videoTopBps: 2.8e6 };
      assert.equal(
        rateOf(abrDecision({ segment: video, cmcd: { bl: 30_000 }, viewer: undefined }, options)),
        2 * 1.4e6,
      );
    },
  );

  it('plans a segment response with its headers, and a progressive one by the media rate', () => {
    const rule = abrRateRule(options);
    const response: MediaResponse = {
      asset: 'demo',
      file: 'chunk-1-00031.m4s',
      role: 'segment',
      rangeStart: 0,
      rangeEnd: 149_999,
      cmcd: { bl: 30_000 },
      segment: { ...segment, number: 31, renditionId: '1', kind: 'video', durationSec: 2, sizeBytes: 150_000 },
    };
    const plan = rule.plan({ response, viewer: undefined, nowMs: 0 });
    assert.equal(plan.startupEndOffset, 0);
    assert.equal(plan.rateAt(0, 65_536), (2 * 1.4e6) / 8);
    assert.equal(plan.media.rateAt(0, 65_536), 75_000, "the media rate is still the segment's own");
    assert.equal(plan.headers['cmsd-dynamic'], '"trickle";etp=2800');
    assert.equal(plan.headers['cmsd-static'], 'ot=v,st=v');
    assert.match(plan.headers['server-timing']!, /2800 kbit\/s/);
    assert.equal(plan.floorPackets, undefined, "the enforcer's floor where no path holds the connection");
    // Held by the path: the plan carries the held clamp's floor to the enforcer.
    const path = { holdBps: 875e3, goodputBps: 700e3, aimBps: 2.8e6 };
    const held = rule.plan({ response, viewer: undefined, path, nowMs: 0 });
    assert.equal(held.rateAt(0, 65_536), 875e3 / 8);
    assert.equal(held.floorPackets, 4);
    const startup = rule.plan({ response: { ...response, cmcd: { su: true } }, viewer: undefined, nowMs: 0 });
    assert.equal(startup.startupEndOffset, 150_000);
    assert.equal(startup.headers['cmsd-dynamic'], undefined);
  });
});
