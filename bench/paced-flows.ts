/**
 * Paced-flow cost, side by side in one run: `trickle serve` under each pacing policy and Debian
 * nginx with `limit_rate` as the anchor (same files, one worker), in two regimes:
 * - `lab` (where viewers are): the server in the lab's origin namespace, the clients in its player
 *   namespace, veth (MTU 1500, MSS 1448) through the lab's router with the delay line (100 ms RTT
 *   by default: at 40 ms every 1-3 Mbit/s flow would sit at Trickle's 10-packet floor, which is
 *   10 x 1448 B per 40 ms = 2.9 Mbit/s), flows spread over three ffmpeg-made assets of 0.8, 1.6 and
 *   2.4 Mbit/s, so the clamp sits above the floor for two thirds of them and at it for the rest.
 * - `loopback`: MSS 64 kB, RTT ~50 us, one 0.8 Mbit/s asset: every trickle flow is at its floor.
 * - `viewers`: an edge's load from one origin process: 10,000 flows of a 0.1 Mbit/s asset on a loopback
 *   address routed with MTU 1500 (ethernet-loopback.ts: MSS 1448, as on viewers' paths; at loopback's 64 kB
 *   the kernel paces so few segments that a flow's rate is a count of them) (a lowest rung: ~1.25 Gbit/s in
 *   all, which leaves the 2 cores room), trickle and pacing in the kernel
 *   against nginx; then 50,000 idle keep-alive connections held by the origin and by nginx.
 * The figure is the server process's CPU per delivered Gbit/s (CPU seconds from /proc/<pid>/stat
 * over the measurement window, bytes counted by the client); the sock_ops program's own run time
 * (kernel.bpf_stats_enabled) under trickle and pacing, whose phases run in it, is shown beside it
 * and counted in their cost, and the delay line's CPU beside the lab's rows (it forwards every
 * frame, and the endpoints' TCP receive work runs in its sends: where it nears a core, the path
 * sets the pace). Every flow's rate is compared with the rate its policy aims at over the bytes
 * it got in the window (per VBR block, from the media: accuracy).
 * Beside the CPU: each server's resident memory per flow (its growth from before the flows opened to the
 * window's end) and, for trickle's servers, the sock_ops map's entries once every flow has closed.
 * `npx trickle bench pacing [--regimes lab,loopback,viewers --flows 100 --loopback-flows 500 --viewers 10000
 * --seconds 20 --warmup 60]` or `npm run bench:paced`; writes bench/results/paced-flows.md.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import {
  bootstrapComparison,
  labDown,
  labUp,
  processCpuSeconds,
  symmetricLink,
  type Lab,
  examples,
} from '@trickle/e2e';
import { quantileSorted } from '@trickle/player-sim';
import { ByteTimeMap, readProgressiveLayout, resolveConfig, vbrBlocksOf, type VbrBlocks } from '@trickle/origin';
import { BenchError } from './errors.js';
import { numberOption } from './options.js';
import { stopOnInterrupt, undoneAfter } from './interrupt.js';
import { burstGapMs, periodRegularity, sizeRegularity } from './burst-span.js';
import type { FlowClientPlan, FlowClientResult } from './flow-client.js';
import type { IdleClientPlan, IdleClientResult } from './idle-client.js';
import { resultsFileName, writeResults } from './results-file.js';
import { runIfMain } from './entry.js';
import { machineBusySeconds, requireNginx, startNginx } from './nginx-server.js';
import { listenOverflows } from './kernel-counters.js';
import { metricTotal } from './prometheus-text.js';
import { ethernetLoopbackAddress, ethernetLoopbackMssBytes, withEthernetLoopback } from './ethernet-loopback.js';
import { loopback, readAt, startTrickleServer, type ServerPlace } from './trickle-server.js';

const root = join(import.meta.dirname, '..', '..');
const mediaRoot = join(root, '.cache', 'bench-media');
const mediaSeconds = 120;
const flowClient = join(import.meta.dirname, 'flow-client.js');
const idleClient = join(import.meta.dirname, 'idle-client.js');

interface Asset {
  readonly name: string;
  readonly encodeBps: number;
}

const loopbackAssets: readonly Asset[] = [{ name: 'flat', encodeBps: 800e3 }];
const labAssets: readonly Asset[] = [
  { name: 'flat', encodeBps: 800e3 },
  { name: 'flat16', encodeBps: 1600e3 },
  { name: 'flat24', encodeBps: 2400e3 },
];
/** A lowest rung: 10,000 flows of it are ~1.25 Gbit/s, which one origin on 2 cores can pace without saturating. */
const viewersAssets: readonly Asset[] = [{ name: 'low', encodeBps: 100e3 }];
/**
 * The files a process of the viewers regime may open: the hard limit (raised to what 50,000 idle connections need
 * where this process may raise it: root with CAP_SYS_RESOURCE), and why it is no higher.
 */
