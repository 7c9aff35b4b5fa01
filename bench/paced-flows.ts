/**
 * Paced-flow cost: N concurrent ~1 Mbit/s flows on loopback, one server at a time, side by side
 * in one run: `trickle serve` under each pacing policy, and Debian nginx with `limit_rate` as the
 * anchor (same file, one worker). The figure is server-process CPU per delivered Gbit/s (CPU
 * seconds from /proc/<pid>/stat over the measurement window, bytes counted by the client).
 * The asset is an ffmpeg-made 0.8 Mbit/s progressive MP4 whose per-block rate x 1.25 is about
 * 1 Mbit/s; every flow is throttled from its first byte (startup 0 s).
 * `npx trickle bench pacing [--flows 500,1000 --seconds 20]` or `npm run bench:paced`; writes bench/results/paced-flows.md.
 *
 * On loopback (MSS 64 kB, RTT ~50 us) trickle's clamp is always under its 10-packet floor, so
 * its writes are throttled at R with the clamp at the floor (Algorithm 1's floor branch): the
 * table measures that path's cost, including the BPF program on every ACK.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { join } from 'node:path';
import { Command } from 'commander';
import { writeResults } from './results-file.js';
import { runIfMain } from './entry.js';
import { cpuSeconds, requireNginx, startNginx } from './nginx-server.js';
import { startTrickleServer } from './trickle-server.js';

const root = join(import.meta.dirname, '..', '..');
const mediaRoot = join(root, '.cache', 'bench-media');
const asset = join(mediaRoot, 'flat');
const file = join(asset, 'progressive.mp4');

function makeMedia(): void {
  if (existsSync(file)) return;
  mkdirSync(asset, { recursive: true });
  process.stderr.write('bench media: 120 s progressive MP4 at 0.8 Mbit/s with ffmpeg (once; cached in .cache/bench-media)\n');
  const result = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-y', '-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-t', '120', '-c:v', 'libx264', '-preset', 'veryfast', '-b:v', '800k', '-maxrate', '800k', '-bufsize', '1600k', '-g', '50', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', file], { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('ffmpeg failed to make the bench media');
}

interface Measured {
  readonly cpuPercent: number;
  readonly deliveredBps: number;
  readonly perFlowBps: number;
  readonly failedFlows: number;
}

/** Opens `flows` downloads at once, lets them settle for 3 s, measures for `seconds`, then aborts them. */
async function measure(url: string, pid: number, flows: number, seconds: number): Promise<Measured> {
  const agent = new Agent({ keepAlive: false, maxSockets: Infinity });
  let bytes = 0;
  let failedFlows = 0;
  let counting = false;
  const requests = Array.from({ length: flows }, () => {
    const req = request(url, { agent }, (res) => {
      if (res.statusCode !== 200) failedFlows++;
      res.on('data', (chunk: Buffer) => {
        if (counting) bytes += chunk.length;
      });
      res.on('error', () => undefined);
    });
    req.on('error', () => undefined);
    req.end();
    return req;
  });
  await new Promise((resolve) => setTimeout(resolve, 3000));
  counting = true;
  const cpuStart = cpuSeconds(pid);
  const startMs = performance.now();
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  const cpu = cpuSeconds(pid) - cpuStart;
  const elapsedSec = (performance.now() - startMs) / 1000;
  counting = false;
  for (const req of requests) req.destroy();
  agent.destroy();
  const deliveredBps = (bytes * 8) / elapsedSec;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  return { cpuPercent: (cpu / elapsedSec) * 100, deliveredBps, perFlowBps: deliveredBps / flows, failedFlows };
}

async function withTrickle<T>(policy: string, run: (url: string, pid: number) => Promise<T>): Promise<T> {
  const server = await startTrickleServer(['--media', mediaRoot, '--policy', policy, '--startup-seconds', '0']);
  try {
    const health = (await (await fetch(`${server.url}/healthz`)).json()) as { delivery?: { clamp?: { backend?: string } } };
    if (policy === 'trickle' && health.delivery?.clamp?.backend !== 'bpf') process.stderr.write(`warning: trickle runs with the ${health.delivery?.clamp?.backend} clamp backend (not root?)\n`);
    return await run(`${server.url}/media/flat/progressive.mp4`, server.child.pid!);
  } finally {
    await server.stop();
  }
}

