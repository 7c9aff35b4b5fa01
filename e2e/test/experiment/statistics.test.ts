/** Hand-computed answers for the report's statistics. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  bootstrap,
  bootstrapComparison,
  differenceOfIndependent,
  ecdfPoints,
  intervalsOverlap,
  mean,
  meanInterval,
  wilsonInterval,
} from '../../src/experiment/statistics.js';

const close = (actual: number, expected: number, tolerance = 1e-4) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${actual} is not ${expected}`);

describe('experiment statistics', () => {
  it('mean', () => {
    assert.equal(mean([1, 2, 6]), 3);
    assert.ok(Number.isNaN(mean([])));
  });

  it('mean of a few runs with its Student-t interval: 10, 12, 14 is 12 in [7.03, 16.97]; one run has none', () => {
    // sd 2, n 3: half-width t(0.975, 2) 4.303 x 2 / sqrt(3) = 4.969.
    const e = meanInterval([10, 12, 14]);
    assert.equal(e.value, 12);
    close(e.low, 7.0313, 1e-3);
    close(e.high, 16.9687, 1e-3);
    assert.equal(e.n, 3);
    const one = meanInterval([5, Number.NaN]);
    assert.equal(one.value, 5);
    assert.ok(Number.isNaN(one.low) && Number.isNaN(one.high));
  });

  it('difference of independent estimates (MOVER): 10 [6, 13] - 4 [3, 8] is 6 in [0.34, 9.16]; none without', () => {
    // low: 6 - sqrt((10 - 6)^2 + (8 - 4)^2) = 6 - 5.657; high: 6 + sqrt((13 - 10)^2 + (4 - 3)^2) = 6 + 3.162.
    const d = differenceOfIndependent({ value: 10, low: 6, high: 13, n: 40 }, { value: 4, low: 3, high: 8, n: 25 });
    assert.equal(d.value, 6);
    close(d.low, 0.3431);
    close(d.high, 9.1623);
    assert.equal(d.n, 25);
    // Symmetric normal intervals: the half-widths add in quadrature, as for a difference of independent means.
    const symmetric = differenceOfIndependent(
      { value: 5, low: 2, high: 8, n: 9 },
      { value: 1, low: -3, high: 5, n: 9 },
    );
    close(symmetric.low, -1);
    close(symmetric.high, 9);
    const none = differenceOfIndependent({ value: 5, low: Number.NaN, high: Number.NaN, n: 1 }, symmetric);
    assert.equal(none.value, 1);
    assert.ok(Number.isNaN(none.low) && Number.isNaN(none.high));
  });

  it('Wilson score interval: 5 of 20 is 25 % in [11.19 %, 46.87 %]; 0 of 10 still has an upper bound', () => {
    const e = wilsonInterval(5, 20);
    assert.equal(e.value, 0.25);
    close(e.low, 0.11186);
    close(e.high, 0.4687);
    const none = wilsonInterval(0, 10);
    assert.equal(none.low, 0);
    close(none.high, 0.27753);
    assert.ok(Number.isNaN(wilsonInterval(0, 0).value));
  });

  it('a cluster bootstrap: identical clusters give a point interval; it is seeded; clusters move together', () => {
    const meanOfClusters = (sample: readonly (readonly number[])[]) => mean(sample.flat());
    const same = bootstrap([[2, 2], [2], [2, 2, 2]], meanOfClusters, { resamples: 200, seed: 7 });
    assert.deepEqual(same, { value: 2, low: 2, high: 2, n: 3 });
    const clusters = [[1, 1, 1, 1], [3], [2, 2], [4, 4, 4], [0]];
    const a = bootstrap(clusters, meanOfClusters, { resamples: 500, seed: 3 });
    assert.deepEqual(bootstrap(clusters, meanOfClusters, { resamples: 500, seed: 3 }), a, 'same seed, same interval');
    close(a.value, 23 / 11);
    assert.ok(a.low < a.value && a.value < a.high && a.low >= 0 && a.high <= 4);
    assert.equal(a.n, 5, 'n counts clusters, not values');
    // A statistic that is NaN on the data gives no interval.
    assert.ok(Number.isNaN(bootstrap<number>([], (s) => mean(s), { resamples: 10, seed: 1 }).low));
  });

  it('compares two groups: the improvement of 1 over 4 is 75 %, exactly when both are constant', () => {
    const improvement = bootstrapComparison([1, 1, 1], [4, 4], (a, b) => (1 - mean(a) / mean(b)) * 100, {
      resamples: 100,
      seed: 1,
    });
    assert.deepEqual(improvement, { value: 75, low: 75, high: 75, n: 2 });
  });

  it('overlapping intervals, and CDF points', () => {
    assert.equal(
      intervalsOverlap({ value: 1, low: 0.5, high: 1.5, n: 9 }, { value: 2, low: 1.4, high: 3, n: 9 }),
      true,
    );
    assert.equal(
      intervalsOverlap({ value: 1, low: 0.5, high: 1.5, n: 9 }, { value: 2, low: 1.6, high: 3, n: 9 }),
      false,
    );
    assert.deepEqual(ecdfPoints([3, 1, 2, 4]), [
      { value: 1, fraction: 0.25 },
      { value: 2, fraction: 0.5 },
      { value: 3, fraction: 0.75 },
      { value: 4, fraction: 1 },
    ]);
    assert.deepEqual(ecdfPoints([5, 1, 4, 2, 3], 2), [
      { value: 3, fraction: 0.6 },
      { value: 5, fraction: 1 },
    ]);
  });
});
