/**
 * Checking a population lab link by link, at the population's load: in each round a share of the
 * viewers gets a datagram flood at 1.1x its link's rate (its queue never empties, so what it sends
 * is the link's rate) while another share measures its idle RTT (ping from its own address),
 * until every viewer has been loaded once and pinged once: every link's RTT is read while the
 * delay line and the queues carry others' traffic. Then a datagram burst larger than each
 * viewer's buffer, a few viewers at a time: each viewer's drops must be at its own queue, and none
 * outside the batch. Used by the population test (which asserts) and `trickle bench population`
 * (which writes the table).
 */
import { machineCpuSeconds, processCpuSeconds, type MachineCpuSeconds } from './cpu-time.js';
import type { Lab } from './lab.js';
import { populationStatus, timedPopulationStatus, type ViewerLinkStatus } from './population-lab.js';
import type { AccessLink } from './population.js';
import { startPeer } from './traffic.js';
import { E2eError } from '../errors.js';
import { tbfBurstBytes } from './link-backend.js';

export interface LinkAccuracy {
  readonly viewer: number;
  readonly address: string;
  readonly rateBps: number;
  readonly rttMs: number;
  readonly bufferBytes: number;
  /**
   * Ping RTT from the viewer's address while other viewers were loaded: the trimmed mean of its
   * echoes (parsePingOutput; NaN: none came back). The echoes are kept beside it.
   */
  readonly measuredRttMs: number;
  /** Every echo's RTT as ping printed it (whole milliseconds from 100 ms on), in the order they came back. */
  readonly echoRttsMs: readonly number[];
  /**
   * What the viewer's downlink queue sent over the window (frames with their headers) under its flood: the link's rate,
   * over the window's middle length.
   */
  readonly linkRateBps: number;
  /**
   * The rates the readings allow: the window lies between its shortest and longest length the two readings' calls
   * allow, and a whole frame may straddle each of its edges.
   */
  readonly linkRateRangeBps: { readonly low: number; readonly high: number };
  /** The queue held a backlog at both ends of the window (the flood kept it busy). */
  readonly backlogged: boolean;
  /**
   * Frames the viewer's downlink queue sent during its flood per datagram that reached the viewer
   * (at its own address; read by its socket or dropped by its receive buffer): 1 when every
   * datagram to it crossed its own link and nothing else did.
   */
  readonly queueFramesPerReceived: number;
  /**
   * The burst: datagrams sent, received, dropped at this viewer's queue, and at the queues of viewers outside its
   * batch.
   */
  readonly burst: {
    readonly sent: number;
    readonly received: number;
    readonly dropsHere: number;
    readonly dropsElsewhere: number;
    /** The buffer and the bucket in frames: what a burst arriving at once gets through. */
    readonly fits: number;
    /** That plus what the link sends while the burst arrives (the batch's longest sender's time and 5 ms). */
    readonly atMost: number;
  };
}

export interface PopulationAccuracy {
  readonly links: readonly LinkAccuracy[];
  /** Viewers loaded at once: the population / rounds. */
  readonly loadedViewers: number;
  /**
   * Share of one core the delay line used while a round's viewers were loaded (its sends carry the frames through the
   * veths and queues).
   */
  readonly delaylineCoreShare: number;
  /** Share of the whole machine busy (all cores) meanwhile: origin and viewers' TCP, the delay line, the queues. */
  readonly machineBusyShare: number;
  /** What a round's loaded viewers' queues sent together (the load the lab carried), mean over the rounds. */
  readonly loadedRateBps: number;
}

export interface PopulationAccuracyOptions {
  /**
   * The population is measured in this many rounds (default 2): round r loads the viewers with
   * viewer % rounds = r and pings those of the next round, so 1/rounds of the population is
   * loaded at a time.
   */
  readonly rounds?: number;
  /** Length of each round's floods (default 8 s); the rate window is [fromMs, durationMs - 500). */
  readonly durationMs?: number;
  readonly fromMs?: number;
  /** Echoes per idle viewer, 0.2 s apart, within the window (default 20). */
  readonly pings?: number;
  readonly onProgress?: (what: string) => void;
}

