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

  it('rejects a non-positive fill rate, and counts a shortfall below a microsecond as none', () => {
    assert.throws(() => new TokenBucket(0, 0), RangeError);
    assert.throws(() => new TokenBucket(-1, 0), RangeError);
    // Media seconds summed in floating point leave residues like 1.6e-15 s: no timer for those.
    const bucket = new TokenBucket(1.25, 0, 0.1 + 0.2);
    assert.equal(bucket.delayMs(0.3000000000000001, 0), 0);
    assert.ok(bucket.delayMs(0.31, 0) > 7.9);
  });
});
