/**
 * A population lab: the lab's namespaces (origin -- router -- switch -- player) with one access
 * link per viewer instead of one for all. Every viewer has its own address in the player namespace
 * (10.73.x.y/16, population.ts); in the router, an HTB class per viewer and direction (rate, and a
 * byte-limited tail-drop FIFO as its buffer) under one parent at the origin's uplink rate, chosen
 * by the viewer's address through a u32 hash on its last byte, and one delay line process holding
 * each frame for its own viewer's delay (--links). So viewers share the origin's uplink as in a real
 * network while each queues in a buffer of its own.
 *
 * Always the delay line, also where netem exists: netem's queue limit counts the frames it is
 * delaying, so a netem leaf cannot be a viewer's byte-sized buffer.
 */
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { E2eError } from '../errors.js';
import { startDelayline } from './delayline-backend.js';
import {
  checkName,
  Lab,
  labAddresses,
  labDown,
  namespaceNames,
  requireLabPrivileges,
  stateDir,
  wireLab,
  type LabState,
} from './lab.js';
import { tbfBurstBytes, type RouterPorts } from './link-backend.js';
import type { DirectionSpec, LinkSpec } from './link-spec.js';
import type { AccessLink, LinkPopulation } from './population.js';
import { inNs, run, runBatch } from './shell.js';

/** HTB class (and leaf qdisc handle) of viewer i: minor ids from 0x10; 1:1 is the uplink, 1:2 everything else. */
const classMinor = (viewer: number) => (0x10 + viewer).toString(16);

function lastByte(address: string): number {
  return Number(address.split('.')[3]);
}

/**
 * The tc commands of one direction: `match` is `dst` on the downlink (the viewer receives) and
 * `src` on the uplink; the hash key is the address's last byte (at 16 for dst, 12 for src, plus 3).
 */
export function populationTcCommands(dev: string, direction: 'down' | 'up', population: LinkPopulation): string[] {
  const uplink = Math.round(population.uplinkRateBps);
  const burst = tbfBurstBytes(uplink);
  const field = direction === 'down' ? 'dst' : 'src';
  const lines = [
    `qdisc replace dev ${dev} root handle 1: htb default 2`,
    `class add dev ${dev} parent 1: classid 1:1 htb rate ${uplink}bit ceil ${uplink}bit ` +
      `burst ${burst} cburst ${burst} quantum 1514`,
    // Everything that is no viewer's (ARP, the player host's own address): the uplink's rate, a deep FIFO.
    `class add dev ${dev} parent 1:1 classid 1:2 htb rate ${uplink}bit ` +
      `ceil ${uplink}bit burst ${burst} cburst ${burst} quantum 1514`,
    `qdisc add dev ${dev} parent 1:2 handle 2: pfifo limit 10000`,
    `filter add dev ${dev} parent 1: prio 1 handle 100: protocol ip u32 divisor 256`,
    `filter add dev ${dev} parent 1: prio 1 protocol ip u32 ht 800:: match ip ${field} ` +
      `10.73.0.0/16 hashkey mask 0x000000ff at ${direction === 'down' ? 16 : 12} link 100:`,
  ];
  for (const link of population.links) {
    const spec: DirectionSpec = link[direction];
    const rate = Math.round(spec.rateBps);
    const linkBurst = tbfBurstBytes(rate);
    const minor = classMinor(link.viewer);
    lines.push(
      `class add dev ${dev} parent 1:1 classid 1:${minor} htb rate ${rate}bit ` +
        `ceil ${rate}bit burst ${linkBurst} cburst ${linkBurst} quantum 1514`,
      `qdisc add dev ${dev} parent 1:${minor} handle ${minor}: bfifo limit ${Math.max(spec.bufferBytes, linkBurst)}`,
      `filter add dev ${dev} parent 1: prio 1 protocol ip u32 ht ` +
        `100:${lastByte(link.address).toString(16)}: match ip ${field} ${link.address}/32 ` +
        `flowid 1:${minor}`,
    );
  }
  return lines;
}

/**
 * The delay line's --links file: "<address> <delay-ab-us> <delay-ba-us> <loss-ab> <loss-ba>" (a->b is the downlink).
 */
