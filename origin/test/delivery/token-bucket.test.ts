import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TokenBucket } from '../../src/delivery/token-bucket.js';

describe('token bucket (application pacing)', () => {
  it('releases 64 kB blocks at the fill rate', () => {
    // 1.25 x 400 kbit/s = 62,500 B/s: a 65,536 B block every 1.048576 s.
    const bucket = new TokenBucket(62_500, 0);
    assert.equal(bucket.delayMs(65_536, 0), 1048.576);
    let now = 0;
    const writes: number[] = [];
    for (let i = 0; i < 4; i++) {
      now += bucket.delayMs(65_536, now);
      bucket.consume(65_536, now);
      writes.push(now);
    }
    assert.deepEqual(
      writes.map((t) => Math.round(t)),
      [1049, 2097, 3146, 4194],
    );
  });

  it('catches up after a stall by spending accumulated tokens back to back', () => {
    const bucket = new TokenBucket(62_500, 0, 65_536);
    bucket.consume(65_536, 0);
    // The network stalls for 5 s: the writer could not write, tokens kept accruing.
    const after = 5000;
    assert.equal(bucket.available(after), 312_500);
    let burst = 0;
    while (bucket.delayMs(65_536, after) === 0) {
      bucket.consume(65_536, after);
      burst++;
    }
    assert.equal(burst, 4, 'four 64 kB blocks leave at once: the burst the paper measured');
  });

  it('keeps accrued tokens across a rate change and rejects a non-positive rate', () => {
    const bucket = new TokenBucket(1000, 0);
    assert.equal(bucket.available(1000), 1000);
    bucket.setFillRate(3000, 1000);
    assert.equal(bucket.available(2000), 4000);
    assert.throws(() => bucket.setFillRate(0, 2000), RangeError);
    assert.throws(() => new TokenBucket(-1, 0), RangeError);
  });
});
