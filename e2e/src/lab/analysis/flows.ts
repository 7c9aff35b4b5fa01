/**
 * Per-flow analysis of captured TCP data packets, the paper's measures: burst sizes (Blanton et
 * al.: four or more data packets whose inter-arrival times are all <= 1 ms), retransmitted
 * segments, bytes over time for time-sequence plots, and goodput. Pure and unit-tested.
 */
import type { TcpPacket } from './pcap.js';

export interface DataPacket {
  readonly timeUs: number;
  /** Sequence offset from the flow's first data byte (wraps handled). */
  readonly offset: number;
  readonly payloadBytes: number;
  readonly retransmission: boolean;
}

export interface FlowAnalysis {
  /** "src:port>dst:port" of the data direction. */
  readonly flow: string;
  readonly packets: readonly DataPacket[];
  readonly dataPackets: number;
  readonly retransmittedPackets: number;
  readonly bytes: number;
  readonly durationUs: number;
  /** Unique (non-retransmitted) bytes per second of the flow's duration, bits/s. */
  readonly goodputBps: number;
  /** Sizes, in packets, of every burst (runs of >= minBurst packets spaced <= gap). */
  readonly bursts: readonly number[];
}

export interface BurstOptions {
  readonly gapUs: number;
  readonly minPackets: number;
}

export const paperBurstDefinition: BurstOptions = { gapUs: 1000, minPackets: 4 };

/** Bursts in a sorted list of send times: maximal runs with every gap <= gapUs, kept if long enough. */
export function detectBursts(timesUs: readonly number[], options: BurstOptions = paperBurstDefinition): number[] {
  const bursts: number[] = [];
  let run = timesUs.length > 0 ? 1 : 0;
  for (let i = 1; i < timesUs.length; i++) {
    if (timesUs[i]! - timesUs[i - 1]! <= options.gapUs) {
      run++;
    } else {
      if (run >= options.minPackets) bursts.push(run);
      run = 1;
    }
  }
  if (run >= options.minPackets) bursts.push(run);
  return bursts;
}

const seqSpace = 2 ** 32;

/** Data packets grouped by flow (direction), with retransmissions marked by sequence. */
export function analyzeFlows(
  packets: readonly TcpPacket[],
  options: BurstOptions = paperBurstDefinition,
): FlowAnalysis[] {
  const byFlow = new Map<string, TcpPacket[]>();
  for (const packet of packets) {
    if (packet.payloadBytes === 0) continue;
    const key = `${packet.src}:${packet.srcPort}>${packet.dst}:${packet.dstPort}`;
    let list = byFlow.get(key);
    if (list === undefined) {
      list = [];
      byFlow.set(key, list);
    }
    list.push(packet);
  }
  const flows: FlowAnalysis[] = [];
  for (const [flow, list] of byFlow) {
    list.sort((a, b) => a.timeUs - b.timeUs);
    const base = list[0]!.seq;
    let highest = 0;
    let unwrapped = 0;
    let previousSeq = base;
    const data: DataPacket[] = list.map((packet) => {
      // Unwrap the 32-bit sequence relative to the previous packet.
      let delta = packet.seq - previousSeq;
      if (delta > seqSpace / 2) delta -= seqSpace;
      else if (delta < -seqSpace / 2) delta += seqSpace;
      unwrapped += delta;
      previousSeq = packet.seq;
      const end = unwrapped + packet.payloadBytes;
      const retransmission = end <= highest;
      highest = Math.max(highest, end);
      return { timeUs: packet.timeUs, offset: unwrapped, payloadBytes: packet.payloadBytes, retransmission };
    });
    const durationUs = data[data.length - 1]!.timeUs - data[0]!.timeUs;
    const retransmitted = data.filter((p) => p.retransmission).length;
    flows.push({
      flow,
      packets: data,
      dataPackets: data.length,
      retransmittedPackets: retransmitted,
      bytes: highest,
      durationUs,
      goodputBps: durationUs > 0 ? (highest * 8 * 1e6) / durationUs : 0,
      bursts: detectBursts(
        data.map((p) => p.timeUs),
        options,
      ),
    });
  }
  return flows.sort((a, b) => b.bytes - a.bytes);
}

/** Fraction of bursts no larger than `packets` (e.g. the compass goal: 95% of bursts <= 10). */
export function burstShareAtMost(bursts: readonly number[], packets: number): number {
  return bursts.length === 0 ? 1 : bursts.filter((size) => size <= packets).length / bursts.length;
}

/**
 * Fraction of the packets in bursts that went in bursts larger than `packets`: weighted by packets, so
 * a write a host stall split into many small trains counts as its packets, not as many bursts.
 */
export function packetShareInBurstsOver(bursts: readonly number[], packets: number): number {
  const total = bursts.reduce((sum, size) => sum + size, 0);
  return total === 0 ? 0 : bursts.filter((size) => size > packets).reduce((sum, size) => sum + size, 0) / total;
}

/** Queueing delay samples from probe RTTs: each RTT minus the smallest one seen (the base). */
export function queueingDelaysMs(rttsMs: readonly number[]): number[] {
  if (rttsMs.length === 0) return [];
  const base = Math.min(...rttsMs);
  return rttsMs.map((rtt) => rtt - base);
}
