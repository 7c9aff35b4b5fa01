/**
 * Benchmark: the cost per call of the native socket operations a paced response makes, side by
 * side in one run (ratios to the cheapest syscall, socketCookie, absorb machine noise). Writes
 * bench/results/native-calls.md with the machine and date. `npm run bench:native` (root for BPF).
 */
import { once } from 'node:events';
import { createServer, connect, type Socket } from 'node:net';
import { writeResults } from './results-file.js';
import {
  attachClamp,
  setMaxPacingRate,
  socketCookie,
  tcpInfo,
  teardownClamp,
  type AttachedClamp,
} from '@trickle/native';

const iterations = 200_000;
const pinDir = '/run/trickle/bpf-bench';
const cgroup = 'trickle-bench';

function measure(name: string, call: () => void): { name: string; nsPerCall: number } {
  for (let i = 0; i < 10_000; i++) call();
  const startNs = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) call();
  const nsPerCall = Number(process.hrtime.bigint() - startNs) / iterations;
  process.stderr.write(`${name}: ${nsPerCall.toFixed(0)} ns/call\n`);
  return { name, nsPerCall };
}

async function main(): Promise<void> {
  const bpf: AttachedClamp = await attachClamp({ cgroupPath: cgroup, pinDir, join: true });
  const pacing = await attachClamp({ prefer: 'pacing-rate' });
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect((server.address() as { port: number }).port, '127.0.0.1');
  await once(client, 'connect');
  const [socket] = await accepted;

  const results = [
    measure('socketCookie (getsockopt SO_COOKIE)', () => socketCookie(socket)),
    measure('tcpInfo (getsockopt TCP_INFO, 56 fields)', () => tcpInfo(socket)),
    measure('setMaxPacingRate (setsockopt)', () => setMaxPacingRate(socket, 250_000)),
    measure('clamp.setRate, pacing-rate backend', () => pacing.setRate(socket, { rateBytesPerSec: 250_000 })),
    ...(bpf.backend === 'bpf'
      ? [
          measure('clamp.setRate, bpf backend (cookie + map update)', () =>
            bpf.setRate(socket, { rateBytesPerSec: 250_000 }),
          ),
        ]
      : []),
  ];
  client.destroy();
  socket.destroy();
  server.close();
  bpf.close();
  if (bpf.backend === 'bpf') await teardownClamp({ pinDir, cgroup });

  const base = results[0]!.nsPerCall;
  const lines = [
    `Command: \`npm run bench:native\` (${iterations} calls each, after 10,000 warm-up ` +
      `calls, one process, loopback socket)`,
    bpf.backend === 'bpf' ? '' : `BPF backend not measured: ${bpf.fallbackReason}`,
    '',
    '| call | ns per call | ratio to socketCookie |',
    '| --- | ---: | ---: |',
    ...results.map((r) => `| ${r.name} | ${r.nsPerCall.toFixed(0)} | ${(r.nsPerCall / base).toFixed(2)} |`),
    '',
  ];
  await writeResults('native-calls.md', 'Native call costs', lines);
}

await main();
