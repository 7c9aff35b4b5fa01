/** Every benchmark writes its table the same way: a title, the machine and date, then its lines. */
import { writeFile } from 'node:fs/promises';
import { cpus, hostname, release } from 'node:os';
import { join } from 'node:path';

export async function writeResults(fileName: string, title: string, body: readonly string[]): Promise<void> {
  const lines = [
    `# ${title}`,
    '',
    `Machine: ${hostname()}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown CPU'}, ` +
      `Linux ${release()}, Node ${process.version}`,
    `Date: ${new Date().toISOString()}`,
    ...body,
  ];
  const out = join(import.meta.dirname, '..', '..', 'bench', 'results', fileName);
  await writeFile(out, `${lines.join('\n')}\n`);
  process.stderr.write(`written to ${out}\n`);
}