/** Busy: all but idle and iowait (steal counts: the lab's work waited for it). */
const busySeconds = (machine: MachineCpuSeconds) => machine.total - machine.idle - machine.iowait;

export interface PingResult {
  /** The trimmed mean RTT (see parsePingOutput; NaN: no echo came back). */
  readonly trimmedMeanMs: number;
  /** Every echo's RTT as ping printed it (whole milliseconds from 100 ms on). */
  readonly echoesMs: readonly number[];
}

/** Share of the echoes left out at each end of the trimmed mean (at least one each side from 3 echoes). */
const trimShare = 0.15;

/**
 * What iputils ping printed, as a trimmed mean: the fastest and slowest 15 % of the echoes left out
 * (at least one each). This machine is a VM whose host takes its CPUs now and then (1-6 % steal):
 * such a stall holds every echo in flight at once by 10-20 ms, and is not the lab's delay. The sum
 * comes from ping's summary, which is exact (mean x received), and so do the min and the max; the
 * other echoes left out are taken as printed, which is whole milliseconds from 100 ms on, so the
 * result is within 0.5 ms x (left out - 2) / (kept) of the exact trimmed mean (0.14 ms for 20 echoes).
 */
export function parsePingOutput(text: string): PingResult {
  const echoesMs = [...text.matchAll(/ time=([\d.]+) ms(?! \(DUP!\))/g)].map((match) => Number(match[1]));
  const received = /(\d+) received/.exec(text);
  const summary = /= ([\d.]+)\/([\d.]+)\/([\d.]+)\//.exec(text);
  if (received === null || summary === null || Number(received[1]) === 0)
    return { trimmedMeanMs: Number.NaN, echoesMs };
  const [count, minMs, meanMs, maxMs] = [
    Number(received[1]),
    Number(summary[1]),
    Number(summary[2]),
    Number(summary[3]),
  ];
  if (count < 3) return { trimmedMeanMs: meanMs, echoesMs };
  // Without every echo's line (ping -q) only the exact min and max can be left out.
  const perSide = echoesMs.length === count ? Math.max(1, Math.floor(count * trimShare)) : 1;
  const sorted = [...echoesMs].sort((a, b) => a - b);
  let leftOutMs = minMs + maxMs;
  for (let i = 1; i < perSide; i++) leftOutMs += sorted[i]! + sorted[count - 1 - i]!;
  return { trimmedMeanMs: (meanMs * count - leftOutMs) / (count - 2 * perSide), echoesMs };
}

async function pingFromViewer(lab: Lab, link: AccessLink, count: number): Promise<PingResult> {
  return parsePingOutput(
    await lab.output(
      { viewer: link.viewer },
      ['ping', '-n', '-I', link.address, '-c', String(count), '-i', '0.2', '-W', '5', lab.address('origin')],
      { okExitCodes: [0, 1] },
    ),
  );
}

function byViewer(statuses: readonly ViewerLinkStatus[]): Map<number, ViewerLinkStatus> {
  return new Map(statuses.map((s) => [s.viewer, s]));
}

interface RoundResult {
  readonly received: Map<string, number>;
  readonly linkRateBps: Map<number, number>;
  readonly linkRateRangeBps: Map<number, { readonly low: number; readonly high: number }>;
  readonly backlogged: Map<number, boolean>;
  readonly pings: Map<string, PingResult>;
  readonly before: Map<number, ViewerLinkStatus>;
  readonly after: Map<number, ViewerLinkStatus>;
  readonly coreShare: number;
  readonly machineShare: number;
}

const floodDatagramBytes = 1472;
/** A flood datagram on the wire as the queue counts it: UDP, IP and Ethernet headers on. */
const floodFrameBytes = floodDatagramBytes + 42;

