/** Every benchmark writes its table the same way: a title, the machine and date, then its lines. */
import { writeFile } from 'node:fs/promises';
import { cpus, hostname, release } from 'node:os';
import { basename, join } from 'node:path';
import { BenchError } from './errors.js';

/**
 * A results file's name as `--results` gives it: a plain file name in bench/results. Checked before a benchmark runs,
 * so a name with a directory in it does not lose a long run's results at the end.
 */
export function resultsFileName(name: string, option = '--results'): string {
  if (name === '' || name === '.' || name === '..' || basename(name) !== name)
    throw new BenchError('BENCH_ERR_USAGE', `${option} '${name}': a file name in bench/results, without a directory`);
  return name;
}

export async function writeResults(fileName: string, title: string, body: readonly string[]): Promise<void> {
  const lines = [
    `# ${title}`,
    '',
    `Machine: ${hostname()}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ` +
      `Linux ${release()}, Node ${process.version}`,
    `Date: ${new Date().toISOString()}`,
    ...body,
  ];
  const out = join(import.meta.dirname, '..', '..', 'bench', 'results', resultsFileName(fileName, 'results file'));
  await writeFile(out, `${lines.join('\n')}\n`);
  process.stderr.write(`written to ${out}\n`);
}
