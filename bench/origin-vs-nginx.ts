/**
 * Serving speed, the origin against Debian nginx on the same media, side by side in one run:
 * wrk (Debian) on loopback for a manifest (small, dynamic for the origin: the MPD is rendered from
 * the index), 2 s segments of the top rung (~700 kB) and random 64 kB ranges of the progressive MP4.
 * Both servers are one process (nginx: master_process off, one worker, sendfile on, tcp_nopush
 * off; the origin: `trickle serve --policy bulk`, which serves from its memory cache); the client
 * is wrk with 2 threads and 64 connections. node:http alone on the same bytes (node-http-anchor.ts)
 * runs beside them: the ceiling of any Node origin on the machine. Figures: requests/s, Gbit/s, p99 latency, server
 * CPU per request, and the origin / nginx ratio against the goals (manifests >= 0.5x, segments >= 1.0x, ranges >=
 * 0.5x), as means over interleaved rounds with 95 % intervals.
 * `npx trickle bench origin [--seconds 10] [--connections 64] [--rounds 3]` or `npm run bench:origin`;
 * writes bench/results/origin-vs-nginx.md. Needs media/demo and `apt-get install nginx wrk`.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, linkSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { BenchError } from './errors.js';
import { numberOption } from './options.js';
import { runIfMain } from './entry.js';
import { formatEstimate, mean, meanInterval, processCpuSeconds, examples } from '@trickle/e2e';
import { requireNginx, startNginx } from './nginx-server.js';
import { writeResults } from './results-file.js';
import { awaitReady, loopback, spawnAt, startTrickleServer } from './trickle-server.js';

const root = join(import.meta.dirname, '..', '..');

interface Workload {
  readonly name: string;
  readonly path: string;
  /** nginx's path when it differs (the plain-file workload asks nginx for the same bytes as the MP4). */
  readonly nginxPath?: string;
  /**
   * The origin instance that serves it: with its defaults, with the MP4 in its memory cache, or
   * with the MP4's bytes under a name that is not media (served without the delivery engine).
   */
  readonly origin: 'defaults' | 'cached' | 'plain';
  /** wrk Lua script (random ranges), if any. */
  readonly script?: string;
  readonly goalRatio: number;
}

interface WrkResult {
  readonly requestsPerSec: number;
  readonly bitsPerSec: number;
  readonly p99Ms: number;
  readonly non2xx: number;
  readonly cpuPercent: number;
}

function parseWrkDuration(text: string): number {
  const match = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  if (match === null) return Number.NaN;
  return Number(match[1]) * { us: 0.001, ms: 1, s: 1000, m: 60_000 }[match[2] as 'us' | 'ms' | 's' | 'm'];
}

function parseWrkBytes(text: string): number {
  const match = /^([\d.]+)([KMGT]?B)$/.exec(text.trim());
  if (match === null) return Number.NaN;
  return (
    Number(match[1]) *
    { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 }[match[2] as 'B' | 'KB' | 'MB' | 'GB' | 'TB']
  );
}

/** Runs wrk against `url` while measuring the server process's CPU. */
function runWrk(
  url: string,
  pid: number,
  options: { seconds: number; connections: number; script?: string | undefined },
): WrkResult {
  const args = [
    '-t2',
    `-c${options.connections}`,
    `-d${options.seconds}s`,
    '--latency',
    ...(options.script === undefined ? [] : ['-s', options.script]),
    url,
  ];
  const cpuStart = processCpuSeconds(pid);
  const startMs = performance.now();
  const result = spawnSync('wrk', args, { encoding: 'utf8' });
  const elapsedSec = (performance.now() - startMs) / 1000;
  const cpu = processCpuSeconds(pid) - cpuStart;
  if (result.status !== 0) throw new Error(`wrk failed: ${result.stderr || result.error?.message}`);
  const out = result.stdout;
  const requestsPerSec = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const transfer = parseWrkBytes(/Transfer\/sec:\s+(\S+)/.exec(out)?.[1] ?? '');
  const p99Ms = parseWrkDuration(/^\s+99%\s+(\S+)$/m.exec(out)?.[1] ?? '');
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  return { requestsPerSec, bitsPerSec: transfer * 8, p99Ms, non2xx, cpuPercent: (cpu / elapsedSec) * 100 };
}

/** A wrk script asking for a random 64 kB range of a file of `sizeBytes` each request. */
function rangeScript(sizeBytes: number): string {
  const dir = join(root, '.cache', 'bench-wrk');
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'ranges.lua');
  writeFileSync(
    path,
    [
      'math.randomseed(1)',
      'request = function()',
      `  local start = math.random(0, ${sizeBytes - 65536})`,
      '  wrk.headers["Range"] = "bytes=" .. start .. "-" .. (start + 65535)',
      '  return wrk.format(nil)',
      'end',
      '',
    ].join('\n'),
  );
  return path;
}

