/**
 * A benchmark's numeric options, checked once before it touches the machine: commander hands over text, and
 * Number() of a typo is NaN (of '' is 0), which a benchmark would carry into its runs as no clients or NaN figures.
 */
import { BenchError } from './errors.js';

/** `text` as a whole number of at least `min`; anything else a coded one-line error naming the option. */
export function wholeNumberOption(flag: string, text: string, min: number): number {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  if (!Number.isInteger(value) || value < min)
    throw new BenchError('BENCH_ERR_USAGE', `${flag} takes a whole number from ${min}, not '${text}'`);
  return value;
}

/** `text` as a finite number above 0 (with `allowZero`, from 0); anything else a coded one-line error. */
export function positiveNumberOption(flag: string, text: string, options: { allowZero?: boolean } = {}): number {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  const allowZero = options.allowZero === true;
  if (!Number.isFinite(value) || value < 0 || (value === 0 && !allowZero))
    throw new BenchError(
      'BENCH_ERR_USAGE',
      `${flag} takes a number ${allowZero ? 'from 0' : 'above 0'}, not '${text}'`,
    );
  return value;
}