export function delaylineLinksText(population: LinkPopulation): string {
  const line = (l: LinkPopulation['links'][number]) =>
    `${l.address} ${Math.round(l.down.delayMs * 1000)} ${Math.round(l.up.delayMs * 1000)} ` +
    `${l.down.lossRate} ${l.up.lossRate}`;
  return `${population.links.map(line).join('\n')}\n`;
}

/** The link of frames that are no viewer's: the uplink's rate, no delay, no loss. */
function otherTraffic(population: LinkPopulation): LinkSpec {
  const direction: DirectionSpec = {
    rateBps: population.uplinkRateBps,
    delayMs: 0,
    lossRate: 0,
    bufferBytes: 10_000 * 1514,
  };
  return { down: direction, up: direction, seed: population.seed };
}

/** A viewer's own host: a namespace on the switch holding only the viewer's address. */
function addViewerHost(name: string, switchNs: string, viewer: number, address: string): string {
  const ns = `trickle-${name}-v${viewer}`;
  const hostEnd = `${name}v${viewer}`;
  const switchEnd = `${name}w${viewer}`;
  run(['ip', 'netns', 'add', ns]);
  run(['ip', 'link', 'add', hostEnd, 'netns', ns, 'type', 'veth', 'peer', 'name', switchEnd, 'netns', switchNs]);
  for (const [where, dev] of [
    [ns, hostEnd],
    [switchNs, switchEnd],
  ] as const)
    inNs(where, ['ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off'], { allowFailure: true });
  inNs(ns, ['ip', 'addr', 'add', `${address}/16`, 'dev', hostEnd]);
  inNs(switchNs, ['ip', 'link', 'set', switchEnd, 'master', 'br0']);
  for (const [where, dev] of [
    [ns, hostEnd],
    [ns, 'lo'],
    [switchNs, switchEnd],
  ] as const)
    inNs(where, ['ip', 'link', 'set', dev, 'up']);
  return ns;
}

/**
 * The kernel's IPv4 neighbour table is one for all namespaces (its limits live in the initial
 * one): the origin keeps an entry per viewer, and past gc_thresh3 new connections fail.
 */
function checkNeighbourTable(viewers: number): void {
  const limit = Number(readFileSync('/proc/sys/net/ipv4/neigh/default/gc_thresh3', 'utf8'));
  if (viewers + 64 > limit) {
    throw new E2eError(
      'E2E_ERR_LAB',
      `${viewers} viewers need more neighbour entries than the kernel keeps ` +
        `(net.ipv4.neigh.default.gc_thresh3 = ${limit}); raise it: sysctl -w ` +
        `net.ipv4.neigh.default.gc_thresh3=${2 * viewers + 1024}`,
    );
  }
}

export interface PopulationLabOptions {
  /**
   * Viewers that get a network namespace of their own on the access network instead of an address
   * in the shared player namespace: programs that cannot choose their source address (Chromium)
   * run there. Lab.namespace({ viewer }) names it.
   */
  readonly ownHosts?: readonly number[];
}

/** Brings a population lab up (replacing any lab of that name). */
export async function populationUp(
  name: string,
  population: LinkPopulation,
  options: PopulationLabOptions = {},
): Promise<Lab> {
  checkName(name);
  requireLabPrivileges();
  checkNeighbourTable(population.links.length);
  await labDown(name);
  const namespaces = namespaceNames(name);
  const dir = stateDir(name);
  await mkdir(dir, { recursive: true });
  const ports: RouterPorts = {
    routerNs: namespaces.router,
    originSide: `${name}ro`,
    accessSide: `${name}ra`,
    stateDir: dir,
  };
  try {
    wireLab(name, namespaces, ports, { cross: false, prefixLength: 16 });
    const ownHosts = new Set(options.ownHosts ?? []);
    for (const viewer of ownHosts)
      if (population.links[viewer] === undefined)
        throw new E2eError(
          'E2E_ERR_LAB',
          `viewer ${viewer} of an own host is not in the population (0..${population.links.length - 1})`,
        );
    runBatch(
      namespaces.player,
      'ip',
      population.links
        .filter((link) => !ownHosts.has(link.viewer))
        .map((link) => `addr add ${link.address}/16 dev ${name}p0`),
    );
    const viewerNamespaces: Record<number, string> = {};
    for (const viewer of ownHosts)
      viewerNamespaces[viewer] = addViewerHost(name, namespaces.switch, viewer, population.links[viewer]!.address);
    runBatch(namespaces.router, 'tc', [
      ...populationTcCommands(ports.accessSide, 'down', population),
      ...populationTcCommands(ports.originSide, 'up', population),
    ]);
    const linksFile = join(dir, 'delayline.links');
    await writeFile(linksFile, delaylineLinksText(population));
    const spec = otherTraffic(population);
    const delayline = await startDelayline(ports, spec, linksFile);
    const state: LabState = {
      name,
      backend: 'delayline',
      spec,
      cross: false,
      namespaces,
      addresses: labAddresses,
      ports,
      pids: { delayline },
      createdAt: new Date().toISOString(),
      population,
      viewerNamespaces,
    };
    await writeFile(join(dir, 'state.json'), JSON.stringify(state, null, 2));
    return new Lab(state);
  } catch (error) {
    await labDown(name);
    throw error;
  }
}