async function loadRound(
  lab: Lab,
  loaded: readonly AccessLink[],
  idle: readonly AccessLink[],
  options: { durationMs: number; fromMs: number; pings: number },
  port: number,
): Promise<RoundResult> {
  const toMs = options.durationMs - 500;
  // One sink per namespace the loaded viewers live in (the shared player namespace, own hosts), a socket per viewer's
  // address.
  const byNamespace = new Map<string, AccessLink[]>();
  for (const link of loaded) {
    const ns = lab.namespace({ viewer: link.viewer });
    byNamespace.set(ns, [...(byNamespace.get(ns) ?? []), link]);
  }
  const sinks = [...byNamespace.values()].map((links) =>
    startPeer(lab, { viewer: links[0]!.viewer }, [
      'udp-sinks',
      String(port),
      '1500',
      links.map((l) => l.address).join(','),
    ]),
  );
  for (const sink of sinks) await sink.message((m) => m.listening === true);
  const before = byViewer(await populationStatus(lab));
  const pid = lab.state.pids.delayline!;
  const cpuBefore = processCpuSeconds(pid);
  const machineBefore = machineCpuSeconds();
  const startedMs = performance.now();
  const flood = startPeer(lab, 'origin', [
    'udp-floods',
    String(port),
    String(options.durationMs),
    String(floodDatagramBytes),
    loaded.map((l) => `${l.address}=${Math.round(l.down.rateBps * 1.1)}`).join(','),
  ]);
  const until = (ms: number) =>
    new Promise((resolve) => setTimeout(resolve, Math.max(0, ms - (performance.now() - startedMs))));
  await until(options.fromMs);
  // Each edge of the window is when one `tc -s` call read every viewer's queue: known to lie between the call's start
  // and return. Dated at one point, a call a host stall held stretched or shortened the window (CI: a 9.13 Mbit/s
  // queue read as 8.59 when dated at the call's end; the hunt: a 0.32 Mbit/s one as 0.334 when dated at its start).
  const windowStartTimed = await timedPopulationStatus(lab);
  const windowStart = { status: byViewer(windowStartTimed.links), readMs: windowStartTimed.downReadMs };
  const pingResults = new Map<string, PingResult>();
  const pings = Promise.all(
    idle.map(async (link) => pingResults.set(link.address, await pingFromViewer(lab, link, options.pings))),
  );
  await until(toMs);
  const windowEndTimed = await timedPopulationStatus(lab);
  const windowEnd = { status: byViewer(windowEndTimed.links), readMs: windowEndTimed.downReadMs };
  await pings;
  await until(options.durationMs);
  const coreShare = (processCpuSeconds(pid) - cpuBefore) / ((performance.now() - startedMs) / 1000);
  const machineAfter = machineCpuSeconds();
  const machineShare =
    (busySeconds(machineAfter) - busySeconds(machineBefore)) / (machineAfter.total - machineBefore.total);
  await flood.exited;
  const received = new Map<string, number>();
  for (const sink of sinks) {
    const report = await sink.message<{ received: Record<string, { datagrams: number; drops: number }> }>(
      (m) => 'received' in m,
    );
    // Datagrams that reached the viewer's host: those its socket read, and those its receive buffer
    // dropped (a sink starved of CPU: CI read 1.0042 frames per datagram read).
    for (const [address, count] of Object.entries(report.received))
      received.set(address, count.datagrams + count.drops);
  }
  const after = byViewer(await populationStatus(lab));
  const shortestSec = (windowEnd.readMs.fromMs - windowStart.readMs.toMs) / 1000;
  const longestSec = (windowEnd.readMs.toMs - windowStart.readMs.fromMs) / 1000;
  const sentBytes = (link: AccessLink) =>
    windowEnd.status.get(link.viewer)!.down.sentBytes - windowStart.status.get(link.viewer)!.down.sentBytes;
  const linkRateBps = new Map(
    loaded.map((link) => [link.viewer, (sentBytes(link) * 8) / ((shortestSec + longestSec) / 2)]),
  );
  const linkRateRangeBps = new Map(
    loaded.map((link) => [
      link.viewer,
      {
        low: (Math.max(0, sentBytes(link) - floodFrameBytes) * 8) / longestSec,
        high: ((sentBytes(link) + floodFrameBytes) * 8) / shortestSec,
      },
    ]),
  );
  const backlogged = new Map(
    loaded.map((link) => [
      link.viewer,
      windowStart.status.get(link.viewer)!.down.backlogBytes > 0 &&
        windowEnd.status.get(link.viewer)!.down.backlogBytes > 0,
    ]),
  );
  return {
    received,
    linkRateBps,
    linkRateRangeBps,
    backlogged,
    pings: pingResults,
    before,
    after,
    coreShare,
    machineShare,
  };
}