/**
 * A media root whose one asset holds the demo MP4 twice (hard links, so no copy): as the asset's
 * progressive.mp4 and as plain.bin, a name the origin serves as a plain file (no policy, no flow
 * record). Ranges of plain.bin measure what the delivery engine costs per response.
 */
function plainFileMedia(progressivePath: string): string {
  const mediaRoot = join(root, '.cache', 'bench-plain');
  const asset = join(mediaRoot, 'plain');
  rmSync(mediaRoot, { recursive: true, force: true });
  mkdirSync(asset, { recursive: true });
  for (const name of ['progressive.mp4', 'plain.bin']) {
    try {
      linkSync(progressivePath, join(asset, name));
    } catch {
      copyFileSync(progressivePath, join(asset, name));
    }
  }
  return mediaRoot;
}

/** One workload's measured runs per server, one per round. */
interface WorkloadRuns {
  readonly workload: Workload;
  readonly origin: WrkResult[];
  readonly nginx: WrkResult[];
  readonly node: WrkResult[];
}

/** a / b in requests per second, round by round, as a mean with its interval over the rounds. */
function ratiosOver(a: readonly WrkResult[], b: readonly WrkResult[]) {
  return meanInterval(a.map((run, round) => run.requestsPerSec / b[round]!.requestsPerSec));
}

/** Server CPU per response (µs) from a run's CPU share and request rate. */
const cpuMicrosPerRequest = (result: WrkResult): number => (result.cpuPercent / 100 / result.requestsPerSec) * 1e6;

