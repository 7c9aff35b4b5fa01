/**
 * The lab: three network namespaces origin -- router -- player (plus an optional cross host on the
 * player side) joined by veth pairs, all on one L2 subnet with fixed addresses (origin 10.73.0.1,
 * player 10.73.0.2, cross 10.73.0.3). The router carries the link model (LinkBackend); a switch
 * namespace bridges the access side so the player and the cross host share the bottleneck.
 * Namespaces carry the lab's name; nothing touches a host interface.
 */
import { spawn, spawnSync, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { E2eError } from '../errors.js';
import { linkBackends } from './backends.js';
import type { LinkBackendName, RouterPorts } from './link-backend.js';
import type { DirectionSpec, LinkSpec } from './link-spec.js';
import type { LinkPopulation } from './population.js';
import { netemAvailable } from './netem-backend.js';
import { inNs, run } from './shell.js';

export type LabHost = 'origin' | 'player' | 'cross';

/** A population lab's viewer, as a place to run a command: its own host where it has one, else the player namespace. */
export interface ViewerHost {
  readonly viewer: number;
}

/** Where a command of the lab can run. */
export type LabPlace = LabHost | 'router' | ViewerHost;

export const labAddresses: Readonly<Record<LabHost, string>> = {
  origin: '10.73.0.1',
  player: '10.73.0.2',
  cross: '10.73.0.3',
};
export const labRoot = process.env.TRICKLE_LAB_DIR ?? '/run/trickle/lab';

export interface LabOptions {
  /** `auto` (default): netem where the kernel has it, else the delay line. */
  readonly backend?: 'auto' | LinkBackendName;
  /** Add the cross host (competing traffic, latency probe) on the player side. */
  readonly cross?: boolean;
  /**
   * false: the namespaces and wires only, no forwarding or shaping in the router: something run
   * in the router namespace (the compose stack's router entrypoint, `trickle router`) does that.
   */
  readonly shape?: boolean;
}

export interface LabState {
  readonly name: string;
  readonly backend: LinkBackendName;
  readonly spec: LinkSpec;
  readonly cross: boolean;
  readonly namespaces: Readonly<Record<LabHost | 'router' | 'switch', string>>;
  readonly addresses: Readonly<Record<LabHost, string>>;
  readonly ports: RouterPorts;
  readonly pids: { delayline?: number; replay?: number };
  readonly createdAt: string;
  /**
   * A lab with a trace: when its replayer applied the trace's first point, the trace's time zero
   * (ISO time). labUp returns only after it, so the trace is never late by a slow replayer's start.
   */
  readonly traceStartedAt?: string;
  /**
   * A population lab (population-lab.ts): one access link per viewer address; `spec` is then the link of everything
   * else.
   */
  readonly population?: LinkPopulation;
  /** Viewers of the population with a network namespace of their own (a browser's host), by viewer. */
  readonly viewerNamespaces?: Readonly<Record<number, string>>;
}

export interface QdiscStats {
  readonly sentBytes: number;
  readonly sentPackets: number;
  readonly drops: number;
  readonly backlogBytes: number;
}

export interface LabStatus {
  readonly name: string;
  readonly backend: LinkBackendName;
  readonly addresses: Readonly<Record<LabHost, string>>;
  readonly link: LinkSpec;
  readonly bottleneck: { readonly down: QdiscStats; readonly up: QdiscStats };
  readonly forwarding: Record<string, unknown> | undefined;
}

const namePattern = /^[a-z][a-z0-9]{0,5}$/;

export function checkName(name: string): void {
  if (!namePattern.test(name))
    throw new E2eError(
      'E2E_ERR_LAB',
      `lab name "${name}" must be 1-6 lowercase letters or digits, starting with a letter ` +
        `(it prefixes interface names)`,
    );
}

export function requireLabPrivileges(): void {
  if (process.platform !== 'linux') throw new E2eError('E2E_ERR_PRIVILEGE', 'the lab needs Linux network namespaces');
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw new E2eError(
      'E2E_ERR_PRIVILEGE',
      'the lab needs root: it creates network namespaces, veth pairs and qdiscs (run it as root, e.g. with sudo)',
    );
  }
  if (spawnSync('ip', ['-V']).status !== 0)
    throw new E2eError('E2E_ERR_PRIVILEGE', 'the lab needs iproute2 (apt-get install iproute2)');
}

