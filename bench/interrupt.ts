/**
 * What a benchmark changes on the machine (sysctls, a route, a lab's namespaces, servers it started) is put back
 * when it ends, in `finally` blocks, and also when it is interrupted: a signal ends the process without unwinding
 * them, so each change registers its undo here, and the first SIGINT, SIGTERM or SIGHUP runs every registered undo,
 * newest first, then exits (130). Before this, a benchmark stopped by its operator left the machine on cubic with
 * BPF statistics on, a route to 127.0.0.8 and an origin still serving.
 */

import type { ChildProcess } from 'node:child_process';

type Undo = () => void | Promise<void>;

const undos = new Set<{ readonly what: string; readonly undo: Undo }>();
let installed = false;

async function interrupted(signal: NodeJS.Signals): Promise<void> {
  process.stderr.write(`bench: ${signal}: putting back ${undos.size} change(s) to the machine\n`);
  for (const entry of [...undos].reverse()) {
    try {
      await entry.undo();
    } catch (error) {
      process.stderr.write(`bench: could not put back ${entry.what}: ${(error as Error).message}\n`);
    }
  }
  process.exit(130);
}

/** Registers `undo` (what it puts back: `what`) to run if the process is interrupted; returns its removal. */
export function undoOnInterrupt(what: string, undo: Undo): () => void {
  if (!installed) {
    installed = true;
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(signal, () => void interrupted(signal));
  }
  const entry = { what, undo };
  undos.add(entry);
  return () => {
    undos.delete(entry);
  };
}

/** Runs `body`, then `undo` (what it puts back: `what`), which also runs if the process is interrupted meanwhile. */
export async function undoneAfter<T>(what: string, undo: Undo, body: () => Promise<T>): Promise<T> {
  const forget = undoOnInterrupt(what, undo);
  try {
    return await body();
  } finally {
    forget();
    await undo();
  }
}

/** Stops `child` (SIGTERM) if the process is interrupted before the child exits. */
export function stopOnInterrupt(child: ChildProcess, what: string): void {
  child.once(
    'exit',
    undoOnInterrupt(what, () => void child.kill('SIGTERM')),
  );
}
