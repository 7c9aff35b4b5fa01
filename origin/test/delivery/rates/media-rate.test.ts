/** The paper's rate rule and bulk's: startup by presentation time for segments, R = the segment's own rate. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mediaRateRule } from '../../../src/delivery/rates/media-rate.js';
import type { MediaResponse } from '../../../src/delivery/rates/rate-rule.js';
import { unthrottledRule } from '../../../src/delivery/rates/unthrottled.js';

const segment = (presentationSec: number): MediaResponse => ({
  asset: 'demo',
  file: 'chunk-1-00010.m4s',
  role: 'segment',
  rangeStart: 0,
  rangeEnd: 249_999,
  cmcd: undefined,
  segment: {
    number: 10,
    renditionId: '1',
    kind: 'video',
    presentationSec,
    durationSec: 2,
    sizeBytes: 250_000,
    bitrateBps: 1e6,
    ladderBps: [1e6],
    renditionBps: 1e6,
  },
});

describe('the media rate rule', () => {
  it("sends segments of the presentation's first startupSec at full speed, later ones at their own rate", () => {
    const rule = mediaRateRule({ startupSec: 35 });
    const early = rule.plan({ response: segment(34), viewer: undefined, nowMs: 0 });
    assert.equal(early.startupEndOffset, 250_000);
    assert.match(early.reason, /within the first 35 s, full speed/);
    const late = rule.plan({ response: segment(36), viewer: undefined, nowMs: 0 });
    assert.equal(late.startupEndOffset, 0);
    assert.equal(late.rateAt(0, 65_536), 125_000);
    assert.equal(late.media.rateAt(0, 65_536), 125_000);
    assert.deepEqual(late.headers, {});
  });

  it('lets bulk send everything at full speed, still knowing the media rate', () => {
    const plan = unthrottledRule().plan({ response: segment(60), viewer: undefined, nowMs: 0 });
    assert.equal(plan.startupEndOffset, 250_000);
    assert.equal(plan.media.rateAt(0, 1000), 125_000);
  });
});
