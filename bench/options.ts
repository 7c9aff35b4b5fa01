/**
 * A benchmark's numeric options, checked once before it touches the machine, by the rule the trickle CLI's options
 * follow (@trickle/e2e's numberFromText), with a coded one-line error naming the option.
 */
import { type NumberKind, numberExpectation, numberFromText } from '@trickle/e2e';
import { BenchError } from './errors.js';

/** `text` as a number of `kind`; anything else a coded one-line error naming the option. */
export function numberOption(flag: string, text: string, kind: NumberKind): number {
  const value = numberFromText(text, kind);
  if (value === undefined)
    throw new BenchError('BENCH_ERR_USAGE', `${flag} takes ${numberExpectation(kind)}, not '${text}'`);
  return value;
}
