/** Benchmarks run as scripts (`npm run bench:*`) or through `trickle bench <name>`: both call main(argv). */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

/** Runs `main` with the command line when the module is the script node was started with. */
export async function runIfMain(moduleUrl: string, main: (argv: readonly string[]) => Promise<void>): Promise<void> {
  if (process.argv[1] !== undefined && moduleUrl === pathToFileURL(resolve(process.argv[1])).href) await main(process.argv.slice(2));
}
