/** Servers the benchmarks spawn: a free port, the wait until one answers (and its stop), and `trickle serve` itself. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { BenchError } from './errors.js';
import { stopOnInterrupt } from './interrupt.js';

const root = join(import.meta.dirname, '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Where a benchmark runs a server: on loopback, or on a host the parent cannot reach itself (a lab namespace). */
export interface ServerPlace {
  /** The address the server listens on. */
  readonly host: string;
  /** Wraps the server's command line (e.g. `ip netns exec <ns>`; `ip` execs, so the pid is the server's). */
  readonly wrap: readonly string[];
  /** A fixed port (in a namespace of its own any port is free); a free loopback port when absent. */
  readonly port?: number;
  /** Whether `url` answers 2xx yet; from this process when absent. */
  readonly answers?: (url: string) => Promise<boolean>;
  /** The body of `url` (a server's /healthz, /metrics), from where the server can be reached; this process's fetch when absent. */
  readonly read?: (url: string) => Promise<string>;
}

/** The body of `url` at `place`. */
export async function readAt(place: ServerPlace, url: string): Promise<string> {
  if (place.read !== undefined) return place.read(url);
  return (await fetch(url)).text();
}

export const loopback: ServerPlace = { host: '127.0.0.1', wrap: [] };

/** One byte is enough to know a server answers (nginx would send a rate-limited file whole at its limit_rate). */
const answersHere = async (url: string): Promise<boolean> => {
  const response = await fetch(url, { headers: { range: 'bytes=0-0' } }).catch(() => undefined);
  await response?.body?.cancel().catch(() => undefined);
  return response?.ok === true;
};

/** Polls `url` until it answers 2xx; throws when `child` exits first or after about 15 s. */
async function waitReady(url: string, child: ChildProcess, answers: (url: string) => Promise<boolean>): Promise<void> {
  for (let i = 0; ; i++) {
    if (await answers(url)) return;
    if (i > 150 || child.exitCode !== null)
      throw new BenchError('BENCH_ERR_SERVER', `the server behind ${url} did not start (its own message is above)`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The stop function of a spawned server once `readyUrl` answers: it sends `signal` and waits for
 * the exit. A server that never answers is stopped, and the wait's error thrown.
 */
export async function awaitReady(
  child: ChildProcess,
  readyUrl: string,
  signal: NodeJS.Signals,
  answers: (url: string) => Promise<boolean> = answersHere,
): Promise<() => Promise<void>> {
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill(signal);
    await new Promise((resolve) => child.once('exit', resolve));
  };
  try {
    await waitReady(readyUrl, child, answers);
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

/** Spawns `command` at `place` (wrapped), on a port of its own. */
export async function spawnAt(
  place: ServerPlace,
  command: readonly string[],
  options: { env?: Readonly<Record<string, string>>; cwd?: string } = {},
): Promise<{ child: ChildProcess; port: number }> {
  const port = place.port ?? (await freePort());
  const full = [...place.wrap, ...command.map((arg) => arg.replaceAll('{port}', String(port)))];
  const child = spawn(full[0]!, full.slice(1), {
    cwd: options.cwd ?? root,
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, ...options.env },
  });
  stopOnInterrupt(child, `the process ${full.join(' ').slice(0, 100)}`);
  return { child, port };
}

export interface TrickleServer {
  readonly url: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/**
 * Starts `trickle serve` with `args` (and TRICKLE_* `env`) at `place` (loopback by default) and waits for /healthz.
 * `cpuProfileDir`: the server writes a V8 CPU profile there when it stops (`--cpu-prof`, which NODE_OPTIONS refuses).
 */
export async function startTrickleServer(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  place: ServerPlace = loopback,
  cpuProfileDir?: string,
): Promise<TrickleServer> {
  const profile = cpuProfileDir === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${cpuProfileDir}`];
  const { child, port } = await spawnAt(
    place,
    [
      process.execPath,
      ...profile,
      join(root, 'bin', 'trickle.js'),
      'serve',
      '--host',
      place.host,
      '--public-ops',
      '--port',
      '{port}',
      '--log-level',
      'warn',
      ...args,
    ],
    { env },
  );
  const url = `http://${place.host}:${port}`;
  return { url, child, stop: await awaitReady(child, `${url}/healthz`, 'SIGTERM', place.answers) };
}
