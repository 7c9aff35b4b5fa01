import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseRange } from '../../src/http/range.js';

const size = 1000;

describe('parseRange', () => {
  it('answers full when there is no Range header or the unit is not bytes', () => {
    assert.deepEqual(parseRange(undefined, size), { kind: 'full', reason: 'no-range' });
    assert.deepEqual(parseRange('items=0-5', size), { kind: 'full', reason: 'other-unit' });
    assert.deepEqual(parseRange('=0-1', size), { kind: 'full', reason: 'other-unit' });
  });

  it('parses bytes=a-b, bytes=a- and bytes=-n', () => {
    assert.deepEqual(parseRange('bytes=0-99', size), { kind: 'partial', ranges: [{ start: 0, end: 99 }] });
    assert.deepEqual(parseRange('bytes=900-', size), { kind: 'partial', ranges: [{ start: 900, end: 999 }] });
    assert.deepEqual(parseRange('bytes=-100', size), { kind: 'partial', ranges: [{ start: 900, end: 999 }] });
    assert.deepEqual(parseRange('bytes=999-999', size), { kind: 'partial', ranges: [{ start: 999, end: 999 }] });
  });

  it('accepts a case-insensitive unit and whitespace around members', () => {
    assert.deepEqual(parseRange('Bytes= 0-1 , 5-6 ', size), {
      kind: 'partial',
      ranges: [
        { start: 0, end: 1 },
        { start: 5, end: 6 },
      ],
    });
  });

  it('clamps the last position and a suffix longer than the file', () => {
    assert.deepEqual(parseRange('bytes=500-5000', size), { kind: 'partial', ranges: [{ start: 500, end: 999 }] });
    assert.deepEqual(parseRange('bytes=-5000', size), { kind: 'partial', ranges: [{ start: 0, end: 999 }] });
    assert.deepEqual(parseRange('bytes=0-99999999999999999999999', size), {
      kind: 'partial',
      ranges: [{ start: 0, end: 999 }],
    });
  });

  it('is unsatisfiable when no member overlaps the representation', () => {
    assert.equal(parseRange('bytes=1000-', size).kind, 'unsatisfiable');
    assert.equal(parseRange('bytes=5000-6000', size).kind, 'unsatisfiable');
    assert.equal(parseRange('bytes=-0', size).kind, 'unsatisfiable');
    assert.equal(parseRange('bytes=0-0', 0).kind, 'unsatisfiable');
    assert.equal(parseRange('bytes=-5', 0).kind, 'unsatisfiable');
    assert.equal(parseRange('bytes=99999999999999999999-', size).kind, 'unsatisfiable');
  });

  it('drops unsatisfiable members and keeps the rest', () => {
    assert.deepEqual(parseRange('bytes=2000-3000,0-9', size), { kind: 'partial', ranges: [{ start: 0, end: 9 }] });
  });

  it('rejects garbage with a reason', () => {
    for (const garbage of [
      'bytes=',
      'bytes=abc',
      'bytes=1-2-3',
      'bytes=5-1',
      'bytes=-',
      'bytes=0x10-20',
      'bytes=1.5-2',
      'bytes 0-1',
      'bytes=+1-2',
      'bytes=,,',
    ]) {
      const outcome = parseRange(garbage, size);
      assert.equal(outcome.kind, 'unsatisfiable', garbage);
      if (outcome.kind === 'unsatisfiable') assert.ok(outcome.reason.length > 0);
    }
  });

  it('keeps the order of non-overlapping ranges and coalesces overlapping ones', () => {
    assert.deepEqual(parseRange('bytes=500-599,0-99', size), {
      kind: 'partial',
      ranges: [
        { start: 500, end: 599 },
        { start: 0, end: 99 },
      ],
    });
    assert.deepEqual(parseRange('bytes=0-99,50-149,150-160,300-310', size), {
      kind: 'partial',
      ranges: [
        { start: 0, end: 160 },
        { start: 300, end: 310 },
      ],
    });
  });

  it('ignores range sets with more members than allowed', () => {
    const many = `bytes=${Array.from({ length: 17 }, (_, i) => `${i * 10}-${i * 10 + 1}`).join(',')}`;
    assert.deepEqual(parseRange(many, size), { kind: 'full', reason: 'too-many-ranges' });
    assert.equal(parseRange(many, size, 20).kind, 'partial');
  });
});
