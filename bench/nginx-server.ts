/**
 * Debian nginx as the benchmarks' anchor: one process (master_process off, one worker, so its CPU
 * is the server's), a generated config under .cache/bench-nginx/<name>, stopped with SIGQUIT.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BenchError } from './errors.js';
import { awaitReady, freePort, loopback, spawnAt, type ServerPlace } from './trickle-server.js';

const root = join(import.meta.dirname, '..', '..');
const clockTicks = Number(spawnSync('getconf', ['CLK_TCK']).stdout.toString().trim()) || 100;

/** User + system CPU seconds a process has used (from /proc/<pid>/stat). */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  // utime and stime are fields 14 and 15 of stat, i.e. 11 and 12 after the command name.
  return (Number(fields[11]) + Number(fields[12])) / clockTicks;
}

/**
 * CPU seconds the whole machine has been busy, all cores (from /proc/stat: user, nice, system, irq
 * and softirq; not idle, iowait or steal). Where a kernel's TCP work lands depends on timing (a
 * write into an open window sends in the writer's system call; bytes an ACK releases go in the
 * softirq of whatever ran then), so a server's own CPU alone can place the same work elsewhere.
 */
export function machineBusySeconds(): number {
  const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0] = fields;
  return (user + nice + system + irq + softirq) / clockTicks;
}

export function requireNginx(): void {
  if (spawnSync('nginx', ['-v']).status !== 0) throw new BenchError('BENCH_ERR_MISSING_TOOL', 'nginx not found: `./scripts/setup --bench` (or `apt-get install nginx`): the anchor of this benchmark');
}

export interface NginxServer {
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts nginx at `place` (a free loopback port by default) with `serverDirectives` inside its `server {}` block (plus
 * `http {}` directives), and waits until `readyPath` answers.
 */
export async function startNginx(name: string, options: { httpDirectives: readonly string[]; serverDirectives: readonly string[]; readyPath: string }, place: ServerPlace = loopback): Promise<NginxServer> {
  const port = place.port ?? (await freePort());
  const prefix = join(root, '.cache', 'bench-nginx', name);
  mkdirSync(join(prefix, 'logs'), { recursive: true });
  writeFileSync(
    join(prefix, 'nginx.conf'),
    [
      'worker_processes 1;',
      'daemon off;',
      'master_process off;',
      `pid ${join(prefix, 'nginx.pid')};`,
      'error_log stderr error;',
      'events { worker_connections 4096; }',
      'http {',
      '  access_log off;',
      ...options.httpDirectives.map((line) => `  ${line}`),
      `  server { listen ${place.host}:${port}; ${options.serverDirectives.join(' ')} }`,
      '}',
      '',
    ].join('\n'),
  );
  const { child } = await spawnAt({ ...place, port }, ['nginx', '-p', prefix, '-c', join(prefix, 'nginx.conf')]);
  const url = `http://${place.host}:${port}`;
  return { url, pid: child.pid!, stop: await awaitReady(child, `${url}${options.readyPath}`, 'SIGQUIT', place.answers) };
}
