/**
 * `@trickle/e2e/command-help`: what the trickle CLI and the benchmarks take from this package before a command runs,
 * without the lab, the browser harness or the simulator they load.
 */
export { numberExpectation, numberFromText, type NumberKind } from './command-numbers.js';
export { stageProgress, type StageProgress } from './progress.js';

/**
 * What every command's --help ends with (the trickle CLI's and the benchmarks'): examples a user can paste (commander
 * prints it after the options).
 */
export function examples(...lines: readonly string[]): string {
  return `\nExamples:\n${lines.map((line) => (line.startsWith('#') ? `  ${line}` : `  $ ${line}`)).join('\n')}\n`;
}