/** What the delivery engine costs a 64 kB range, from the cached-MP4 and plain-file rows of this run. */
function engineCostNote(results: readonly WorkloadRuns[]): string[] {
  const media = results.find((r) => r.workload.origin === 'cached');
  const plain = results.find((r) => r.workload.origin === 'plain');
  if (media === undefined || plain === undefined) return [];
  const micros = (runs: readonly WrkResult[]) => mean(runs.map(cpuMicrosPerRequest));
  const rate = (runs: readonly WrkResult[]) => mean(runs.map((r) => r.requestsPerSec));
  const mediaMicros = micros(media.origin);
  const plainMicros = micros(plain.origin);
  const nginxMicros = micros(plain.nginx);
  return [
    '## What stands in the way of the range goal',
    '',
    `Server CPU per 64 kB range in this run (means over its rounds): the origin as a media ` +
      `response ${mediaMicros.toFixed(0)} µs, the same bytes as a plain ` +
      `file ${plainMicros.toFixed(0)} µs, nginx ${nginxMicros.toFixed(0)} µs. ` +
      `So the delivery engine costs about ${(mediaMicros - plainMicros).toFixed(0)} µs ` +
      `per response: choosing the policy and its media plan, the TCP_INFO reading that ` +
      `closes the response once its last byte is acknowledged (with a timer poll while it ` +
      `is not), the flow record and its Prometheus histograms. ` +
      'Every media response gets that record (the per-flow figures of the paper: ' +
      'retransmissions, srtt, goodput), so the cost is per request, not per byte: it ' +
      'weighs most on small responses (compare the segments rows above). ' +
      `Without the engine the origin ` +
      `reaches ${(rate(plain.origin) / rate(plain.nginx)).toFixed(2)}x ` +
      `nginx; the rest of the gap is the copy of each range from Node's memory into the ` +
      `socket (nginx hands the page cache to the socket with sendfile) and Node's HTTP ` +
      `layer: node:http alone, with no framework at all, ` +
      `reaches ${(rate(plain.node) / rate(plain.nginx)).toFixed(2)}x ` +
      `nginx on this machine (${micros(plain.node).toFixed(0)} µs of CPU per ` +
      `range), the ceiling of any Node origin here.`,
    '',
  ];
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench origin')
    .option('--seconds <n>', 'wrk duration per workload and server', '10')
    .option('--connections <n>', 'wrk connections', '64')
    .option('--rounds <n>', 'interleaved rounds of every workload and server (the intervals are over rounds)', '3')
    .option('--media <dir>', 'media directory with the demo asset', 'media')
    .addHelpText(
      'after',
      examples('npx trickle bench origin', 'npx trickle bench origin --seconds 20 --connections 128 --rounds 5'),
    )
    .parse(['node', 'bench', ...argv])
    .opts<{ seconds: string; connections: string; media: string; rounds: string }>();
  const seconds = numberOption('--seconds', options.seconds, 'positive');
  const connections = numberOption('--connections', options.connections, 'positive-integer');
  const rounds = numberOption('--rounds', options.rounds, 'positive-integer');
  const media = resolve(options.media);
  const asset = join(media, 'demo');
  if (spawnSync('wrk', ['--version']).error !== undefined)
    throw new BenchError(
      'BENCH_ERR_MISSING_TOOL',
      'wrk not found: `./scripts/setup --bench` (or `apt-get install wrk`)',
    );
  requireNginx();
  if (!existsSync(join(asset, 'manifest.mpd')))
    throw new BenchError('BENCH_ERR_MEDIA', `no demo asset in ${media}: run \`npx trickle media demo\` first`);
  const progressiveSize = statSync(join(asset, 'progressive.mp4')).size;
  const workloads: Workload[] = [
    { name: 'manifest (MPD)', path: '/media/demo/manifest.mpd', origin: 'defaults', goalRatio: 0.5 },
    {
      name: `segment (${Math.round(statSync(join(asset, 'chunk-3-00010.m4s')).size / 1000)} kB)`,
      path: '/media/demo/chunk-3-00010.m4s',
      origin: 'defaults',
      goalRatio: 1.0,
    },
    {
      name:
        `64 kB range of the ${Math.round(progressiveSize / 1e6)} MB MP4 (above ` +
        `cache.maxFileBytes: cached in 1 MiB chunks)`,
      path: '/media/demo/progressive.mp4',
      origin: 'defaults',
      script: rangeScript(progressiveSize),
      goalRatio: 0.5,
    },
    {
      name: '64 kB range of the MP4, the origin caching it (cache.maxFileBytes 64 MB)',
      path: '/media/demo/progressive.mp4',
      origin: 'cached',
      script: rangeScript(progressiveSize),
      goalRatio: 0.5,
    },
    {
      name: '64 kB range of the same bytes as a plain file (no delivery engine: no policy, no flow record)',
      path: '/media/plain/plain.bin',
      nginxPath: '/media/demo/progressive.mp4',
      origin: 'plain',
      script: rangeScript(progressiveSize),
      goalRatio: 0.5,
    },
  ];
  const results: WorkloadRuns[] = workloads.map((workload) => ({ workload, origin: [], nginx: [], node: [] }));
  const origin = await startTrickleServer(['--media', media, '--policy', 'bulk']);
  const cachingOrigin = await startTrickleServer(['--media', media, '--policy', 'bulk'], {
    TRICKLE_CACHE__MAX_FILE_BYTES: String(64 * 1024 * 1024),
  });
  const plainOrigin = await startTrickleServer([
    '--media',
    plainFileMedia(join(asset, 'progressive.mp4')),
    '--policy',
    'bulk',
  ]);
  const anchor = await spawnAt(loopback, [
    process.execPath,
    join(import.meta.dirname, 'node-http-anchor.js'),
    media,
    '{port}',
  ]);
  const nodeUrl = `http://127.0.0.1:${anchor.port}`;
  const node = {
    url: nodeUrl,
    pid: anchor.child.pid!,
    stop: await awaitReady(anchor.child, `${nodeUrl}/media/demo/manifest.mpd`, 'SIGTERM'),
  };
  const nginx = await startNginx('serving', {
    httpDirectives: [
      'sendfile on;',
      'tcp_nopush off;',
      'types { application/dash+xml mpd; video/iso.segment m4s; video/mp4 mp4; }',
    ],
    serverDirectives: [`location /media/ { alias ${media}/; }`],
    readyPath: '/media/demo/manifest.mpd',
  });
  try {
    let step = 0;
    // Rounds interleave every workload and server, the servers' order turned each round, so a
    // machine that slows down for a while weighs on all of them, and the intervals are over rounds.
    for (let round = 0; round < rounds; round++) {
      for (const runs of results) {
        const { workload } = runs;
        const ours = { defaults: origin, cached: cachingOrigin, plain: plainOrigin }[workload.origin];
        const servers = [
          ['origin', { url: ours.url, pid: ours.child.pid! }, workload.path],
          ['nginx', nginx, workload.nginxPath ?? workload.path],
          ['node', node, workload.nginxPath ?? workload.path],
        ] as const;
        for (let k = 0; k < servers.length; k++) {
          const [name, server, path] = servers[(k + round) % servers.length]!;
          process.stderr.write(
            `[${++step}/${workloads.length * 3 * rounds}] round ${round + 1}, ` +
              `${name === 'node' ? 'node:http' : name}: ${workload.name}, ${seconds} s, ${connections} connections ...\n`,
          );
          // A short warm-up fills caches and JIT before the measured run.
          runWrk(`${server.url}${path}`, server.pid, { seconds: 2, connections, script: workload.script });
          const m = runWrk(`${server.url}${path}`, server.pid, { seconds, connections, script: workload.script });
          runs[name].push(m);
          process.stderr.write(
            `  ${m.requestsPerSec.toFixed(0)} req/s, ${(m.bitsPerSec / 1e9).toFixed(2)} Gbit/s, ` +
              `p99 ${m.p99Ms.toFixed(2)} ms, CPU ${m.cpuPercent.toFixed(0)} ` +
              `%${m.non2xx > 0 ? `, ${m.non2xx} non-2xx` : ''}\n`,
          );
        }
      }
    }
  } finally {
    await origin.stop();
    await cachingOrigin.stop();
    await plainOrigin.stop();
    await nginx.stop();
    await node.stop();
  }
  const rows = results.map((runs) => {
    const { workload } = runs;
    const meanOf = (list: readonly WrkResult[], pick: (r: WrkResult) => number) => mean(list.map(pick));
    const toNginx = ratiosOver(runs.origin, runs.nginx);
    const toNode = ratiosOver(runs.origin, runs.node);
    const met =
      toNginx.n < 3
        ? 'too few rounds'
        : toNginx.low >= workload.goalRatio
          ? 'yes'
          : toNginx.high < workload.goalRatio
            ? 'no'
            : 'unclear (the interval holds the goal)';
    return (
      `| ${workload.name} | ${meanOf(runs.origin, (r) => r.requestsPerSec).toFixed(0)} ` +
      `| ${meanOf(runs.nginx, (r) => r.requestsPerSec).toFixed(0)} ` +
      `| ${meanOf(runs.node, (r) => r.requestsPerSec).toFixed(0)} ` +
      `| ${(meanOf(runs.origin, (r) => r.bitsPerSec) / 1e9).toFixed(2)} ` +
      `| ${(meanOf(runs.nginx, (r) => r.bitsPerSec) / 1e9).toFixed(2)} ` +
      `| ${meanOf(runs.origin, (r) => r.p99Ms).toFixed(2)} | ${meanOf(runs.nginx, (r) => r.p99Ms).toFixed(2)} ` +
      `| ${formatEstimate(meanInterval(runs.origin.map(cpuMicrosPerRequest)), 0)} ` +
      `| ${formatEstimate(meanInterval(runs.nginx.map(cpuMicrosPerRequest)), 0)} ` +
      `| ${formatEstimate(meanInterval(runs.node.map(cpuMicrosPerRequest)), 0)} ` +
      `| ${formatEstimate(toNginx)} | ${formatEstimate(ratiosOver(runs.node, runs.nginx))} ` +
      `| ${formatEstimate(toNode)} | >= ${workload.goalRatio.toFixed(1)} | ${met} |`
    );
  });
  await writeResults('origin-vs-nginx.md', 'Serving speed: the origin against nginx', [
    `Command: \`npx trickle bench origin --seconds ${seconds} ` +
      `--connections ${connections}\`. Loopback; wrk -t2 -c${connections} (Debian wrk ` +
      `4.1), ${seconds} s per workload and server after a 2 s warm-up, servers side by ` +
      `side in one run of ${rounds} interleaved round(s) (every workload on every server each round, the ` +
      `servers' order turned each round); figures are means over rounds, with 95 % Student-t intervals ` +
      `over the rounds where there are brackets (a ratio: of each round's pair). Origin: \`trickle serve --policy bulk\` (one Node process, files ` +
      `from its memory cache); nginx: one process (master_process off), sendfile on, ` +
      `tcp_nopush off, access log off. The media is media/demo; the range workloads ask ` +
      `for a random 64 kB range of progressive.mp4 each request: from an origin with its ` +
      `defaults (files above cache.maxFileBytes, 16 MB, are cached in 1 MiB chunks within ` +
      `cache.maxBytes, so a range is a view of a cached chunk after its first read), from ` +
      `one that caches the whole MP4, and, to show what the delivery engine costs per ` +
      `response, from one that has the same bytes under a name that is not media ` +
      `(plain.bin: served without a policy or a flow record; nginx serves the MP4 for that ` +
      `row). CPU is the server process's, over the measured run (wrk shares the machine's ` +
      `2 cores); CPU per request is that share over the request rate. node:http is the ceiling of any Node origin here: node:http alone serving ` +
      `the same bytes from memory, no framework, no policy, no record ` +
      `(bench/node-http-anchor.ts; for the plain-file row, the MP4).`,
    '',
    '| workload | origin req/s | nginx req/s | node:http req/s | origin Gbit/s | nginx ' +
      'Gbit/s | origin p99 ms | nginx p99 ms | origin CPU µs / request | nginx CPU µs / request | ' +
      'node:http CPU µs / request | origin / nginx | node:http / nginx | origin / node:http | ' +
      'goal (origin / nginx) | met |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |',
    ...rows,
    '',
    ...engineCostNote(results),
  ]);
}

await runIfMain(import.meta.url, main);
