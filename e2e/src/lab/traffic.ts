/** Runs the traffic peer (traffic-peer.ts) on lab hosts and collects what it reports. */
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { Lab, LabPlace } from './lab.js';

const peer = join(import.meta.dirname, 'traffic-peer.js');

export interface Peer {
  readonly child: ChildProcess;
  /** Resolves with the first reported message matching the predicate. */
  message<T>(predicate: (message: Record<string, unknown>) => boolean): Promise<T>;
  exited: Promise<number | null>;
}

export function startPeer(lab: Lab, host: LabPlace, args: readonly string[]): Peer {
  const child = lab.spawn(host, [process.execPath, peer, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const messages: Record<string, unknown>[] = [];
  const waiters: { predicate: (m: Record<string, unknown>) => boolean; resolve: (m: unknown) => void }[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    messages.push(message);
    for (const waiter of [...waiters]) {
      if (waiter.predicate(message)) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(message);
      }
    }
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return {
    child,
    exited,
    message<T>(predicate: (message: Record<string, unknown>) => boolean): Promise<T> {
      const found = messages.find(predicate);
      if (found !== undefined) return Promise.resolve(found as T);
      return new Promise<T>((resolve, reject) => {
        waiters.push({ predicate, resolve: resolve as (m: unknown) => void });
        void exited.then(() =>
          setTimeout(() => reject(new Error(`traffic peer ${args[0]} exited without the expected report`)), 100),
        );
      });
    },
  };
}

/**
 * One bulk TCP flow origin -> player; the player's goodput over [fromMs, toMs) and per bin from the connection's start
 * (epoch ms).
 */
export async function bulkFlow(
  lab: Lab,
  durationMs: number,
  fromMs: number,
  toMs: number,
  binMs = 250,
  port = 7001,
): Promise<{ windowGoodputBps: number; binsBps: number[]; startedAtEpochMs: number }> {
  const sink = startPeer(lab, 'player', ['tcp-sink', String(port), String(fromMs), String(toMs), String(binMs)]);
  await sink.message((m) => m.listening === true);
  const source = startPeer(lab, 'origin', ['tcp-source', lab.address('player'), String(port), String(durationMs)]);
  const report = await sink.message<{ windowGoodputBps: number; binsBps: number[]; startedAtEpochMs: number }>(
    (m) => 'windowGoodputBps' in m,
  );
  await source.exited;
  return report;
}