function viewersFileLimit(wantedFiles: number): { files: number; reason: string | undefined } {
  const hardLimit = () => {
    const line = /Max open files\s+\S+\s+(\S+)/.exec(readFileSync('/proc/self/limits', 'utf8'));
    return line?.[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(line?.[1] ?? 1024);
  };
  const hard = hardLimit();
  if (hard >= wantedFiles) return { files: Math.min(hard, 1 << 20), reason: undefined };
  const raised = spawnSync('prlimit', [`--nofile=${wantedFiles}:${wantedFiles}`, 'true']).status === 0;
  if (raised) return { files: wantedFiles, reason: undefined };
  return {
    files: hard,
    reason:
      `this machine lets a process open at most ${hard} files (hard limit; raising it needs ` +
      'CAP_SYS_RESOURCE, which this root lacks)',
  };
}
/** Descriptors a server keeps beside its connections (listeners, files, the BPF maps, stdio). */
const serverSpareFiles = 512;

const assetFile = (asset: Asset) => join(mediaRoot, asset.name, 'progressive.mp4');

function makeMedia(asset: Asset): void {
  const file = assetFile(asset);
  if (existsSync(file)) return;
  mkdirSync(join(mediaRoot, asset.name), { recursive: true });
  const rate = `${asset.encodeBps / 1000}k`;
  process.stderr.write(
    `bench media: ${mediaSeconds} s progressive MP4 at ${asset.encodeBps / 1e6} Mbit/s ` +
      `with ffmpeg (once; cached in .cache/bench-media)\n`,
  );
  const result = spawnSync(
    'ffmpeg',
    [
      '-hide_banner',
      '-loglevel',
      'error',
      '-y',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=size=640x360:rate=25',
      '-t',
      String(mediaSeconds),
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-b:v',
      rate,
      '-maxrate',
      rate,
      '-bufsize',
      `${(2 * asset.encodeBps) / 1000}k`,
      '-g',
      '50',
      '-pix_fmt',
      'yuv420p',
      '-movflags',
      '+faststart',
      file,
    ],
    { stdio: 'inherit' },
  );
  if (result.status !== 0)
    throw new BenchError('BENCH_ERR_MISSING_TOOL', 'ffmpeg failed to make the bench media: `apt-get install ffmpeg`');
}

/** The file's mean rate: what R averages to over the file. */
const meanRateBytesPerSec = (asset: Asset) => statSync(assetFile(asset)).size / mediaSeconds;

/** The origin's defaults: the VBR block length and each policy's gain, as `trickle serve` runs them here. */
const originDefaults = resolveConfig([]).delivery;

/** The file's VBR blocks as the origin cuts them (R per block: its bytes over the media seconds they carry). */
async function blocksOf(asset: Asset): Promise<VbrBlocks> {
  const layout = await readProgressiveLayout(assetFile(asset));
  return vbrBlocksOf(new ByteTimeMap(layout), originDefaults.rateWindowSec, layout.fileSizeBytes);
}

/**
 * The seconds a policy that sends each VBR block at gain x its own R gives the file's bytes
 * [fromByte, toByte): a block's share is its bytes over gain x R (a block that carries no media
 * time, none in these files, at the file's mean rate).
 */
export function pacedSeconds(
  blocks: VbrBlocks,
  fromByte: number,
  toByte: number,
  gainOf: (rateBytesPerSec: number) => number,
): number {
  const meanRate = blocks.fileSizeBytes / Math.max(1e-9, blocks.startSec[blocks.count]!);
  let seconds = 0;
  for (let k = blocks.blockAt(fromByte); k < blocks.count && blocks.startBytes[k]! < toByte; k++) {
    const bytes = Math.min(toByte, blocks.startBytes[k + 1]!) - Math.max(fromByte, blocks.startBytes[k]!);
    const rate = blocks.rateOf(k) ?? meanRate;
    seconds += bytes / (gainOf(rate) * rate);
  }
  return seconds;
}

/**
 * Seconds every flow runs before the window, by regime: past V8's heap-shrinking collections of a
 * new origin's first ~35 s, and, with 10,000 viewers, past the major collection of the heap their
 * responses hold (30-43 s after they open, ~2 s of CPU: inside a window at 40 s in some runs).
 */
const defaultWarmupSec = { lab: 40, loopback: 40, viewers: 60 } as const;

interface Regime {
  readonly name: 'lab' | 'loopback' | 'viewers';
  readonly flows: number;
  readonly assets: readonly Asset[];
  readonly place: ServerPlace;
  readonly clientWrap: readonly string[];
  /** Flow clients the flows are split over (processes). */
  readonly clientProcesses: number;
  readonly rttMs: number;
  readonly mssBytes: number;
  /** Each asset's VBR blocks, by name (the paced policies' aims). */
  readonly blocks: ReadonlyMap<string, VbrBlocks>;
  /** The delay line's pid (lab): its CPU is read beside the server's. */
  readonly pathPid?: number;
  /** Connections a server must hold at once (nginx's worker_connections); nginx's default when absent. */
  readonly maxConnections?: number;
}

interface Measured {
  readonly cpuPercent: number;
  readonly bpfPercent: number | undefined;
  readonly deliveredBps: number;
  /** Each flow's rate over its aim (1 = on target). */
  readonly ratios: readonly number[];
  /** The flows judged over whole bursts: each one's mean burst (bytes) and the seconds from one burst to the next. */
  readonly burstBytes: readonly number[];
  readonly burstPeriodsSec: readonly number[];
  readonly failedFlows: number;
  /** Why flows failed, with how many. */
  readonly failures: Record<string, number>;
  /** The delay line's CPU over the window, % of a core (lab only): near 100 it, not the servers, sets the pace. */
  readonly pathCpuPercent: number | undefined;
  /** The whole machine's busy CPU over the window, % of a core (server, client, delay line, softirq). */
  readonly machinePercent: number;
  /** The server's resident memory at the window's end less before the flows opened, per flow. */
  readonly rssPerFlowBytes: number;
  /** Entries in the sock_ops program's map once every flow closed (trickle's servers with the bpf backend). */
  readonly mapEntriesLeft: number | undefined;
  /** When, after the client ended, the map last shrank (it is read until it empties or stops shrinking). */
  readonly mapSettledMs: number;
  /** Responses the origin wrote through Node because too few descriptors were free for sendfile's (trickle's servers). */
  readonly descriptorFallbacks: number | undefined;
  /** Handshakes dropped for a full accept queue in the server's namespace over the run (undefined: not readable). */
  readonly listenOverflows: number | undefined;
  /** The origin's V8 garbage-collection pauses within the window (its main thread), ms (trickle's servers). */
  readonly gcPauseMs: number | undefined;
}

interface RunningServer {
  readonly url: string;
  readonly pid: number;
  /** The sock_ops map's entries now (from /healthz), where the server has the bpf clamp backend. */
  mapEntries?(): Promise<number | undefined>;
  /** Responses written through Node for want of descriptors so far (trickle_socket_errors_total, openFileSend EMFILE). */
  descriptorFallbacks?(): Promise<number>;
  /** V8's garbage-collection pauses so far, seconds (prom-client's nodejs_gc_duration_seconds). */
  gcPauseSeconds?(): Promise<number>;
  stop(): Promise<void>;
}

interface ServerRun {
  readonly name: string;
  /** The seconds this server's aim gives the asset's bytes [fromByte, toByte). */
  aimSeconds(asset: Asset, regime: Regime, fromByte: number, toByte: number): number;
  start(regime: Regime): Promise<RunningServer>;
}

/** Run time of the trickle sock_ops programs loaded now (needs kernel.bpf_stats_enabled), ns. */
function bpfRunTimeNs(): number {
  const result = spawnSync('bpftool', ['prog', 'show', '--json']);
  if (result.status !== 0) return 0;
  const programs = JSON.parse(result.stdout.toString()) as { name?: string; run_time_ns?: number }[];
  return programs
    .filter((program) => program.name === 'trickle_sockops')
    .reduce((sum, program) => sum + (program.run_time_ns ?? 0), 0);
}

/** A process's resident memory (VmRSS), bytes. */
function residentBytes(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line === null ? Number.NaN : Number(line[1]) * 1024;
}

/**
 * The map is read until it is empty or has not shrunk for `settleMs`, at most `teardownLimitMs` after the client
 * ended: the kernel closes the flows' sockets meanwhile at its own pace (10,000 paced sockets with bytes queued), and an
 * entry that outlives that is a leak, not a slow teardown.
 */
const settleMs = 5_000;
const teardownLimitMs = 60_000;
const mapPollMs = 500;

/** The map's entries once they stopped falling, and how long after the client ended that was. */
async function settledMapEntries(server: RunningServer): Promise<{ entries: number | undefined; afterMs: number }> {
  const startedMs = Date.now();
  let entries = await server.mapEntries?.();
  let fellAtMs = startedMs;
  while (
    entries !== undefined &&
    entries > 0 &&
    Date.now() - fellAtMs < settleMs &&
    Date.now() - startedMs < teardownLimitMs
  ) {
    await new Promise((resolve) => setTimeout(resolve, mapPollMs));
    const now = await server.mapEntries?.();
    if (now !== undefined && now < entries) fellAtMs = Date.now();
    entries = now;
  }
  return { entries, afterMs: fellAtMs - startedMs };
}

/** The clamp backend an origin runs and its map's entries now, from its /healthz. */
async function clampHealth(
  place: ServerPlace,
  originUrl: string,
): Promise<{ backend?: string; entries?: number } | undefined> {
  const health = JSON.parse(await readAt(place, `${originUrl}/healthz`)) as {
    delivery?: { clamp?: { backend?: string; entries?: number } };
  };
  return health.delivery?.clamp;
}

/** Runs a bench client (`command`) and yields each JSON line it writes on stdout; `started` gets the process. */
async function* clientMessages<T>(
  command: readonly string[],
  started: (client: ChildProcess) => void = () => undefined,
): AsyncGenerator<T> {
  const client = spawn(command[0]!, command.slice(1), { stdio: ['pipe', 'pipe', 'inherit'] });
  stopOnInterrupt(client, `the client ${command.join(' ').slice(0, 100)}`);
  // a client that ended early fails its run by its missing result, not by a write to its closed stdin
  client.stdin?.on('error', () => undefined);
  started(client);
  for await (const line of createInterface({ input: client.stdout! })) yield JSON.parse(line) as T;
}

/**
 * Each asset's flows split into `processes` near-equal shares, in flow order: one flow client per share. A client
 * reading 10,000 sockets reads their bursts late enough that most fail burst-span.ts's period test.
 */
export function clientShares(
  flowsByAsset: readonly { readonly url: string; readonly count: number }[],
  processes: number,
): { url: string; count: number }[][] {
  return Array.from({ length: processes }, (_, p) =>
    flowsByAsset
      .map(({ url, count }) => ({
        url,
        count: Math.floor(((p + 1) * count) / processes) - Math.floor((p * count) / processes),
      }))
      .filter((share) => share.count > 0),
  ).filter((shares) => shares.length > 0);
}

/**
 * Runs the flow clients (in the regime's player place; the viewers regime's flows over several), reading the server's
 * CPU when the first client's window starts and when the last one's ends.
 */
async function measure(
  regime: Regime,
  server: RunningServer,
  aimSeconds: (asset: Asset, fromByte: number, toByte: number) => number,
  window: { warmupSec: number; seconds: number },
  countBpf: boolean,
): Promise<Measured> {
  const urlOf = (asset: Asset) => `${server.url}/${asset.name}/progressive.mp4`;
  const perAsset = Math.floor(regime.flows / regime.assets.length);
  const shares = clientShares(
    regime.assets.map((asset, i) => ({
      url: urlOf(asset),
      count: i === 0 ? regime.flows - perAsset * (regime.assets.length - 1) : perAsset,
    })),
    regime.clientProcesses,
  );
  const rssBeforeBytes = residentBytes(server.pid);
  const overflowsBefore = listenOverflows(server.pid);
  let rssWindowBytes = Number.NaN;
  let cpuStart = 0;
  let cpu = 0;
  let bpfStartNs = 0;
  let bpfNs = 0;
  let pathCpuStart = 0;
  let pathCpu: number | undefined;
  let machineStart = 0;
  let machine = 0;
  let gcStartSec: number | undefined;
  let gcPauseMs: number | undefined;
  let windowStartMs = 0;
  let windowSec = 0;
  let opened = 0;
  let started = 0;
  let ended = 0;
  const clients: ChildProcess[] = [];
  const runClient = async (flows: FlowClientPlan['flows']) => {
    const plan: FlowClientPlan = { flows, settleSec: window.warmupSec, seconds: window.seconds };
    const command = [...regime.clientWrap, process.execPath, flowClient, JSON.stringify(plan)];
    let result: FlowClientResult | undefined;
    for await (const message of clientMessages<{ opened?: boolean; window?: string } & Partial<FlowClientResult>>(
      command,
      (client) => clients.push(client),
    )) {
      if (message.opened === true) {
        // every client's flows open: all settle and count from now
        if (++opened === shares.length) for (const client of clients) client.stdin?.write('go\n');
      } else if (message.window === 'start') {
        if (started++ > 0) continue;
        windowStartMs = performance.now();
        cpuStart = processCpuSeconds(server.pid);
        if (countBpf) bpfStartNs = bpfRunTimeNs();
        if (regime.pathPid !== undefined) pathCpuStart = processCpuSeconds(regime.pathPid);
        machineStart = machineBusySeconds();
        gcStartSec = await server.gcPauseSeconds?.();
      } else if (message.window === 'end') {
        if (++ended < shares.length) continue;
        windowSec = (performance.now() - windowStartMs) / 1000;
        cpu = processCpuSeconds(server.pid) - cpuStart;
        if (countBpf) bpfNs = bpfRunTimeNs() - bpfStartNs;
        if (regime.pathPid !== undefined) pathCpu = processCpuSeconds(regime.pathPid) - pathCpuStart;
        machine = machineBusySeconds() - machineStart;
        rssWindowBytes = residentBytes(server.pid);
        const gcEndSec = await server.gcPauseSeconds?.();
        if (gcStartSec !== undefined && gcEndSec !== undefined) gcPauseMs = (gcEndSec - gcStartSec) * 1000;
      } else result = message as FlowClientResult;
    }
    if (result === undefined)
      throw new BenchError('BENCH_ERR_SERVER', `the flow client ended without its result (${server.url})`);
    return result;
  };
  const perClient = await Promise.all(shares.map(runClient));
  const overflowsAfter = listenOverflows(server.pid);
  // the flows' teardown settles before the map is read and the next server starts
  const settled = await settledMapEntries(server);
  const mapEntriesLeft = settled.entries;
  const descriptorFallbacks = await server.descriptorFallbacks?.();
  let deliveredBps = 0;
  const ratios: number[] = [];
  const burstBytes: number[] = [];
  const burstPeriodsSec: number[] = [];
  const failures: Record<string, number> = {};
  for (const result of perClient) {
    for (const [reason, count] of Object.entries(result.failures)) failures[reason] = (failures[reason] ?? 0) + count;
    for (const asset of regime.assets) {
      const offsets = result.offsetsByUrl[urlOf(asset)] ?? [];
      const spans = result.burstSpansByUrl[urlOf(asset)] ?? [];
      (result.bytesByUrl[urlOf(asset)] ?? []).forEach((flowBytes, i) => {
        deliveredBps += (flowBytes * 8) / result.elapsedSec;
        // rate over aim = the seconds the aim gives the flow's bytes over the seconds they took (0 for none): over
        // its whole bursts where they are regular and span half the window or more (burst-span.ts), else over its
        // client's window
        const span = spans[i];
        if (span !== null && span !== undefined && span.seconds >= window.seconds / 2) {
          ratios.push(aimSeconds(asset, span.fromByte, span.toByte) / span.seconds);
          burstBytes.push((span.toByte - span.fromByte) / (span.bursts - 1));
          burstPeriodsSec.push(span.seconds / (span.bursts - 1));
        } else ratios.push(aimSeconds(asset, offsets[i]!, offsets[i]! + flowBytes) / result.elapsedSec);
      });
    }
  }
  return {
    cpuPercent: (cpu / windowSec) * 100,
    bpfPercent: countBpf ? (bpfNs / 1e9 / windowSec) * 100 : undefined,
    deliveredBps,
    ratios,
    burstBytes,
    burstPeriodsSec,
    failedFlows: perClient.reduce((sum, result) => sum + result.failedFlows, 0),
    failures,
    pathCpuPercent: pathCpu === undefined ? undefined : (pathCpu / windowSec) * 100,
    machinePercent: (machine / windowSec) * 100,
    rssPerFlowBytes: (rssWindowBytes - rssBeforeBytes) / regime.flows,
    mapEntriesLeft,
    mapSettledMs: settled.afterMs,
    descriptorFallbacks,
    listenOverflows:
      overflowsBefore === undefined || overflowsAfter === undefined ? undefined : overflowsAfter - overflowsBefore,
    gcPauseMs,
  };
}

/**
 * Trickle's gain on a block of rate R: gain x R when the clamp is above its floor at this RTT, else 1 (the floor branch
 * paces at R).
 */
function trickleGain(rateBytesPerSec: number, regime: Regime): number {
  const { gain, floorPackets } = originDefaults.trickle;
  return (gain * rateBytesPerSec * regime.rttMs) / 1000 / regime.mssBytes >= floorPackets ? gain : 1;
}

const policyHeadroom: Readonly<Record<string, number>> = {
  pacing: originDefaults.pacing.headroom,
  'app-pacing': originDefaults.appPacing.headroom,
  'app-pacing-16k': originDefaults.appPacing16k.headroom,
};

function trickleRun(policy: string, cpuProfileDir: string | undefined): ServerRun {
  return {
    name: `trickle ${policy}`,
    aimSeconds: (asset, regime, fromByte, toByte) => {
      const headroom = policyHeadroom[policy];
      return pacedSeconds(regime.blocks.get(asset.name)!, fromByte, toByte, (rate) =>
        policy === 'trickle' ? trickleGain(rate, regime) : headroom!,
      );
    },
    async start(regime) {
      const server = await startTrickleServer(
        ['--media', mediaRoot, '--policy', policy, '--startup-seconds', '0'],
        {},
        regime.place,
        cpuProfileDir === undefined ? undefined : join(cpuProfileDir, `${regime.name}-${policy}`),
      );
      if (policy === 'trickle') {
        const clamp = regime.name === 'loopback' ? await clampHealth(regime.place, server.url) : undefined;
        if (clamp !== undefined && clamp.backend !== 'bpf')
          process.stderr.write(`warning: trickle runs with the ${clamp.backend} clamp backend (not root?)\n`);
      }
      return {
        url: `${server.url}/media`,
        pid: server.child.pid!,
        stop: () => server.stop(),
        mapEntries: async () => {
          const clamp = await clampHealth(regime.place, server.url);
          return clamp?.backend === 'bpf' ? clamp.entries : undefined;
        },
        descriptorFallbacks: async () => {
          const metrics = await readAt(regime.place, `${server.url}/metrics`);
          return (
            metricTotal(metrics, 'trickle_socket_errors_total', { operation: 'openFileSend', code: 'EMFILE' }) || 0
          );
        },
        gcPauseSeconds: async () =>
          metricTotal(await readAt(regime.place, `${server.url}/metrics`), 'nodejs_gc_duration_seconds_sum'),
      };
    },
  };
}

const nginxLimitBytesPerSec = (asset: Asset) => Math.round(1.25 * meanRateBytesPerSec(asset));

const nginxRun: ServerRun = {
  name: 'nginx limit_rate 1.25 x R',
  aimSeconds: (asset, _regime, fromByte, toByte) => (toByte - fromByte) / nginxLimitBytesPerSec(asset),
  async start(regime) {
    const locations = regime.assets.map(
      (asset) => `location /${asset.name}/ { limit_rate ${nginxLimitBytesPerSec(asset)}; }`,
    );
    const nginx = await startNginx(
      `paced-${regime.name}`,
      {
        httpDirectives: [
          'sendfile on;',
          'tcp_nopush on;',
          // Thousands of flows of one file share its descriptor (as an edge's nginx is set up), within the file limit.
          ...(regime.maxConnections === undefined ? [] : ['open_file_cache max=64;']),
        ],
        serverDirectives: [`root ${mediaRoot};`, ...locations],
        readyPath: `/${regime.assets[0]!.name}/progressive.mp4`,
        ...(regime.maxConnections === undefined ? {} : { workerConnections: regime.maxConnections }),
      },
      regime.place,
    );
    return { url: nginx.url, pid: nginx.pid, stop: () => nginx.stop() };
  },
};

/** A sysctl's value; '' where it cannot be read. */
function readSysctl(name: string): string {
  return spawnSync('sysctl', ['-n', name]).stdout?.toString().trim() ?? '';
}

/** Sets a sysctl for the run and puts the value it had back after; no value: left as it is. */
async function withSysctl<T>(name: string, value: string | undefined, run: () => Promise<T>): Promise<T> {
  const before = readSysctl(name);
  const set = (to: string) => spawnSync('sysctl', ['-q', '-w', `${name}=${to}`]).status === 0;
  if (value === undefined || before === '' || before === value) return run();
  if (!set(value)) throw new BenchError('BENCH_ERR_USAGE', `sysctl -w ${name}=${value} was refused`);
  return undoneAfter(
    `${name}=${before}`,
    () => {
      set(before);
    },
    run,
  );
}

/** The congestion control new sockets get (every server's, unless it sets its own), and which ones the kernel has. */
function congestionControls(): { current: string; available: readonly string[] } {
  return {
    current: readSysctl('net.ipv4.tcp_congestion_control'),
    available: readSysctl('net.ipv4.tcp_available_congestion_control').split(/\s+/).filter(Boolean),
  };
}

/** The delay line is one thread: at this share of a core it, not the server, sets the flows' pace. */
const pathLimitedPercent = 85;

/** Fewer runs than this and a ratio gets no interval ("too few"). */
const minimumRunsForInterval = 3;

async function runRegime(
  regime: Regime,
  servers: readonly ServerRun[],
  window: { warmupSec: number; seconds: number },
  runs: number,
  progress: { done: number; total: number },
): Promise<string[]> {
  const measured = new Map<ServerRun, Measured[]>(servers.map((server) => [server, []]));
  // Runs interleave the servers, so a drift of the machine over time falls on all of them alike.
  for (let run = 0; run < runs; run++) {
    for (const server of servers) {
      process.stderr.write(
        `[${++progress.done}/${progress.total}] ${regime.name}: ${server.name}, ${regime.flows} ` +
          `flows, ${window.warmupSec} s warm-up + ${window.seconds} s, run ${run + 1}/${runs} ` +
          `...\n`,
      );
      const running = await server.start(regime);
      let result: Measured;
      try {
        result = await measure(
          regime,
          running,
          (asset, fromByte, toByte) => server.aimSeconds(asset, regime, fromByte, toByte),
          window,
          server.name === 'trickle trickle' || server.name === 'trickle pacing',
        );
      } finally {
        await running.stop();
      }
      const sorted = [...result.ratios].sort((a, b) => a - b);
      process.stderr.write(
        `  CPU ${result.cpuPercent.toFixed(1)} ` +
          `%${result.bpfPercent === undefined ? '' : ` (+ BPF ${result.bpfPercent.toFixed(2)} %)`}, ` +
          `delivered ${(result.deliveredBps / 1e6).toFixed(1)} Mbit/s, rate over ` +
          `aim ${quantileSorted(sorted, 0.5).toFixed(3)} ` +
          `(${quantileSorted(sorted, 0.05).toFixed(3)} ` +
          `.. ${quantileSorted(sorted, 0.95).toFixed(3)}; ${result.burstBytes.length} of ` +
          `${result.ratios.length} over whole bursts)` +
          (result.pathCpuPercent === undefined ? '' : `, delay line ${result.pathCpuPercent.toFixed(0)} % of a core`) +
          ', ' +
          `machine ${result.machinePercent.toFixed(0)} %, ` +
          `memory ${(result.rssPerFlowBytes / 1024).toFixed(1)} kB per flow` +
          (result.mapEntriesLeft === undefined
            ? ''
            : `, map entries left ${result.mapEntriesLeft} (last fell ${(result.mapSettledMs / 1000).toFixed(1)} s after the flows ended)`) +
          (result.descriptorFallbacks
            ? `, ${result.descriptorFallbacks} responses written by Node (descriptors)`
            : '') +
          (result.listenOverflows ? `, ${result.listenOverflows} handshakes dropped (accept queue full)` : '') +
          (result.gcPauseMs === undefined ? '' : `, GC pauses ${result.gcPauseMs.toFixed(0)} ms in the window`) +
          (result.failedFlows > 0
            ? `, ${result.failedFlows} failed flows (${Object.entries(result.failures)
                .map(([reason, count]) => `${reason}: ${count}`)
                .join(', ')})`
            : '') +
          '\n',
      );
      measured.get(server)!.push(result);
    }
  }
  const costOf = (m: Measured) => (m.cpuPercent + (m.bpfPercent ?? 0)) / (m.deliveredBps / 1e9);
  const meanCost = (sample: readonly Measured[]) => sample.reduce((sum, m) => sum + costOf(m), 0) / sample.length;
  const meanMachineCost = (sample: readonly Measured[]) =>
    sample.reduce((sum, m) => sum + m.machinePercent / (m.deliveredBps / 1e9), 0) / sample.length;
  const anchor = measured.get(nginxRun)!;
  const intervalText = (
    results: readonly Measured[],
    ratio: (a: readonly Measured[], b: readonly Measured[]) => number,
  ) => {
    const versusNginx = bootstrapComparison(results, anchor, ratio, { resamples: 2000, seed: 19 });
    return results.length < minimumRunsForInterval
      ? `${versusNginx.value.toFixed(2)} (too few runs for an interval)`
      : `${versusNginx.value.toFixed(2)} (${versusNginx.low.toFixed(2)} .. ${versusNginx.high.toFixed(2)})`;
  };
  const average = (values: readonly number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;
  const burstsText = (results: readonly Measured[], flows: number) => {
    const bytes = results.flatMap((m) => m.burstBytes).sort((a, b) => a - b);
    const periods = results.flatMap((m) => m.burstPeriodsSec).sort((a, b) => a - b);
    if (bytes.length === 0) return `0 of ${flows}`;
    return (
      `${((bytes.length / flows) * 100).toFixed(0)} %: ${(quantileSorted(bytes, 0.5) / 1000).toFixed(1)} kB ` +
      `every ${quantileSorted(periods, 0.5).toFixed(2)} s`
    );
  };
  return servers.map((server) => {
    const results = measured.get(server)!;
    const ratios = results.flatMap((m) => m.ratios);
    const sorted = [...ratios].sort((a, b) => a - b);
    const within = ratios.filter((ratio) => Math.abs(ratio - 1) <= 0.03).length;
    const pct = (ratio: number) => `${ratio >= 1 ? '+' : ''}${((ratio - 1) * 100).toFixed(1)}`;
    const ratioText = server === nginxRun ? '1.00' : intervalText(results, (a, b) => meanCost(a) / meanCost(b));
    const machineRatioText =
      server === nginxRun ? '1.00' : intervalText(results, (a, b) => meanMachineCost(a) / meanMachineCost(b));
    const bpf = results.every((m) => m.bpfPercent === undefined)
      ? ''
      : `${average(results.map((m) => m.bpfPercent ?? 0)).toFixed(2)} %`;
    const failed = results.reduce((sum, m) => sum + m.failedFlows, 0);
    const entriesLeft = results.map((m) => m.mapEntriesLeft).filter((value) => value !== undefined);
    const fallbacks = results.map((m) => m.descriptorFallbacks).filter((value) => value !== undefined);
    const overflows = results.map((m) => m.listenOverflows).filter((value) => value !== undefined);
    const gcPauses = results.map((m) => m.gcPauseMs).filter((value) => value !== undefined);
    const pathCpu = results.map((m) => m.pathCpuPercent).filter((value) => value !== undefined);
    const pathText =
      pathCpu.length === 0
        ? ''
        : `${average(pathCpu).toFixed(0)} %${Math.max(...pathCpu) >= pathLimitedPercent ? ' (path-limited)' : ''}`;
    return (
      `| ${regime.name} | ${regime.flows} | ${server.name} ` +
      `| ${(average(results.map((m) => m.deliveredBps)) / 1e6).toFixed(1)} ` +
      `| ${average(results.map((m) => m.cpuPercent)).toFixed(2)} % | ${bpf} ` +
      `| ${meanCost(results).toFixed(1)} | ${ratioText} ` +
      `| ${pct(quantileSorted(sorted, 0.5))} (${pct(quantileSorted(sorted, 0.05))} ` +
      `.. ${pct(quantileSorted(sorted, 0.95))}) ` +
      `| ${((within / Math.max(1, ratios.length)) * 100).toFixed(0)} % | ${burstsText(results, ratios.length)} | ${failed} ` +
      `| ${pathText} | ${average(results.map((m) => m.machinePercent)).toFixed(0)} % ` +
      `| ${machineRatioText} ` +
      `| ${(average(results.map((m) => m.rssPerFlowBytes)) / 1024).toFixed(1)} ` +
      `| ${entriesLeft.length === 0 ? '' : Math.max(...entriesLeft)} ` +
      `| ${fallbacks.length === 0 ? '' : Math.max(...fallbacks)} ` +
      `| ${overflows.length === 0 ? '' : Math.max(...overflows)} ` +
      `| ${gcPauses.length === 0 ? '' : gcPauses.map((ms) => ms.toFixed(0)).join(', ')} |`
    );
  });
}

/** Opens `connections` idle keep-alive connections to each server and holds them for `holdSec`: who keeps them all, at what memory. */
async function runIdle(
  regime: Regime,
  servers: readonly ServerRun[],
  connections: number,
  holdSec: number,
  progress: { done: number; total: number },
): Promise<string[]> {
  const rows: string[] = [];
  for (const server of servers) {
    process.stderr.write(
      `[${++progress.done}/${progress.total}] ${regime.name}: ${server.name}, ${connections} idle keep-alive ` +
        `connections held ${holdSec} s ...\n`,
    );
    const running = await server.start(regime);
    try {
      const target = new URL(`${running.url}/${regime.assets[0]!.name}/progressive.mp4`);
      const plan: IdleClientPlan = {
        host: target.hostname,
        port: Number(target.port),
        path: target.pathname,
        connections,
        holdSec,
      };
      const rssBeforeBytes = residentBytes(running.pid);
      const command = [...regime.clientWrap, process.execPath, idleClient, JSON.stringify(plan)];
      let rssHeldBytes = Number.NaN;
      let result: IdleClientResult | undefined;
      for await (const message of clientMessages<{ held?: string } & Partial<IdleClientResult>>(command)) {
        if (message.held === 'end') rssHeldBytes = residentBytes(running.pid);
        else if (message.held === undefined) result = message as IdleClientResult;
      }
      if (result === undefined)
        throw new BenchError('BENCH_ERR_SERVER', `the idle client ended without its result (${running.url})`);
      const entriesLeft = (await settledMapEntries(running)).entries;
      const perConnectionKb = (rssHeldBytes - rssBeforeBytes) / Math.max(1, result.answered) / 1024;
      const held = result.answered - result.closedDuringHold;
      process.stderr.write(
        `  ${result.answered} answered in ${result.openSec.toFixed(1)} s, ${result.failed} failed, ` +
          `${result.closedDuringHold} closed by the server while idle, ${perConnectionKb.toFixed(1)} kB each\n`,
      );
      rows.push(
        `| ${server.name} | ${connections} | ${result.answered} | ${result.failed} | ${result.closedDuringHold} ` +
          `| ${held} of ${connections}${held === connections ? ' (all)' : ''} | ${result.openSec.toFixed(1)} ` +
          `| ${perConnectionKb.toFixed(1)} | ${entriesLeft ?? ''} |`,
      );
    } finally {
      await running.stop();
    }
  }
  return rows;
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench pacing')
    .option(
      '--regimes <list>',
      'lab (namespaces, MSS 1448, real RTT), loopback, viewers (10,000 low-rate flows and 50,000 idle connections)',
      'lab,loopback',
    )
    .option(
      '--flows <n>',
      'concurrent flows in the lab regime (on 2 cores the delay line is the limit from ~200: see the results file)',
      '100',
    )
    .option('--loopback-flows <n>', 'concurrent flows on loopback', '500')
    .option('--viewers <n>', 'concurrent 0.1 Mbit/s flows in the viewers regime (trickle, pacing and nginx)', '10000')
    .option(
      '--viewers-clients <n>',
      "flow clients the viewers regime's flows are split over: one reading 10,000 sockets reads bursts late (the " +
        'rate error then falls back to the window), two read them whole, but under pacing the origin then showed ' +
        'bursts of kernel time (paced-viewers-schedule-cubic-2clients.md): CPU figures only from one',
      '1',
    )
    .option('--idle-connections <n>', 'idle keep-alive connections the viewers regime holds per server', '50000')
    .option('--idle-seconds <s>', 'how long they are held (below both servers keep-alive timeouts)', '30')
    .option('--results <name>', 'results file name in bench/results', 'paced-flows.md')
    .option('--rtt-ms <ms>', "the lab path's RTT", '100')
    .option('--seconds <n>', 'measurement window per run', '20')
    .option(
      '--warmup <s>',
      "seconds every flow runs before the window, past the servers' startup: V8 shrinks a new " +
        "origin's heap with full GCs in its first ~35 s, and collects the heap 10,000 viewers' " +
        'responses hold 30-43 s after they open (default: 40, the viewers regime 60)',
    )
    .option('--runs <n>', 'runs of every server per regime (interleaved; ratios get an interval from 3)', '3')
    .option('--policies <list>', 'trickle policies to run', 'trickle,pacing,app-pacing,app-pacing-16k')
    .option(
      '--congestion-control <name>',
      "every server's TCP congestion control (net.ipv4.tcp_congestion_control for the run, put back after; " +
        "default: the machine's): under BBR the kernel paces at the lower of the rate asked and BBR's own pacing rate, under cubic at the rate asked",
    )
    .option(
      '--cpu-prof <dir>',
      'write a V8 CPU profile of every trickle server run under <dir>/<regime>-<policy>/ (open in Chrome DevTools)',
    )
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle bench pacing',
        'sudo npx trickle bench pacing --regimes lab --flows 500 --seconds 12',
        'sudo npx trickle bench pacing --regimes viewers --results paced-viewers.md',
      ),
    )
    .parse(['node', 'bench', ...argv])
    .opts<{
      regimes: string;
      flows: string;
      loopbackFlows: string;
      viewers: string;
      viewersClients: string;
      idleConnections: string;
      idleSeconds: string;
      results: string;
      rttMs: string;
      seconds: string;
      warmup?: string;
      runs: string;
      policies: string;
      congestionControl?: string;
      cpuProf?: string;
    }>();
  resultsFileName(options.results);
  const runs = numberOption('--runs', options.runs, 'positive-integer');
  const seconds = numberOption('--seconds', options.seconds, 'positive');
  const warmupSec = options.warmup === undefined ? undefined : numberOption('--warmup', options.warmup, 'non-negative');
  const windowOf = (regime: Regime['name']) => ({ warmupSec: warmupSec ?? defaultWarmupSec[regime], seconds });
  const rttMs = numberOption('--rtt-ms', options.rttMs, 'non-negative');
  const flows = numberOption('--flows', options.flows, 'positive-integer');
  const loopbackFlows = numberOption('--loopback-flows', options.loopbackFlows, 'positive-integer');
  const viewers = numberOption('--viewers', options.viewers, 'positive-integer');
  const viewersClients = numberOption('--viewers-clients', options.viewersClients, 'positive-integer');
  const idleConnectionsAsked = numberOption('--idle-connections', options.idleConnections, 'non-negative-integer');
  const idleSeconds = numberOption('--idle-seconds', options.idleSeconds, 'positive');
  const regimeNames = options.regimes.split(',');
  requireNginx();
  if (spawnSync('bpftool', ['version']).status !== 0)
    throw new BenchError(
      'BENCH_ERR_MISSING_TOOL',
      "bpftool not found: `apt-get install bpftool` (the sock_ops program's run time)",
    );
  const machineCongestionControl = congestionControls();
  if (
    options.congestionControl !== undefined &&
    !machineCongestionControl.available.includes(options.congestionControl)
  )
    throw new BenchError(
      'BENCH_ERR_USAGE',
      `--congestion-control ${options.congestionControl}: this kernel has ${machineCongestionControl.available.join(', ')} ` +
        `(another needs its module: modprobe tcp_${options.congestionControl})`,
    );
  const congestionControl = options.congestionControl ?? machineCongestionControl.current;
  const policies = options.policies.split(',');
  const unknown = policies.filter((policy) => policy !== 'trickle' && policyHeadroom[policy] === undefined);
  if (unknown.length > 0)
    throw new BenchError(
      'BENCH_ERR_USAGE',
      `--policies: no aim known for ${unknown.join(', ')} (trickle, pacing, app-pacing, app-pacing-16k)`,
    );
  const assets = [
    ...(regimeNames.includes('lab') ? labAssets : regimeNames.includes('loopback') ? loopbackAssets : []),
    ...(regimeNames.includes('viewers') ? viewersAssets : []),
  ];
  for (const asset of assets) makeMedia(asset);
  const blocks = new Map(await Promise.all(assets.map(async (asset) => [asset.name, await blocksOf(asset)] as const)));
  const servers = [
    ...policies.map((policy) =>
      trickleRun(policy, options.cpuProf === undefined ? undefined : resolve(options.cpuProf)),
    ),
    nginxRun,
  ];
  // The viewers regime runs the policies paced in the kernel (the application's pacing is the paper's baseline).
  const viewersServers = servers.filter(
    (server) => server === nginxRun || server.name === 'trickle trickle' || server.name === 'trickle pacing',
  );
  const idleServers = [trickleRun('trickle', undefined), nginxRun];
  // With sendfile(2) a flow holds its socket and a duplicate of it; an idle connection its socket.
  const fileLimit = viewersFileLimit(Math.max(2 * viewers, idleConnectionsAsked) + serverSpareFiles);
  const idleConnections = Math.min(idleConnectionsAsked, fileLimit.files - serverSpareFiles);
  if (regimeNames.includes('viewers') && fileLimit.reason !== undefined)
    process.stderr.write(
      `warning: ${fileLimit.reason}: ${idleConnections} idle connections instead of ${options.idleConnections}\n`,
    );
  if (regimeNames.includes('viewers') && viewers > fileLimit.files - serverSpareFiles)
    throw new BenchError(
      'BENCH_ERR_USAGE',
      `--viewers ${options.viewers}: ${fileLimit.reason ?? 'above the file limit'}; at most ` +
        `${fileLimit.files - serverSpareFiles} here`,
    );
  const progress = {
    done: 0,
    total:
      regimeNames.filter((name) => name !== 'viewers').length * servers.length * runs +
      (regimeNames.includes('viewers') ? viewersServers.length * runs + idleServers.length : 0),
  };
  const rows: string[] = [];
  const idleRows: string[] = [];
  await withSysctl('net.ipv4.tcp_congestion_control', options.congestionControl, () =>
    withSysctl('kernel.bpf_stats_enabled', '1', async () => {
      if (regimeNames.includes('lab')) {
        // The link is not the bottleneck (1 Gbit/s, 2 x BDP): the servers' pacing is what is measured.
        const lab: Lab = await labUp('bpace', symmetricLink({ rateBps: 1e9, rttMs, bufferBdp: 2 }));
        await undoneAfter(
          'the lab bpace',
          () => labDown('bpace'),
          async () => {
            const origin = lab.namespace('origin');
            // the lab's addresses answer only inside its namespaces
            const curlInOrigin = (args: readonly string[]) =>
              spawnSync('ip', ['netns', 'exec', origin, 'curl', '-sf', '--max-time', '5', ...args], {
                encoding: 'utf8',
              });
            const place: ServerPlace = {
              host: lab.address('origin'),
              port: 8080,
              wrap: ['ip', 'netns', 'exec', origin],
              answers: async (url) => curlInOrigin(['-o', '/dev/null', '--range', '0-0', url]).status === 0,
              read: async (url) => curlInOrigin([url]).stdout,
            };
            rows.push(
              ...(await runRegime(
                {
                  name: 'lab',
                  flows,
                  assets: labAssets,
                  place,
                  clientWrap: ['ip', 'netns', 'exec', lab.namespace('player')],
                  clientProcesses: 1,
                  rttMs,
                  mssBytes: 1448,
                  blocks,
                  ...(lab.state.pids.delayline === undefined ? {} : { pathPid: lab.state.pids.delayline }),
                },
                servers,
                windowOf('lab'),
                runs,
                progress,
              )),
            );
          },
        );
      }
      if (regimeNames.includes('loopback'))
        rows.push(
          ...(await runRegime(
            {
              name: 'loopback',
              flows: loopbackFlows,
              assets: loopbackAssets,
              place: loopback,
              clientWrap: [],
              clientProcesses: 1,
              rttMs: 0.05,
              mssBytes: 65483,
              blocks,
            },
            servers,
            windowOf('loopback'),
            runs,
            progress,
          )),
        );
      if (regimeNames.includes('viewers')) {
        // Every process gets its hard file limit as its soft one (prlimit execs, so the pid is the server's).
        const limited = ['prlimit', `--nofile=${fileLimit.files}:${fileLimit.files}`];
        await withEthernetLoopback(async (place) => {
          const viewersRegime: Regime = {
            name: 'viewers',
            flows: viewers,
            assets: viewersAssets,
            place: { ...place, wrap: limited },
            clientWrap: limited,
            clientProcesses: viewersClients,
            rttMs: 0.05,
            mssBytes: ethernetLoopbackMssBytes,
            blocks,
            maxConnections: fileLimit.files - serverSpareFiles,
          };
          rows.push(...(await runRegime(viewersRegime, viewersServers, windowOf('viewers'), runs, progress)));
          idleRows.push(...(await runIdle(viewersRegime, idleServers, idleConnections, idleSeconds, progress)));
        });
      }
    }),
  );
  const cpus = availableParallelism();
  const rates = labAssets
    .filter((asset) => existsSync(assetFile(asset)))
    .map((asset) => `${asset.name} ${((meanRateBytesPerSec(asset) * 8) / 1e6).toFixed(2)}`)
    .join(', ');
  await writeResults(
    options.results,
    "Paced flows: server CPU per delivered Gbit/s, and each flow's rate against its aim",
    [
      `Command: \`npx trickle bench pacing --regimes ${options.regimes} ` +
        `--flows ${options.flows} --loopback-flows ${options.loopbackFlows} ` +
        (regimeNames.includes('viewers')
          ? `--viewers ${options.viewers} --viewers-clients ${options.viewersClients} ` +
            `--idle-connections ${options.idleConnections} ` +
            `--idle-seconds ${options.idleSeconds} `
          : '') +
        `--rtt-ms ${rttMs} --seconds ${seconds} ${options.warmup === undefined ? '' : `--warmup ${options.warmup} `}--runs ${runs} ` +
        `--policies ${options.policies}` +
        `${options.congestionControl === undefined ? '' : ` --congestion-control ${options.congestionControl}`}` +
        `${options.results === 'paced-flows.md' ? '' : ` --results ${options.results}`}\` (root). ` +
        `Congestion control ${congestionControl} for every server (${options.congestionControl === undefined ? "the machine's default" : `net.ipv4.tcp_congestion_control for the run; the machine's default ${machineCongestionControl.current}`}). ` +
        `One server process at a time (trickle ` +
        `serve: one Node process; nginx one worker, master_process off), the client ` +
        `separate Node processes (one per regime, ${options.viewersClients} for viewers; the server's CPU read from the first one's window start to the last one's end); flows opened together (each client 1,000 at a time, a batch once the one before has its response headers, so handshakes do not overflow the accept queue; every client's flows open before any settles), run ${regimeNames.map((name) => `${windowOf(name as Regime['name']).warmupSec} s (${name})`).join(', ')} before the ` +
        `window (a new origin's first ~35 s hold V8's memory-reducer GCs, full collections ` +
        `that shrink the heap grown at startup: see the hand note below), then ${seconds} s ` +
        `measured; ${runs} runs of each server per regime, interleaved. Startup 0 s: every ` +
        `flow is throttled from its first byte.`,
      '',
      ...(regimeNames.includes('lab')
        ? [
            `- **lab**: server in the lab's origin namespace, clients in its player namespace, ` +
              `veth MTU 1500 (MSS 1448), ${rttMs} ms RTT through the delay line, 1 Gbit/s link ` +
              `(not the bottleneck). Flows split evenly over three ffmpeg-made ${mediaSeconds} s ` +
              `progressive MP4s (mean Mbit/s: ${rates}). At ${rttMs} ms Trickle's clamp 1.2 R srtt ` +
              `/ MSS is above its 10-packet floor for R ` +
              `> ${((10 * 1448 * 8) / ((1.2 * rttMs) / 1000) / 1e6).toFixed(2)} Mbit/s ` +
              `(cwnd-clamped, aim 1.2 R) and at the floor below it (paced at R by the kernel).`,
          ]
        : []),
      ...(regimeNames.includes('loopback')
        ? [
            '- **loopback**: MSS 64 kB, RTT ~50 us, the 0.8 Mbit/s asset only: every trickle flow is at its floor (aim R).',
          ]
        : []),
      ...(regimeNames.includes('viewers')
        ? [
            `- **viewers** (an edge's load, issue 38): loopback, RTT ~50 us, but to ${ethernetLoopbackAddress}, ` +
              `routed with MTU 1500 for the run (MSS ${ethernetLoopbackMssBytes}, as on viewers' paths: at 64 kB the ` +
              'kernel paces a 0.1 Mbit/s flow one segment per 5 s), every trickle flow at its floor (aim R); ' +
              `${options.viewers} flows of a ` +
              `${mediaSeconds} s MP4 at ${((meanRateBytesPerSec(viewersAssets[0]!) * 8) / 1e6).toFixed(2)} Mbit/s ` +
              '(a lowest rung, so the 2 cores are not the limit), trickle and pacing in the kernel against nginx, read ' +
              `by ${options.viewersClients} client processes (one reading 10,000 sockets read bursts late), every ` +
              `process with a limit of ${fileLimit.files} files (nginx with open_file_cache, so its flows share the ` +
              `file's descriptor). Then each server (the origin under trickle, nginx) holds ${idleConnections} idle ` +
              `keep-alive connections for ${options.idleSeconds} s (each asked one HEAD; opened 400 at a time, ` +
              'from 127.0.0.1 and past 20,000 from 127.0.0.2, .3). Goals (issue 38): every flow within +-3 % of its aim, ' +
              'no failed flow, no map entry left; ' +
              `${options.idleConnections} idle connections held` +
              (fileLimit.reason === undefined || idleConnections >= idleConnectionsAsked
                ? '.'
                : ` (not measurable here: ${fileLimit.reason}; ${idleConnections} instead).`),
          ]
        : []),
      '',
      `Aims: each flow's own, over the bytes it received in the window: app-pacing, ` +
        `app-pacing-16k and pacing send every ${originDefaults.rateWindowSec} s VBR block ` +
        `at ${originDefaults.pacing.headroom} x its own R; trickle ` +
        `at ${originDefaults.trickle.gain} x R where the clamp is above its floor at the ` +
        `regime's RTT, else at R; so the aim is the seconds those rates give the flow's ` +
        `bytes (from where in the file its window began), and a flow's rate over its aim is ` +
        `that over the window's seconds (the file's mean rate would be off by the window's ` +
        `local rate). nginx: its \`limit_rate\` (1.25 x the file's mean rate, constant). ` +
        `Cost = (server CPU % + the sock_ops program's run time, for trickle) / delivered ` +
        `Gbit/s, mean over the runs; "x nginx" is that mean over nginx's in the same regime, ` +
        `with a 95 % bootstrap interval over the runs (from ${minimumRunsForInterval} runs; ` +
        `fewer: "too few"). Rate error: each flow's rate against its aim, median (5th .. 95th ` +
        `percentile), and the share of flows within +-3 %; a flow's rate is taken over its whole ` +
        `bursts, from the first burst that began in the window to the last (a burst: bytes after a ` +
        `pause of ${burstGapMs} ms), where they are regular (sizes within ${sizeRegularity} x of each other, ` +
        `periods within ${periodRegularity} x) and span half the window or more, else over the window: flows ` +
        `opened together and paced in bursts stay in phase, and a window holding n or n + 1 of ` +
        `every flow's bursts reads every flow off by the same fraction of a burst (at the floor ` +
        `a clamped flow sends its 10 packets about every 1.2 s: 11 % of a 12 s window). Delay line: ` +
        `its process's CPU over the window (lab; one thread): at ${pathLimitedPercent} % of ` +
        `a core or more in any run the row is marked path-limited, the emulated path and not ` +
        `the server setting the flows' pace. Machine CPU: the whole machine's busy time over ` +
        `the window (/proc/stat: user, system, irq, softirq; % of a core, ${cpus} cores), ` +
        `which holds the client and, in the lab, the delay line too, so its ratio is diluted ` +
        `by work every server causes alike; it is there because a kernel's TCP work lands in ` +
        `whichever context runs when it is due: a block written into an open window is sent ` +
        `in the writer's own system call (application pacing), bytes an ACK releases go out ` +
        `in the softirq of whatever ran then (nginx, the cwnd clamp, kernel pacing), so the ` +
        `server's CPU alone can move the same work out of sight. Handshakes dropped: the ` +
        `kernel's TcpExt ListenOverflows in the server's network namespace over its run (the ` +
        `flows open together, each client's 1,000 at a time; a dropped handshake waits seconds for SYN and SYN-ACK retries, and ` +
        `some are reset: the origin listens with a backlog of 4096, Node's default is 511, nginx's 511). ` +
        `V8 GC pauses: the origin's garbage-collection pauses on its main thread within each run's window ` +
        `(prom-client's nodejs_gc_duration_seconds); a major collection of the heap that 10,000 responses ` +
        `hold (~2 s of CPU with its concurrent marking, ~30-45 s after the flows open) lands inside the ` +
        `window in some runs and before it in others, and the server's CPU with it. ` +
        `Goals (issue 19): trickle ` +
        `and pacing <= 1.0 x nginx, app-pacing <= 2 x, app-pacing-16k <= 3 x; every flow ` +
        `within +-3 %.`,
      '',
      '| regime | flows | server | delivered Mbit/s (mean) | server CPU (mean) | sock_ops ' +
        'program (mean) | CPU % per Gbit/s | x nginx | rate error % | flows within +-3 % | ' +
        'judged over whole bursts: flows, burst and period (medians) | ' +
        'failed flows (all runs) | delay line CPU (mean) | machine CPU (mean) | machine per ' +
        'Gbit/s x nginx | memory per flow (kB) | map entries left (most of any run) | responses written by Node ' +
        'for want of descriptors (most of any run) | handshakes dropped, accept queue full (most of any run) | V8 GC pauses in the window, ms (each run) |',
      '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
      ...rows,
      '',
      ...(idleRows.length === 0
        ? []
        : [
            '| server (viewers regime) | idle connections opened | answered | failed | closed by the server while ' +
              'idle | held to the end | seconds to open them all | memory per idle connection (kB) | map entries ' +
              'left |',
            '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
            ...idleRows,
            '',
          ]),
      'Hand notes, from earlier runs of this benchmark on this machine kind ' +
        "(2026-11-25/26), not measured by this run: in a 12 s window started at once, V8's " +
        "memory-reducer GCs (40-60 ms of main thread each) were most of the origin's CPU at " +
        '100 lab flows (2.1-3.4 % of a core with them, 0.9 % without), hence the warm-up; ' +
        "the file's mean rate was off the window's local rate by +1.4 .. +2.3 % in these " +
        "files' first 20 s, hence per-window aims; on 2 cores the delay line forwarded " +
        '~350-400 Mbit/s of 1448-byte frames at most, hence the path-limited mark.',
      '',
    ],
  );
}

await runIfMain(import.meta.url, main);
