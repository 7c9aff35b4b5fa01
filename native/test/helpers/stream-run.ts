/** Runs the stream peer across a test path and collects its samples. */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import type { Sample, Schedule } from '../fixtures/stream-peer.js';
import type { NetPath } from './netpath.js';

const peer = join(import.meta.dirname, '..', 'fixtures', 'stream-peer.js');

export interface StreamRun {
  readonly attached: string;
  readonly reason: string | null;
  readonly samples: readonly Sample[];
  /** The steps after 0 ms, each when the peer applied it (tMs on the samples' clock). */
  readonly applied: readonly { readonly action: string; readonly tMs: number }[];
  readonly stats: Record<string, number | string>;
}

/** `onAccepted` runs when the server accepts the client: the moment its samples' tMs counts from. */
export async function runStream(
  path: NetPath,
  schedule: Omit<Schedule, 'host' | 'port'> & { port?: number },
  onAccepted?: () => void,
): Promise<StreamRun> {
  const full: Schedule = { host: path.serverAddress, port: schedule.port ?? 5201, ...schedule };
  const server = spawn('ip', ['netns', 'exec', path.serverNs, process.execPath, peer, 'server', JSON.stringify(full)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const samples: Sample[] = [];
  const applied: { action: string; tMs: number }[] = [];
  let attached = '';
  let reason: string | null = null;
  let stats: Record<string, number | string> = {};
  let listening: () => void;
  const ready = new Promise<void>((resolve) => (listening = resolve));
  const lines = createInterface({ input: server.stdout! });
  lines.on('line', (line) => {
    const message = JSON.parse(line) as Record<string, unknown>;
    if (message.listening === true) listening();
    else if (message.accepted === true) onAccepted?.();
    else if (typeof message.attached === 'string') {
      attached = message.attached;
      reason = message.reason as string | null;
    } else if (typeof message.applied === 'string')
      applied.push({ action: message.applied, tMs: message.tMs as number });
    else if (message.done === true) stats = message.stats as Record<string, number | string>;
    else samples.push(message as unknown as Sample);
  });
  const exited = new Promise<number | null>((resolve) => server.on('exit', resolve));
  await Promise.race([ready, exited.then((code) => Promise.reject(new Error(`stream server exited early (${code})`)))]);
  const client = spawn(
    'ip',
    ['netns', 'exec', path.clientNs, process.execPath, peer, 'client', full.host, String(full.port)],
    { stdio: ['ignore', 'ignore', 'inherit'] },
  );
  const code = await exited;
  client.kill();
  if (code !== 0) throw new Error(`stream server exited with ${code}`);
  return { attached, reason, samples, applied, stats };
}

/** Goodput (bits/s) from acknowledged bytes between two sample times. */
export function goodputBps(samples: readonly Sample[], fromMs: number, toMs: number): number {
  const first = samples.find((s) => s.tMs >= fromMs);
  const last = [...samples].reverse().find((s) => s.tMs <= toMs);
  if (first === undefined || last === undefined || last.tMs <= first.tMs) return 0;
  return ((last.bytesAcked - first.bytesAcked) * 8 * 1000) / (last.tMs - first.tMs);
}

/**
 * The median of the goodputs (bits/s) of consecutive `windowMs` windows between two sample times.
 * A stall of this VM's host (the delay line forwarding the path is a user-space process) takes
 * bytes from the windows it falls in and never adds them: it moves the mean over the span by its
 * share of it, the median only when it spoils half of the windows.
 */
export function medianGoodputBps(samples: readonly Sample[], fromMs: number, toMs: number, windowMs: number): number {
  const goodputs: number[] = [];
  for (let startMs = fromMs; startMs + windowMs <= toMs; startMs += windowMs)
    goodputs.push(goodputBps(samples, startMs, startMs + windowMs));
  return goodputs.length === 0 ? 0 : median(goodputs);
}

/** The median of `values` (the upper one of an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

export function retransmitsBetween(samples: readonly Sample[], fromMs: number, toMs: number): number {
  const first = samples.find((s) => s.tMs >= fromMs);
  const last = [...samples].reverse().find((s) => s.tMs <= toMs);
  return first === undefined || last === undefined ? 0 : last.totalRetrans - first.totalRetrans;
}