export function stateDir(name: string): string {
  return join(labRoot, name);
}

export function namespaceNames(name: string): LabState['namespaces'] {
  return {
    origin: `trickle-${name}-origin`,
    router: `trickle-${name}-router`,
    switch: `trickle-${name}-switch`,
    player: `trickle-${name}-player`,
    cross: `trickle-${name}-cross`,
  };
}

export async function readLabState(name: string): Promise<LabState | undefined> {
  checkName(name);
  try {
    return JSON.parse(await readFile(join(stateDir(name), 'state.json'), 'utf8')) as LabState;
  } catch {
    return undefined;
  }
}

function existingNamespaces(): string[] {
  return run(['ip', 'netns', 'list'])
    .stdout.split('\n')
    .map((line) => line.split(' ')[0]!)
    .filter(Boolean);
}

function killNamespaceProcesses(ns: string): void {
  const pids = run(['ip', 'netns', 'pids', ns], { allowFailure: true }).stdout.split('\n').filter(Boolean).map(Number);
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Removes everything of the lab, even after a crash: processes, namespaces (and their veths), state. */
export async function labDown(name: string): Promise<void> {
  checkName(name);
  requireLabPrivileges();
  const state = await readLabState(name);
  for (const pid of [state?.pids.replay, state?.pids.delayline]) {
    if (pid === undefined) continue;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // already gone
    }
  }
  const prefix = `trickle-${name}-`;
  for (const ns of existingNamespaces().filter((n) => n.startsWith(prefix))) {
    killNamespaceProcesses(ns);
    run(['ip', 'netns', 'del', ns], { allowFailure: true });
  }
  await rm(stateDir(name), { recursive: true, force: true });
}

function sameSpec(a: LinkSpec, b: LinkSpec): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function chooseBackend(requested: LabOptions['backend']): LinkBackendName {
  if (requested !== undefined && requested !== 'auto') {
    if (requested === 'netem') {
      const netem = netemAvailable();
      if (!netem.available)
        throw new E2eError(
          'E2E_ERR_LAB',
          `the netem backend is not available on this kernel (${netem.reason}); use --backend delayline`,
        );
    }
    return requested;
  }
  return netemAvailable().available ? 'netem' : 'delayline';
}

/**
 * The namespaces and their wires: origin <-> router (origin side); router (access side) <-> switch;
 * switch <-> player (and cross). Offloads off everywhere: forwarded frames must be MTU-sized with
 * complete checksums.
 */
