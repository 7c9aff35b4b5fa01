import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cmcdRate, readCmcd } from '../../src/delivery/cmcd-rate.js';

const ladder = [400e3, 800e3, 1.4e6, 2.8e6];

describe('CMCD', () => {
  it('reads CMCD from the query and from headers', () => {
    const fromQuery = readCmcd(`CMCD=${encodeURIComponent('bl=12000,br=800,d=2000,rtp=4000,sid="abc",su')}`, {});
    assert.equal(fromQuery?.bl, 12000);
    assert.equal(fromQuery?.br, 800);
    assert.equal(fromQuery?.rtp, 4000);
    assert.equal(fromQuery?.su, true);
    assert.equal(fromQuery?.sid, 'abc');
    const fromHeaders = readCmcd(undefined, { 'cmcd-request': 'bl=9000', 'cmcd-object': 'br=1400,d=2000', 'cmcd-session': 'sid="x"' });
    assert.equal(fromHeaders?.bl, 9000);
    assert.equal(fromHeaders?.br, 1400);
    assert.equal(readCmcd(undefined, {}), undefined);
    assert.equal(readCmcd('other=1', {}), undefined);
  });

  it('chooses full speed at startup or a low buffer, else the multiplier times the next rung, capped by rtp', () => {
    assert.equal(cmcdRate({ su: true, bl: 20_000 }, ladder, 1e6).fullSpeed, true);
    assert.equal(cmcdRate({ bl: 3000, br: 800 }, ladder, 1e6).fullSpeed, true);
    const half = cmcdRate({ bl: 15_000, br: 800 }, ladder, 1e6);
    assert.ok(!half.fullSpeed && Math.abs(half.rateBitsPerSec - 2.25 * 1.4e6) < 1e-6, JSON.stringify(half));
    const full = cmcdRate({ bl: 30_000, br: 2800 }, ladder, 1e6);
    assert.ok(!full.fullSpeed && Math.abs(full.rateBitsPerSec - 1.5 * 2.8e6) < 1e-6, 'the top rung uses br');
    const capped = cmcdRate({ bl: 15_000, br: 800, rtp: 2000 }, ladder, 1e6);
    assert.ok(!capped.fullSpeed && capped.rateBitsPerSec === 2e6 && /rtp/.test(capped.reason));
    const none = cmcdRate(undefined, ladder, 1e6);
    assert.ok(!none.fullSpeed && none.rateBitsPerSec === 1.5e6);
  });
});
