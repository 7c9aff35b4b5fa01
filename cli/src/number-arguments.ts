/** commander argument parsers for numbers, by the rule the benchmarks use too, with the message naming the option. */
import { type NumberKind, numberExpectation, numberFromText } from '@trickle/e2e/command-help';
import { InvalidArgumentError } from 'commander';

function numberArgument(name: string, kind: NumberKind) {
  return (text: string): number => {
    const value = numberFromText(text, kind);
    if (value === undefined) throw new InvalidArgumentError(`${name} must be ${numberExpectation(kind)}`);
    return value;
  };
}

export const positiveNumber = (name: string) => numberArgument(name, 'positive');
export const positiveInteger = (name: string) => numberArgument(name, 'positive-integer');
export const nonNegativeNumber = (name: string) => numberArgument(name, 'non-negative');
export const nonNegativeInteger = (name: string) => numberArgument(name, 'non-negative-integer');