export function wireLab(
  name: string,
  namespaces: LabState['namespaces'],
  ports: RouterPorts,
  options: { cross: boolean; prefixLength: number },
): void {
  const cross = options.cross;
  const hosts: LabHost[] = cross ? ['origin', 'player', 'cross'] : ['origin', 'player'];
  for (const ns of [namespaces.router, namespaces.switch, ...hosts.map((h) => namespaces[h])])
    run(['ip', 'netns', 'add', ns]);
  run([
    'ip',
    'link',
    'add',
    `${name}o0`,
    'netns',
    namespaces.origin,
    'type',
    'veth',
    'peer',
    'name',
    ports.originSide,
    'netns',
    namespaces.router,
  ]);
  run([
    'ip',
    'link',
    'add',
    ports.accessSide,
    'netns',
    namespaces.router,
    'type',
    'veth',
    'peer',
    'name',
    `${name}sr`,
    'netns',
    namespaces.switch,
  ]);
  run([
    'ip',
    'link',
    'add',
    `${name}p0`,
    'netns',
    namespaces.player,
    'type',
    'veth',
    'peer',
    'name',
    `${name}sp`,
    'netns',
    namespaces.switch,
  ]);
  if (cross)
    run([
      'ip',
      'link',
      'add',
      `${name}c0`,
      'netns',
      namespaces.cross,
      'type',
      'veth',
      'peer',
      'name',
      `${name}sc`,
      'netns',
      namespaces.switch,
    ]);
  for (const ns of [namespaces.router, namespaces.switch])
    inNs(ns, ['sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1']);
  inNs(namespaces.switch, ['ip', 'link', 'add', 'br0', 'type', 'bridge']);
  const devices: [string, string, string | undefined][] = [
    [namespaces.origin, `${name}o0`, labAddresses.origin],
    [namespaces.player, `${name}p0`, labAddresses.player],
    [namespaces.router, ports.originSide, undefined],
    [namespaces.router, ports.accessSide, undefined],
    [namespaces.switch, `${name}sr`, undefined],
    [namespaces.switch, `${name}sp`, undefined],
    ...(cross
      ? ([
          [namespaces.cross, `${name}c0`, labAddresses.cross],
          [namespaces.switch, `${name}sc`, undefined],
        ] as [string, string, string | undefined][])
      : []),
  ];
  for (const [ns, dev, address] of devices) {
    inNs(ns, ['ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off'], { allowFailure: true });
    if (address !== undefined) inNs(ns, ['ip', 'addr', 'add', `${address}/${options.prefixLength}`, 'dev', dev]);
    if (ns === namespaces.switch) inNs(ns, ['ip', 'link', 'set', dev, 'master', 'br0']);
    inNs(ns, ['ip', 'link', 'set', dev, 'up']);
    inNs(ns, ['ip', 'link', 'set', 'lo', 'up']);
  }
  inNs(namespaces.switch, ['ip', 'link', 'set', 'br0', 'up']);
}

/** Brings the lab up; running it again with the same link is a no-op (idempotent). */
/** Whether a process is running (not gone, not a zombie) and its command line names `program`. */
function running(pid: number, program: string): boolean {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state !== 'Z' && readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(program);
  } catch {
    return false;
  }
}

/** Whether the processes a lab's link runs on are all alive. */
export function labProcessesAlive(state: LabState): boolean {
  const { delayline, replay } = state.pids;
  return (
    (delayline === undefined || running(delayline, 'delayline')) &&
    (replay === undefined || running(replay, 'replay-main'))
  );
}

export async function labUp(name: string, spec: LinkSpec, options: LabOptions = {}): Promise<Lab> {
  checkName(name);
  requireLabPrivileges();
  const cross = options.cross === true;
  const existing = await readLabState(name);
  const namespaces = namespaceNames(name);
  if (
    existing !== undefined &&
    options.shape !== false &&
    sameSpec(existing.spec, spec) &&
    existing.cross === cross &&
    (options.backend === undefined || options.backend === 'auto' || options.backend === existing.backend)
  ) {
    const present = existingNamespaces();
    // Reused only whole: its namespaces there and the processes that make the link (the delay line,
    // a trace's replayer) alive; a run killed midway leaves a lab that would forward nothing.
    if (
      [namespaces.origin, namespaces.router, namespaces.player].every((ns) => present.includes(ns)) &&
      labProcessesAlive(existing)
    )
      return new Lab(existing);
  }
  await labDown(name);
  const backendName = chooseBackend(options.backend);
  const dir = stateDir(name);
  await mkdir(dir, { recursive: true });
  const ports: RouterPorts = {
    routerNs: namespaces.router,
    originSide: `${name}ro`,
    accessSide: `${name}ra`,
    stateDir: dir,
  };
  try {
    wireLab(name, namespaces, ports, { cross, prefixLength: 24 });
    const pids = options.shape === false ? [] : await linkBackends[backendName]().apply(ports, spec);
    const state: LabState = {
      name,
      backend: backendName,
      spec,
      cross,
      namespaces,
      addresses: labAddresses,
      ports,
      pids: { ...(pids[0] === undefined ? {} : { delayline: pids[0] }) },
      createdAt: new Date().toISOString(),
    };
    await writeFile(join(dir, 'state.json'), JSON.stringify(state, null, 2));
    if (spec.trace !== undefined && options.shape !== false) {
      const replay = spawn(process.execPath, [fileURLToPath(new URL('./replay-main.js', import.meta.url)), name], {
        detached: true,
        stdio: 'ignore',
      });
      replay.unref();
      const traceStartedAt = await replayerStarted(dir, replay);
      const withReplay: LabState = { ...state, pids: { ...state.pids, replay: replay.pid! }, traceStartedAt };
      await writeFile(join(dir, 'state.json'), JSON.stringify(withReplay, null, 2));
      return new Lab(withReplay);
    }
    return new Lab(state);
  } catch (error) {
    await labDown(name);
    throw error;
  }
}

