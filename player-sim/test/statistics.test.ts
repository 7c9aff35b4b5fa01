/** The one quantile definition (Hyndman & Fan type 7), against hand-computed answers. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { median, percentile, quantileSorted, trimmedMean } from '../src/statistics.js';

describe('quantiles', () => {
  it('interpolates linearly between the nearest ranks, at position (n - 1) x q', () => {
    assert.equal(quantileSorted([10, 20, 30, 40, 50], 0.25), 20);
    assert.equal(quantileSorted([10, 20], 0.975), 19.75);
    // numpy.percentile(range(1, 101), 95) and Excel PERCENTILE.INC agree: 95.05.
    assert.ok(
      Math.abs(
        percentile(
          Array.from({ length: 100 }, (_, i) => i + 1),
          95,
        ) - 95.05,
      ) < 1e-9,
    );
    assert.equal(percentile([5, 1, 3, 2, 4], 50), 3);
  });

  it('takes values in any order; the ends are the least and greatest; NaN for none', () => {
    assert.equal(percentile([5, 1, 3, 2, 4], 0), 1);
    assert.equal(percentile([5, 1, 3, 2, 4], 100), 5);
    assert.equal(percentile([7], 99), 7);
    assert.ok(Number.isNaN(percentile([], 50)));
  });

  it('the median of an even count is the mean of the middle two', () => {
    assert.equal(median([5, 1, 3]), 3);
    assert.equal(median([4, 1, 3, 2]), 2.5);
  });
});

describe('trimmedMean', () => {
  it('drops the given share at each end, then averages', () => {
    assert.equal(trimmedMean([1, 2, 3, 4, 100], 0.2), 3);
    assert.equal(trimmedMean([5, 1, 3], 0), 3);
    assert.ok(Number.isNaN(trimmedMean([], 0.1)));
  });

  it('keeps the fraction of whole-number readings that a median of them loses', () => {
    // Readings of ~302.4 ms printed whole: 302 or 303, an outlier of 340 among them.
    const readings = [
      302, 302, 303, 302, 302, 303, 302, 303, 302, 302, 340, 302, 303, 302, 302, 302, 303, 302, 302, 303,
    ];
    assert.equal(median(readings), 302);
    assert.ok(Math.abs(trimmedMean(readings, 0.1) - 302.31) < 0.01, String(trimmedMean(readings, 0.1)));
  });
});
