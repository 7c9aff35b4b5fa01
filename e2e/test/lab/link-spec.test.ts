import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bdpBytes,
  parseBytes,
  parseDurationMs,
  parseLoss,
  parseRate,
  profileLink,
  profiles,
  symmetricLink,
} from '../../src/index.js';

const isSpecError = (error: unknown) => (error as { code?: string }).code === 'E2E_ERR_LINK_SPEC';

describe('link specs', () => {
  it('parses rates, durations, loss and sizes with units', () => {
    assert.equal(parseRate('6mbit'), 6e6);
    assert.equal(parseRate('700kbit'), 7e5);
    assert.equal(parseRate('1.5Mbps'), 1.5e6);
    assert.equal(parseRate('64000'), 64000);
    assert.equal(parseDurationMs('40ms'), 40);
    assert.equal(parseDurationMs('0.3s'), 300);
    assert.equal(parseLoss('0.5%'), 0.005);
    assert.equal(parseLoss('0.01'), 0.01);
    assert.equal(parseBytes('64kb'), 64000);
    for (const [parse, bad] of [
      [parseRate, 'fast'],
      [parseRate, '1bit'],
      [parseDurationMs, '40 parsecs'],
      [parseLoss, '100%'],
      [parseLoss, '-1'],
      [parseBytes, 'lots'],
    ] as const) {
      assert.throws(() => (parse as (text: string) => number)(bad), isSpecError, bad);
    }
  });

  it('sizes buffers in BDP multiples, splits the RTT and keeps a floor of two frames', () => {
    assert.equal(bdpBytes(6e6, 40), 30_000);
    const link = symmetricLink({ rateBps: 6e6, upRateBps: 1e6, rttMs: 40, bufferBdp: 2, lossRate: 0.01 });
    assert.deepEqual(link.down, { rateBps: 6e6, delayMs: 20, lossRate: 0.01, bufferBytes: 60_000 });
    assert.deepEqual(link.up, { rateBps: 1e6, delayMs: 20, lossRate: 0, bufferBytes: 10_000 });
    assert.equal(symmetricLink({ rateBps: 1e6, rttMs: 1, bufferBdp: 1 }).down.bufferBytes, 3028);
    assert.throws(() => symmetricLink({ rateBps: 1e6, rttMs: 10, bufferBdp: 1, bufferBytes: 5000 }), isSpecError);
  });

  it('has the documented profiles', () => {
    const dsl = profileLink('dsl-6mbit');
    assert.equal(dsl.down.rateBps, 6e6);
    assert.equal(dsl.down.delayMs + dsl.up.delayMs, 40);
    assert.equal(dsl.down.bufferBytes, 60_000);
    const slow = profileLink('slow-1mbit');
    assert.equal(slow.down.rateBps, 0.7e6);
    assert.equal(slow.down.delayMs * 2, 300);
    assert.ok(profileLink('lte-trace').trace !== undefined && profileLink('3g-trace').trace !== undefined);
    assert.ok(Object.keys(profiles).includes('fast-20mbit'));
    assert.throws(() => profileLink('moon-link'), isSpecError);
  });
});
