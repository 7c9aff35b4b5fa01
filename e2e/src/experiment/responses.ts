/**
 * The capture, cut into the origin's responses: each data packet of a connection belongs to the
 * latest response on that connection that had started when it was sent (responses on a
 * connection are sequential). Per response: bursts in the throttling phase (the paper's
 * statistic), retransmitted packets, and where each loss happened in the transfer, after Esteban
 * et al. (NOSSDAV 2012):
 *  - initial burst: the lost packet was first sent within one RTT of the response's first packet
 *    (the cwnd left from earlier transfers, sent back to back);
 *  - trailing ACKs: the retransmission left after the response's last new data packet (nothing new
 *    to send: no duplicate ACKs from new data, recovery by tail-loss probe or timeout);
 *  - ACK clocking: the rest (losses recovered while new data was still being clocked out).
 * Pure: flows and records in, summaries out.
 */
import type { FlowRecord } from '@trickle/origin';
import { detectBursts, type DataPacket, type FlowAnalysis } from '../lab/analysis/flows.js';

export type LossPhase = 'initialBurst' | 'ackClocking' | 'trailingAcks';

export interface ResponseCapture {
  readonly recordId: number;
  readonly packets: readonly DataPacket[];
  /** Burst sizes (packets) over the whole response. */
  readonly bursts: readonly number[];
  /** Burst sizes in the throttling phase only (the paper's statistic; none when the response never throttled). */
  readonly throttledBursts: readonly number[];
  readonly retransmittedPackets: number;
  readonly lossPhases: Readonly<Record<LossPhase, number>>;
}

/** The data packets of one connection, cut at the start times of its responses (ascending). */
export function splitAtStarts(packets: readonly DataPacket[], startsUs: readonly number[]): DataPacket[][] {
  const slices: DataPacket[][] = startsUs.map(() => []);
  let current = -1;
  for (const packet of packets) {
    while (current + 1 < startsUs.length && packet.timeUs >= startsUs[current + 1]!) current++;
    if (current >= 0) slices[current]!.push(packet);
  }
  return slices;
}

/** Where each retransmission of a response's packets happened (see the header). */
export function classifyLosses(packets: readonly DataPacket[], rttUs: number): Record<LossPhase, number> {
  const phases: Record<LossPhase, number> = { initialBurst: 0, ackClocking: 0, trailingAcks: 0 };
  const originals = packets.filter((p) => !p.retransmission);
  if (originals.length === 0) return phases;
  const firstUs = originals[0]!.timeUs;
  const lastNewUs = originals[originals.length - 1]!.timeUs;
  const byOffset = [...originals].sort((a, b) => a.offset - b.offset);
  for (const packet of packets) {
    if (!packet.retransmission) continue;
    if (packet.timeUs > lastNewUs) {
      phases.trailingAcks++;
      continue;
    }
    // The original that carried this offset: the last one starting at or before it.
    let lo = 0;
    let hi = byOffset.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byOffset[mid]!.offset <= packet.offset) lo = mid + 1;
      else hi = mid;
    }
    const original = byOffset[Math.max(0, lo - 1)]!;
    if (original.timeUs - firstUs <= rttUs) phases.initialBurst++;
    else phases.ackClocking++;
  }
  return phases;
}

/**
 * Cuts a capture's flows (as `analyzeFlows` gives them) into the records' responses: the origin -> player directions
 * only.
 */
export function responsesOfCapture(
  flows: readonly FlowAnalysis[],
  records: readonly FlowRecord[],
  origin: { address: string; port: number },
): Map<number, ResponseCapture> {
  const byPort = new Map<number, FlowRecord[]>();
  for (const record of records) {
    if (record.client.port === null) continue;
    let list = byPort.get(record.client.port);
    if (list === undefined) {
      list = [];
      byPort.set(record.client.port, list);
    }
    list.push(record);
  }
  const captures = new Map<number, ResponseCapture>();
  const fromOrigin = `${origin.address}:${origin.port}>`;
  for (const flow of flows) {
    if (!flow.flow.startsWith(fromOrigin)) continue;
    const port = Number(flow.flow.split(':').pop());
    const onConnection = (byPort.get(port) ?? []).sort((a, b) => a.startedAtEpochMs - b.startedAtEpochMs);
    if (onConnection.length === 0) continue;
    const slices = splitAtStarts(
      flow.packets,
      onConnection.map((r) => r.startedAtEpochMs * 1000),
    );
    onConnection.forEach((record, i) => {
      const slice = slices[i]!;
      const throttlingFromUs =
        record.throttling === null
          ? Number.POSITIVE_INFINITY
          : record.startedAtEpochMs * 1000 + record.startup.durationMs * 1000;
      const throttled = slice.filter((p) => p.timeUs >= throttlingFromUs);
      const rttUs = record.minRttUs ?? record.srttUs ?? 0;
      captures.set(record.id, {
        recordId: record.id,
        packets: slice,
        bursts: detectBursts(slice.map((p) => p.timeUs)),
        throttledBursts: detectBursts(throttled.map((p) => p.timeUs)),
        retransmittedPackets: slice.filter((p) => p.retransmission).length,
        lossPhases: classifyLosses(slice, rttUs),
      });
    });
  }
  return captures;
}

export interface SequencePoint {
  readonly timeSec: number;
  readonly offsetMB: number;
  readonly retransmission: boolean;
}

/**
 * A response's packets as a time-sequence graph: seconds and MB from its first packet; at most
 * `maxPoints` (every retransmission kept), plus every packet of a `zoomSec` window in the
 * throttling phase (a quarter into it, at most 5 s after it began), where bursts are visible; the
 * transfer's last `zoomSec` when that window is empty.
 */
export function timeSequenceOf(
  packets: readonly DataPacket[],
  throttlingStartUs: number | null,
  options: { maxPoints?: number; zoomSec?: number } = {},
): { throttlingStartSec: number | null; points: SequencePoint[]; zoom: SequencePoint[] } {
  if (packets.length === 0) return { throttlingStartSec: null, points: [], zoom: [] };
  const firstUs = packets[0]!.timeUs;
  const firstOffset = Math.min(...packets.map((p) => p.offset));
  const point = (p: DataPacket): SequencePoint => ({
    timeSec: (p.timeUs - firstUs) / 1e6,
    offsetMB: (p.offset - firstOffset) / 1e6,
    retransmission: p.retransmission,
  });
  const stride = Math.max(1, Math.ceil(packets.length / (options.maxPoints ?? 3000)));
  const points = packets.filter((p, i) => p.retransmission || i % stride === 0).map(point);
  const throttlingStartSec = throttlingStartUs === null ? null : Math.max(0, (throttlingStartUs - firstUs) / 1e6);
  const lastSec = (packets[packets.length - 1]!.timeUs - firstUs) / 1e6;
  const zoomFromSec = (throttlingStartSec ?? 0) + Math.min(5, (lastSec - (throttlingStartSec ?? 0)) / 4);
  const zoomToSec = zoomFromSec + (options.zoomSec ?? 1.5);
  const all = packets.map(point);
  let zoom = all.filter((p) => p.timeSec >= zoomFromSec && p.timeSec < zoomToSec);
  // A window with nothing in it (the transfer went quiet there): its last packets instead.
  if (zoom.length === 0) zoom = all.filter((p) => p.timeSec >= lastSec - (options.zoomSec ?? 1.5));
  return { throttlingStartSec, points, zoom };
}