/** One viewer's link as the router sees it: the bottleneck queue of each direction and the delay line's counts. */
export interface ViewerLinkStatus {
  readonly viewer: number;
  readonly address: string;
  readonly down: {
    readonly sentBytes: number;
    readonly sentPackets: number;
    readonly drops: number;
    readonly backlogBytes: number;
    readonly framesIn: number;
  };
  readonly up: {
    readonly sentBytes: number;
    readonly sentPackets: number;
    readonly drops: number;
    readonly backlogBytes: number;
    readonly framesIn: number;
  };
}

interface TcQdiscJson {
  readonly kind: string;
  readonly handle: string;
  readonly parent?: string;
  readonly bytes?: number;
  readonly packets?: number;
  readonly drops?: number;
  readonly backlog?: number;
}

interface DelaylineLinkJson {
  readonly address: string;
  readonly ab: { readonly received: number };
  readonly ba: { readonly received: number };
}

/** Every viewer's link counters, from the leaf FIFOs' statistics and the delay line. */
export async function populationStatus(lab: Lab): Promise<ViewerLinkStatus[]> {
  return (await timedPopulationStatus(lab)).links;
}

/**
 * The counters, and when the downlink queues were read: the one `tc -s` call that read them began at `fromMs` and
 * returned at `toMs` (performance.now()), so the kernel counted them in between. Rates over a window are bounded by
 * these (a host stall can hold a call for hundreds of ms: dated at one point, it stretched or shortened the window).
 */
export async function timedPopulationStatus(lab: Lab): Promise<{
  readonly links: ViewerLinkStatus[];
  readonly downReadMs: { readonly fromMs: number; readonly toMs: number };
}> {
  const population = lab.state.population;
  if (population === undefined)
    throw new E2eError(
      'E2E_ERR_LAB',
      `lab "${lab.name}" is not a population lab (bring one up with "trickle lab ` +
        `up ${lab.name} --population dc1-like --viewers 100")`,
    );
  const leaves = (dev: string) => {
    const byParent = new Map<string, TcQdiscJson>();
    for (const q of JSON.parse(
      inNs(lab.state.namespaces.router, ['tc', '-s', '-j', 'qdisc', 'show', 'dev', dev]).stdout,
    ) as TcQdiscJson[]) {
      if (q.parent !== undefined) byParent.set(q.parent, q);
    }
    return byParent;
  };
  const downFromMs = performance.now();
  const down = leaves(lab.state.ports.accessSide);
  const downToMs = performance.now();
  const up = leaves(lab.state.ports.originSide);
  // Only the delay line's counters: the queues are read above, leaf by leaf.
  const forwarding = (await lab.forwardingStats()) as { links?: DelaylineLinkJson[] } | undefined;
  const framesIn = new Map((forwarding?.links ?? []).map((l) => [l.address, l]));
  const side = (leaf: TcQdiscJson | undefined, frames: number | undefined) => ({
    sentBytes: leaf?.bytes ?? 0,
    sentPackets: leaf?.packets ?? 0,
    drops: leaf?.drops ?? 0,
    backlogBytes: leaf?.backlog ?? 0,
    framesIn: frames ?? 0,
  });
  const links = population.links.map((link: AccessLink) => ({
    viewer: link.viewer,
    address: link.address,
    down: side(down.get(`1:${classMinor(link.viewer)}`), framesIn.get(link.address)?.ab.received),
    up: side(up.get(`1:${classMinor(link.viewer)}`), framesIn.get(link.address)?.ba.received),
  }));
  return { links, downReadMs: { fromMs: downFromMs, toMs: downToMs } };
}
