/** Numbers typed on a command line: the one rule of the CLI's options and the benchmarks'. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type NumberKind, numberExpectation, numberFromText } from '../src/command-numbers.js';

const cases: Readonly<Record<NumberKind, { readonly taken: readonly string[]; readonly refused: readonly string[] }>> =
  {
    positive: { taken: ['2.5', '1e3', ' 7 '], refused: ['0', '-2', 'x', '', ' ', 'NaN', 'Infinity'] },
    'non-negative': { taken: ['0', '0.5', '40'], refused: ['-1', 'x', '', '\t', 'Infinity'] },
    'positive-integer': { taken: ['1', '300', '1e2'], refused: ['0', '-1', '1.5', 'x', '', ' ', 'NaN', 'Infinity'] },
    'non-negative-integer': { taken: ['0', '2'], refused: ['-1', '0.5', 'x', '', ' ', 'Infinity'] },
  };

describe('numbers from command-line text', () => {
  for (const [kind, { taken, refused }] of Object.entries(cases) as [NumberKind, (typeof cases)[NumberKind]][]) {
    it(`${kind}: takes ${taken.join(', ')}; refuses ${refused.map((text) => `'${text}'`).join(', ')}`, () => {
      for (const text of taken) assert.equal(numberFromText(text, kind), Number(text), text);
      for (const text of refused) assert.equal(numberFromText(text, kind), undefined, `'${text}'`);
    });
  }

  it('names what each kind takes, for the line that refuses it', () => {
    assert.equal(numberExpectation('positive'), 'a number above 0');
    assert.equal(numberExpectation('non-negative'), 'a number from 0');
    assert.equal(numberExpectation('positive-integer'), 'a whole number from 1');
    assert.equal(numberExpectation('non-negative-integer'), 'a whole number from 0');
  });
});
