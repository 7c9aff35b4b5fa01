import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readCmcd } from '../../src/delivery/cmcd.js';

describe('CMCD', () => {
  it('reads CMCD from the query and from headers', () => {
    const fromQuery = readCmcd(`CMCD=${encodeURIComponent('bl=12000,br=800,d=2000,rtp=4000,sid="abc",su')}`, {});
    assert.equal(fromQuery?.bl, 12000);
    assert.equal(fromQuery?.br, 800);
    assert.equal(fromQuery?.rtp, 4000);
    assert.equal(fromQuery?.su, true);
    assert.equal(fromQuery?.sid, 'abc');
    const fromHeaders = readCmcd(undefined, {
      'cmcd-request': 'bl=9000',
      'cmcd-object': 'br=1400,d=2000',
      'cmcd-session': 'sid="x"',
    });
    assert.equal(fromHeaders?.bl, 9000);
    assert.equal(fromHeaders?.br, 1400);
    assert.equal(readCmcd(undefined, {}), undefined);
    assert.equal(readCmcd('other=1', {}), undefined);
  });
});