/**
 * How many datagrams of `datagramBytes` a queue of `bufferBytes` behind a bucket of `burstBytes` lets through from one
 * burst.
 */
function burstCapacity(bufferBytes: number, rateBps: number, frameBytes: number): number {
  return Math.floor((Math.max(bufferBytes, tbfBurstBytes(rateBps)) + tbfBurstBytes(rateBps)) / frameBytes);
}

/** The datagrams of a viewer's burst: twice what its queue holds, and 20 more. */
const burstDatagrams = (link: AccessLink, frameBytes: number) =>
  2 * burstCapacity(link.down.bufferBytes, link.down.rateBps, frameBytes) + 20;

export async function measurePopulationAccuracy(
  lab: Lab,
  options: PopulationAccuracyOptions = {},
): Promise<PopulationAccuracy> {
  const population = lab.state.population;
  if (population === undefined) throw new E2eError('E2E_ERR_LAB', `lab "${lab.name}" is not a population lab`);
  const settings = {
    durationMs: options.durationMs ?? 8000,
    fromMs: options.fromMs ?? 2000,
    pings: options.pings ?? 20,
  };
  const rounds = options.rounds ?? 2;
  if (!Number.isInteger(rounds) || rounds < 2 || rounds > population.links.length)
    throw new E2eError('E2E_ERR_LAB', `rounds must be 2..${population.links.length} (got ${rounds})`);
  const progress = options.onProgress ?? (() => undefined);
  const links = population.links;
  // Neighbour entries both ways before anything is timed: a first echo waits for ARP.
  progress(`resolving ${links.length} viewers' addresses`);
  await Promise.all(
    links.map((link) =>
      lab.exec(
        { viewer: link.viewer },
        ['ping', '-q', '-c', '1', '-W', '5', '-I', link.address, lab.address('origin')],
        { stdio: 'ignore' },
      ),
    ),
  );
  const groups = Array.from({ length: rounds }, (_, r) => links.filter((l) => l.viewer % rounds === r));
  const roundResults: RoundResult[] = [];
  for (let r = 0; r < rounds; r++) {
    const pinged = groups[(r + 1) % rounds]!;
    progress(`round ${r + 1}/${rounds}: floods on ${groups[r]!.length} links, pings on ${pinged.length}`);
    roundResults.push(await loadRound(lab, groups[r]!, pinged, settings, 7301 + r));
  }
  const datagramBytes = floodDatagramBytes;
  const frameBytes = datagramBytes + 42;
  const bursts = new Map<number, LinkAccuracy['burst']>();
  // Bursts to a few viewers at once (distinct ports), small enough together for the delay line's
  // queue: each viewer's drops must be at its own queue, and none at any queue outside the batch.
  const batches: AccessLink[][] = [];
  let frames = 0;
  for (const link of links) {
    const sent = burstDatagrams(link, frameBytes);
    const last = batches[batches.length - 1];
    if (last === undefined || last.length >= 5 || frames + sent > 6000) {
      batches.push([link]);
      frames = sent;
    } else {
      last.push(link);
      frames += sent;
    }
  }
  for (const [index, batch] of batches.entries()) {
    progress(
      `bursts into the buffers of viewers ${batch.map((l) => l.viewer).join(', ')} (${index + 1}/${batches.length})`,
    );
    const statusBefore = byViewer(await populationStatus(lab));
    const received = await Promise.all(
      batch.map(async (link, slot) => {
        const port = String(7400 + slot);
        const sent = burstDatagrams(link, frameBytes);
        const sink = startPeer(lab, { viewer: link.viewer }, ['udp-sink', port, '1500']);
        await sink.message((m) => m.listening === true);
        const burst = startPeer(lab, 'origin', ['udp-burst', link.address, port, String(sent), String(datagramBytes)]);
        const { elapsedUs } = await burst.message<{ elapsedUs: number }>((m) => 'sent' in m);
        return {
          link,
          sent,
          elapsedUs,
          received: (await sink.message<{ received: number }>((m) => 'received' in m)).received,
        };
      }),
    ).then((bursts) => {
      // The batch's bursts share the delay line, which interleaves their frames: each arrives at its
      // link over the longest sender's time, plus 5 ms of the line's own work for a few hundred frames.
      const arrivalSec = Math.max(...bursts.map((b) => b.elapsedUs)) / 1e6 + 0.005;
      return bursts.map(({ link, sent, received }) => {
        const fits = burstCapacity(link.down.bufferBytes, link.down.rateBps, frameBytes);
        // What fits: the buffer and the bucket; at most that and what the link sends while the burst arrives.
        return { sent, received, fits, atMost: fits + Math.ceil(((link.down.rateBps / 8) * arrivalSec) / frameBytes) };
      });
    });
    const statusAfter = byViewer(await populationStatus(lab));
    const inBatch = new Set(batch.map((l) => l.viewer));
    const dropsOutside = links
      .filter((other) => !inBatch.has(other.viewer))
      .reduce(
        (sum, other) => sum + statusAfter.get(other.viewer)!.down.drops - statusBefore.get(other.viewer)!.down.drops,
        0,
      );
    for (const [slot, link] of batch.entries()) {
      bursts.set(link.viewer, {
        ...received[slot]!,
        dropsHere: statusAfter.get(link.viewer)!.down.drops - statusBefore.get(link.viewer)!.down.drops,
        dropsElsewhere: dropsOutside,
      });
    }
  }
  const results: LinkAccuracy[] = links.map((link) => {
    const loadedIn = roundResults[link.viewer % rounds]!;
    // Viewers of group g are pinged in the round before theirs.
    const pingedIn = roundResults[((link.viewer % rounds) + rounds - 1) % rounds]!;
    const received = loadedIn.received.get(link.address) ?? 0;
    const framesHere =
      loadedIn.after.get(link.viewer)!.down.sentPackets - loadedIn.before.get(link.viewer)!.down.sentPackets;
    return {
      viewer: link.viewer,
      address: link.address,
      rateBps: link.down.rateBps,
      rttMs: link.down.delayMs + link.up.delayMs,
      bufferBytes: link.down.bufferBytes,
      measuredRttMs: pingedIn.pings.get(link.address)?.trimmedMeanMs ?? Number.NaN,
      echoRttsMs: pingedIn.pings.get(link.address)?.echoesMs ?? [],
      linkRateBps: loadedIn.linkRateBps.get(link.viewer) ?? 0,
      linkRateRangeBps: loadedIn.linkRateRangeBps.get(link.viewer) ?? { low: 0, high: 0 },
      backlogged: loadedIn.backlogged.get(link.viewer) ?? false,
      queueFramesPerReceived: received === 0 ? Number.NaN : framesHere / received,
      burst: bursts.get(link.viewer)!,
    };
  });
  const meanOver = (pick: (round: RoundResult) => number) =>
    roundResults.reduce((sum, round) => sum + pick(round), 0) / rounds;
  return {
    links: results,
    loadedViewers: Math.round(links.length / rounds),
    delaylineCoreShare: meanOver((round) => round.coreShare),
    machineBusyShare: meanOver((round) => round.machineShare),
    loadedRateBps: meanOver((round) => [...round.linkRateBps.values()].reduce((sum, rate) => sum + rate, 0)),
  };
}