async function withNginx<T>(run: (url: string, pid: number) => Promise<T>): Promise<T> {
  const nginx = await startNginx('paced', {
    httpDirectives: ['sendfile on;', 'tcp_nopush on;'],
    serverDirectives: [`root ${mediaRoot};`, 'location / { limit_rate 125000; }'],
    readyPath: '/flat/progressive.mp4',
  });
  try {
    return await run(`${nginx.url}/flat/progressive.mp4`, nginx.pid);
  } finally {
    await nginx.stop();
  }
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench pacing')
    .option('--flows <list>', 'concurrent flows per run, comma-separated', '500,1000')
    .option('--seconds <n>', 'measurement window per run', '20')
    .option('--policies <list>', 'trickle policies to run', 'app-pacing,app-pacing-16k,trickle,pacing')
    .parse(['node', 'bench', ...argv])
    .opts<{ flows: string; seconds: string; policies: string }>();
  const flowCounts = options.flows.split(',').map(Number);
  const seconds = Number(options.seconds);
  const policies = options.policies.split(',');
  requireNginx();
  makeMedia();
  const rows: string[] = [];
  const servers = [...policies.map((policy) => ({ name: `trickle ${policy}`, run: <T>(f: (url: string, pid: number) => Promise<T>) => withTrickle(policy, f) })), { name: 'nginx limit_rate 1 Mbit/s', run: <T>(f: (url: string, pid: number) => Promise<T>) => withNginx(f) }];
  const total = flowCounts.length * servers.length;
  let done = 0;
  for (const flows of flowCounts) {
    const results: { name: string; measured: Measured }[] = [];
    for (const server of servers) {
      process.stderr.write(`[${++done}/${total}] ${server.name}, ${flows} flows, ${seconds} s ...\n`);
      const measured = await server.run((url, pid) => measure(url, pid, flows, seconds));
      process.stderr.write(`  CPU ${measured.cpuPercent.toFixed(1)} %, delivered ${(measured.deliveredBps / 1e6).toFixed(1)} Mbit/s (${(measured.perFlowBps / 1e6).toFixed(3)} per flow)\n`);
      results.push({ name: server.name, measured });
    }
    const anchor = results.find((r) => r.name.startsWith('nginx'))!.measured;
    const anchorCost = anchor.cpuPercent / (anchor.deliveredBps / 1e9);
    for (const { name, measured } of results) {
      const cost = measured.cpuPercent / (measured.deliveredBps / 1e9);
      rows.push(`| ${flows} | ${name} | ${(measured.deliveredBps / 1e6).toFixed(1)} | ${(measured.perFlowBps / 1e6).toFixed(3)} | ${measured.cpuPercent.toFixed(1)} % | ${cost.toFixed(1)} | ${(cost / anchorCost).toFixed(2)} | ${measured.failedFlows} |`);
    }
  }
  await writeResults('paced-flows.md', 'Paced flows: server CPU per delivered Gbit/s', [
    `Command: \`npm run bench:paced -- --flows ${options.flows} --seconds ${seconds}\`. Loopback, one server process at a time (trickle serve: one Node process; nginx 1 worker, master_process off), the client in this process; flows opened at once, 3 s to settle, then ${seconds} s measured. Media: ffmpeg 0.8 Mbit/s progressive MP4, startup 0 s, so app-pacing and pacing aim at 1.25 x 0.8 = 1 Mbit/s per flow and trickle at R = 0.8 (below); nginx \`limit_rate 125k\`. Cost = server CPU % / delivered Gbit/s; "x nginx" is that cost over nginx's in the same run. Compass: trickle at or below nginx, app-pacing within 2x.`,
    '',
    'On loopback trickle\'s clamp is below its 10-packet floor (MSS 64 kB, RTT ~50 us), so trickle runs Algorithm 1\'s floor branch: clamp at 10 packets and writes throttled at R.',
    '',
    '| flows | server | delivered Mbit/s | per flow Mbit/s | server CPU | CPU % per Gbit/s | x nginx | failed flows |',
    '| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ]);
}

await runIfMain(import.meta.url, main);
