/**
 * The repository's one quantile definition, used by every report, benchmark and test that gives a
 * median or a percentile: linear interpolation between the two nearest ranks (Hyndman & Fan's
 * type 7; the default of numpy and R, Excel's PERCENTILE.INC). The q-quantile (0..1) of n sorted
 * values sits at position (n - 1) x q: the median of an even count is the mean of the middle two,
 * q = 0 is the least value and q = 1 the greatest. NaN for no values.
 */

/** The q-quantile (0..1) of values already sorted ascending. */
export function quantileSorted(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const position = (sorted.length - 1) * Math.min(1, Math.max(0, q));
  const below = Math.floor(position);
  const above = Math.min(sorted.length - 1, below + 1);
  return sorted[below]! + (sorted[above]! - sorted[below]!) * (position - below);
}

/** The p-th percentile (0..100) of values in any order. */
export function percentile(values: readonly number[], p: number): number {
  return quantileSorted(
    [...values].sort((a, b) => a - b),
    p / 100,
  );
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

/**
 * The mean of the values left after dropping the `fraction` (0..0.5) lowest and highest of them:
 * robust to a few outliers like a median, but it keeps the fractions that whole-number readings
 * spread over (ping prints whole milliseconds from 100 ms on). NaN for no values.
 */
export function trimmedMean(values: readonly number[], fraction: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  const cut = Math.floor(sorted.length * Math.min(0.5, Math.max(0, fraction)));
  const kept = sorted.slice(cut, Math.max(cut + 1, sorted.length - cut));
  return kept.length === 0 ? Number.NaN : kept.reduce((sum, value) => sum + value, 0) / kept.length;
}
