/**
 * Numbers typed on a command line, one rule for the trickle CLI's options and the benchmarks': Number() of a typo is
 * NaN and of '' or ' ' is 0, which a command would carry into its run as NaN figures, no clients or an unset seed.
 */

/** What an option takes. */
export type NumberKind = 'positive' | 'non-negative' | 'positive-integer' | 'non-negative-integer';

const numberKinds: Readonly<
  Record<NumberKind, { readonly accepts: (value: number) => boolean; readonly expectation: string }>
> = {
  positive: { accepts: (value) => Number.isFinite(value) && value > 0, expectation: 'a number above 0' },
  'non-negative': { accepts: (value) => Number.isFinite(value) && value >= 0, expectation: 'a number from 0' },
  'positive-integer': {
    accepts: (value) => Number.isInteger(value) && value >= 1,
    expectation: 'a whole number from 1',
  },
  'non-negative-integer': {
    accepts: (value) => Number.isInteger(value) && value >= 0,
    expectation: 'a whole number from 0',
  },
};

/** `text` as a number of `kind`, or undefined when it is not one (blank text included). */
export function numberFromText(text: string, kind: NumberKind): number | undefined {
  const value = text.trim() === '' ? Number.NaN : Number(text);
  return numberKinds[kind].accepts(value) ? value : undefined;
}

/** What an option of `kind` takes, for the line that refuses it: "a whole number from 1". */
export function numberExpectation(kind: NumberKind): string {
  return numberKinds[kind].expectation;
}
