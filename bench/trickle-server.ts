/** Servers the benchmarks spawn: a free port, the wait until one answers (and its stop), and `trickle serve` itself. */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..', '..');

export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Polls `url` until it answers 2xx; throws when `child` exits first or after about 15 s. */
async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; ; i++) {
    if ((await fetch(url).catch(() => undefined))?.ok === true) return;
    if (i > 150 || child.exitCode !== null) throw new Error(`the server behind ${url} did not start`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The stop function of a spawned server once `readyUrl` answers: it sends `signal` and waits for
 * the exit. A server that never answers is stopped, and the wait's error thrown.
 */
export async function awaitReady(child: ChildProcess, readyUrl: string, signal: NodeJS.Signals): Promise<() => Promise<void>> {
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill(signal);
    await new Promise((resolve) => child.once('exit', resolve));
  };
  try {
    await waitReady(readyUrl, child);
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

export interface TrickleServer {
  readonly url: string;
  readonly child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `trickle serve` on a free loopback port with `args` (and TRICKLE_* `env`) and waits for /healthz. */
export async function startTrickleServer(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<TrickleServer> {
  const port = await freePort();
  const child = spawn(process.execPath, [join(root, 'bin', 'trickle.js'), 'serve', '--port', String(port), '--log-level', 'warn', ...args], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'], env: { ...process.env, ...env } });
  const url = `http://127.0.0.1:${port}`;
  return { url, child, stop: await awaitReady(child, `${url}/healthz`, 'SIGTERM') };
}
