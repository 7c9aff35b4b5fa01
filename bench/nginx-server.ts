/**
 * Debian nginx as the benchmarks' anchor: one process (master_process off, one worker, so its CPU
 * is the server's), a generated config under .cache/bench-nginx/<name>, stopped with SIGQUIT.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { machineCpuSeconds } from '@trickle/e2e';
import { BenchError } from './errors.js';
import { awaitReady, freePort, loopback, spawnAt, type ServerPlace } from './trickle-server.js';

const root = join(import.meta.dirname, '..', '..');
/**
 * CPU seconds the whole machine has been busy, all cores (user, nice, system, irq and softirq; not
 * idle, iowait or steal). Where a kernel's TCP work lands depends on timing (a write into an open
 * window sends in the writer's system call; bytes an ACK releases go in the softirq of whatever ran
 * then), so a server's own CPU alone can place the same work elsewhere.
 */
export function machineBusySeconds(): number {
  const { user, nice, system, irq, softirq } = machineCpuSeconds();
  return user + nice + system + irq + softirq;
}

export function requireNginx(): void {
  if (spawnSync('nginx', ['-v']).status !== 0)
    throw new BenchError(
      'BENCH_ERR_MISSING_TOOL',
      'nginx not found: `./scripts/setup --bench` (or `apt-get install nginx`): the anchor of this benchmark',
    );
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
export async function startNginx(
  name: string,
  options: {
    httpDirectives: readonly string[];
    serverDirectives: readonly string[];
    readyPath: string;
    /** Connections its worker may hold (4096 by default); its file limit is raised to twice that (a socket and a file each). */
    workerConnections?: number;
  },
  place: ServerPlace = loopback,
): Promise<NginxServer> {
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
      ...(options.workerConnections === undefined
        ? []
        : [`worker_rlimit_nofile ${2 * options.workerConnections + 64};`]),
      `events { worker_connections ${options.workerConnections ?? 4096}; }`,
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
  return {
    url,
    pid: child.pid!,
    stop: await awaitReady(child, `${url}${options.readyPath}`, 'SIGQUIT', place.answers),
  };
}
