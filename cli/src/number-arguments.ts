/** commander argument parsers for numbers, one rule each, with the message naming the flag. */
import { InvalidArgumentError } from 'commander';

function numberArgument(name: string, accepts: (value: number) => boolean, expectation: string) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!accepts(parsed)) throw new InvalidArgumentError(`${name} must be ${expectation}`);
    return parsed;
  };
}

export const positiveNumber = (name: string) =>
  numberArgument(name, (n) => Number.isFinite(n) && n > 0, 'a positive number');
export const positiveInteger = (name: string) =>
  numberArgument(name, (n) => Number.isInteger(n) && n >= 1, 'a positive integer');
export const nonNegativeNumber = (name: string) =>
  numberArgument(name, (n) => Number.isFinite(n) && n >= 0, 'a number >= 0');
export const nonNegativeInteger = (name: string) =>
  numberArgument(name, (n) => Number.isInteger(n) && n >= 0, 'an integer >= 0');
