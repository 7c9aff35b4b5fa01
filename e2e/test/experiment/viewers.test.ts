import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { groupFromServerTiming, progressiveMediaFromTable } from '../../src/experiment/viewers.js';

describe('experiment viewers', () => {
  it('reads the A/B group from Server-Timing, beside a policy entry or alone', () => {
    assert.equal(groupFromServerTiming('policy;desc="app-pacing", ab;desc="baseline2"'), 'baseline2');
    assert.equal(groupFromServerTiming('ab;desc="trickle"'), 'trickle');
    assert.equal(groupFromServerTiming(['policy;desc="cmcd"', 'ab;desc=cmcd']), 'cmcd');
    assert.equal(groupFromServerTiming('policy;desc="bulk"'), undefined);
    assert.equal(groupFromServerTiming(undefined), undefined);
  });

  it('maps bytes to playable media without overstating it', () => {
    const media = progressiveMediaFromTable({
      sizeBytes: 1000,
      durationSec: 1,
      stepSec: 0.25,
      bytesAtStep: [100, 300, 500, 700, 900],
    });
    assert.equal(media.mediaSecAtByte(50), 0);
    assert.equal(media.mediaSecAtByte(299), 0);
    assert.equal(media.mediaSecAtByte(300), 0.25);
    assert.equal(media.mediaSecAtByte(899), 0.75);
    assert.equal(media.mediaSecAtByte(1000), 1);
  });
});
