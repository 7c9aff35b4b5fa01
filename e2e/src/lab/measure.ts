/**
 * Measurements on a running lab: a packet capture of the origin -> player data direction at the
 * router (tcpdump on the router's origin-side interface, i.e. packets as the origin sent them),
 * and an interactive latency probe (ping every interval) through the same bottleneck. The
 * analysis of what they record is pure (analysis/).
 */
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { E2eError } from '../errors.js';
import { analyzeFlows, type FlowAnalysis } from './analysis/flows.js';
import { parsePcap, type TcpPacket } from './analysis/pcap.js';
import type { Lab, LabHost } from './lab.js';

export interface Capture {
  readonly file: string;
  /** Stops tcpdump (flushing the file) and reads the packets. */
  stop(): Promise<{ packets: TcpPacket[]; flows: FlowAnalysis[] }>;
}

export async function startCapture(
  lab: Lab,
  file: string,
  options: { snaplenBytes?: number; filter?: string } = {},
): Promise<Capture> {
  const child = lab.spawn(
    'router',
    [
      'tcpdump',
      '-i',
      lab.state.ports.originSide,
      '-n',
      '-U',
      '-s',
      String(options.snaplenBytes ?? 128),
      '-w',
      file,
      options.filter ?? 'tcp',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // tcpdump says "listening on ..." once the capture is armed.
  for (let i = 0; i < 100 && !stderr.includes('listening on'); i++) {
    if (child.exitCode !== null)
      throw new E2eError(
        'E2E_ERR_CAPTURE',
        `tcpdump failed: ${stderr.trim() || 'is tcpdump installed? (apt-get install tcpdump)'}`,
      );
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return {
    file,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        await once(child, 'exit');
      }
      const packets = parsePcap(await readFile(file));
      return { packets, flows: analyzeFlows(packets) };
    },
  };
}

export interface ProbeSample {
  /** When the reply arrived (ping -D), ms since the epoch. */
  readonly atEpochMs: number;
  readonly rttMs: number;
}

export interface Probe {
  /** Every reply so far, with its time (to tell which phase of the traffic it fell in). */
  readonly samples: readonly ProbeSample[];
  stop(): Promise<number[]>;
}

/** Pings the origin from `from` every `intervalMs`; stop() returns the RTTs in ms. */
export function startProbe(lab: Lab, options: { from?: LabHost; intervalMs?: number } = {}): Probe {
  const from = options.from ?? (lab.state.cross ? 'cross' : 'player');
  const intervalSec = ((options.intervalMs ?? 100) / 1000).toFixed(3);
  const child = lab.spawn(from, ['ping', '-D', '-n', '-i', intervalSec, lab.address('origin')], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const samples: ProbeSample[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const match = /^\[(\d+\.\d+)\].*time=([\d.]+) ms/.exec(line);
    if (match !== null) samples.push({ atEpochMs: Number(match[1]) * 1000, rttMs: Number(match[2]) });
  });
  return {
    samples,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        await once(child, 'exit');
      }
      return samples.map((s) => s.rttMs);
    },
  };
}
