/** Benchmarks run as scripts (`npm run bench:*`) or through `trickle bench <name>`: both call main(argv). */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BenchError } from './errors.js';

/**
 * Runs `main` with the command line when the module is the script node was started with. A coded
 * error ends it with one line, as the CLI prints it (`trickle: <message> [code]`).
 */
export async function runIfMain(moduleUrl: string, main: (argv: readonly string[]) => Promise<void>): Promise<void> {
  if (process.argv[1] === undefined || moduleUrl !== pathToFileURL(resolve(process.argv[1])).href) return;
  try {
    await main(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof BenchError)) throw error;
    process.stderr.write(`trickle: ${error.message} [${error.code}]\n`);
    process.exitCode = 1;
  }
}