/** The file a lab's replayer writes once it has applied its trace's first point: that moment, ISO time. */
export const traceStartedFile = 'trace-started';

/** The file a lab's replayer appends each downlink rate it applied to, one JSON line each (TraceRateChange). */
export const traceRatesFile = 'trace-rates.jsonl';

/** A rate the replayer applied, and when its change returned (the link ran at it from then at the latest). */
export interface TraceRateChange {
  readonly rateBps: number;
  readonly appliedAtEpochMs: number;
}

/**
 * Waits for a new replayer to start its trace (a loaded host took seconds to start a Node process; a
 * guest kernel under emulation, ~3 s): the trace's clock starts there, not at the lab's creation.
 */
async function replayerStarted(dir: string, replay: ChildProcess): Promise<string> {
  const deadlineMs = Date.now() + 60_000;
  while (Date.now() < deadlineMs) {
    const startedAt = await readFile(join(dir, traceStartedFile), 'utf8').catch(() => undefined);
    if (startedAt?.endsWith('\n')) return startedAt.trim();
    if (replay.exitCode !== null || replay.signalCode !== null)
      throw new E2eError(
        'E2E_ERR_LAB',
        `the trace replayer exited (${replay.exitCode ?? replay.signalCode}) before it started`,
      );
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new E2eError('E2E_ERR_LAB', 'the trace replayer did not start its trace within 60 s');
}

export async function openLab(name: string): Promise<Lab> {
  const state = await readLabState(name);
  if (state === undefined)
    throw new E2eError(
      'E2E_ERR_LAB',
      `no lab named "${name}" is up (start it with "trickle lab up ${name} --profile dsl-6mbit")`,
    );
  return new Lab(state);
}

function parseQdiscStats(json: string): QdiscStats {
  const entries = JSON.parse(json) as {
    kind: string;
    bytes?: number;
    packets?: number;
    drops?: number;
    backlog?: number;
  }[];
  const tbf = entries.find((entry) => entry.kind === 'tbf') ?? entries[0];
  return {
    sentBytes: tbf?.bytes ?? 0,
    sentPackets: tbf?.packets ?? 0,
    drops: tbf?.drops ?? 0,
    backlogBytes: tbf?.backlog ?? 0,
  };
}

export class Lab {
  constructor(readonly state: LabState) {}

  get name(): string {
    return this.state.name;
  }

  namespace(host: LabPlace): string {
    if (typeof host === 'object') {
      if (this.state.population?.links[host.viewer] === undefined)
        throw new E2eError('E2E_ERR_LAB', `lab "${this.name}" has no viewer ${host.viewer}`);
      return this.state.viewerNamespaces?.[host.viewer] ?? this.state.namespaces.player;
    }
    if (host === 'cross' && !this.state.cross)
      throw new E2eError('E2E_ERR_LAB', `lab "${this.name}" has no cross host (bring it up with --cross)`);
    return this.state.namespaces[host];
  }

  address(host: LabHost): string {
    return this.state.addresses[host];
  }

  /** Runs a command on a host of the lab and waits for it. */
  exec(host: LabPlace, command: readonly string[], options: SpawnOptions = {}): Promise<number> {
    const child = this.spawn(host, command, { stdio: 'inherit', ...options });
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code, signal) => resolve(code ?? (signal !== null ? 128 : 1)));
    });
  }

  /**
   * Resolves once `url` answers with a 2xx from a host of the lab (one curl a second, `attempts`
   * tries), else throws with the last curl exit code. Every failure is retried, not only refused
   * connections: a host the lab has just wired can be unreachable for one ARP round (curl's own
   * --retry gives up at once on EHOSTUNREACH).
   */
  async waitForHttp(url: string, options: { from?: LabHost; attempts?: number } = {}): Promise<void> {
    const attempts = options.attempts ?? 50;
    let code = 0;
    for (let attempt = 0; attempt < attempts; attempt++) {
      if (attempt > 0) await new Promise((resolve) => setTimeout(resolve, 1000));
      code = await this.exec(
        options.from ?? 'player',
        ['curl', '-sf', '-o', '/dev/null', '--connect-timeout', '2', url],
        { stdio: 'ignore' },
      );
      if (code === 0) return;
    }
    throw new E2eError(
      'E2E_ERR_LAB',
      `${url} did not answer from the ${String(options.from ?? 'player')} side of lab ` +
        `"${this.name}" after ${attempts} tries (last curl exit ${code})`,
    );
  }

  /** Runs a command on a host of the lab and resolves to its standard output (stderr passes through). */
  output(
    host: LabPlace,
    command: readonly string[],
    options: { okExitCodes?: readonly number[] } = {},
  ): Promise<string> {
    const okExitCodes = options.okExitCodes ?? [0];
    const child = this.spawn(host, command, { stdio: ['ignore', 'pipe', 'inherit'] });
    const chunks: Buffer[] = [];
    child.stdout!.on('data', (chunk: Buffer) => chunks.push(chunk));
    return new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => {
        if (code !== null && okExitCodes.includes(code)) resolve(Buffer.concat(chunks).toString());
        else
          reject(
            new E2eError(
              'E2E_ERR_LAB',
              `${command.join(' ')} exited with ${code ?? 'a signal'} in ${this.namespace(host)}`,
            ),
          );
      });
    });
  }

  spawn(host: LabPlace, command: readonly string[], options: SpawnOptions = {}): ChildProcess {
    if (command.length === 0) throw new E2eError('E2E_ERR_LAB', 'no command to run');
    return spawn('ip', ['netns', 'exec', this.namespace(host), ...command], options);
  }

  setRate(direction: 'down' | 'up', rateBps: number): void {
    const spec: DirectionSpec = { ...this.state.spec[direction], rateBps };
    linkBackends[this.state.backend]().setRate(this.state.ports, direction, spec);
  }

  /**
   * The downlink rates a lab's trace replayer applied so far, in order: where a trace's step took effect, which a
   * slow host (a guest kernel under emulation spends ~1 s starting `tc`) makes later than the trace says.
   */
  async traceRateChanges(): Promise<TraceRateChange[]> {
    const text = await readFile(join(this.state.ports.stateDir, traceRatesFile), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((line) => line.endsWith('}'))
      .map((line) => JSON.parse(line) as TraceRateChange);
  }

  async setDelay(downMs: number, upMs: number): Promise<void> {
    await linkBackends[this.state.backend]().setDelay(this.state.ports, downMs, upMs, this.state.spec);
  }

  async status(): Promise<LabStatus> {
    const stats = (dev: string) =>
      parseQdiscStats(inNs(this.state.namespaces.router, ['tc', '-s', '-j', 'qdisc', 'show', 'dev', dev]).stdout);
    return {
      name: this.name,
      backend: this.state.backend,
      addresses: this.state.addresses,
      link: this.state.spec,
      bottleneck: { down: stats(this.state.ports.accessSide), up: stats(this.state.ports.originSide) },
      forwarding: await this.forwardingStats(),
    };
  }

  /** What the link's random loss saw in one direction since it came up (see LinkBackend.randomLossCounters). */
  randomLossCounters(direction: 'down' | 'up'): Promise<{ offered: number; dropped: number }> {
    return linkBackends[this.state.backend]().randomLossCounters(this.state.ports, direction);
  }

  /** The backend's own forwarding counters (the delay line's), without reading the queues. */
  forwardingStats(): Promise<Record<string, unknown> | undefined> {
    return linkBackends[this.state.backend]().forwardingStats(this.state.ports);
  }

  down(): Promise<void> {
    return labDown(this.name);
  }
}
