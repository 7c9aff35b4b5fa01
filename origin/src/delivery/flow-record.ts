/**
 * Per-flow records, the paper's dataset: one per media response, built from TCP_INFO snapshots
 * taken when the response starts, when its throttling phase starts and when its last byte has
 * been acknowledged (or the response ended otherwise). Rates are bits per second.
 */
import type { TcpInfo } from '@trickle/native';
import type { Summary } from './running-stats.js';
import type { PolicyReport } from './policies/delivery-policy.js';

export interface TcpSnapshot {
  readonly atMs: number;
  readonly info: TcpInfo | undefined;
}

export interface FlowFacts {
  readonly id: number;
  readonly connectionId: number;
  readonly asset: string;
  readonly file: string;
  readonly role: 'segment' | 'progressive';
  readonly rendition: string | undefined;
  readonly segmentNumber: number | undefined;
  readonly range: { readonly start: number; readonly end: number };
  readonly status: number;
  readonly policy: string;
  readonly group: string | undefined;
  readonly policyReason: string;
  readonly client: { readonly address: string | undefined; readonly port: number | undefined };
  readonly cmcd: Record<string, unknown> | undefined;
  readonly congestionControl: string | undefined;
  readonly initialWindow: InitialWindowRecord | undefined;
  /** Wall-clock start (ms since the epoch), for /api/flows?since=. */
  readonly startedAtEpochMs: number;
  readonly start: TcpSnapshot;
  /** Taken when the first throttled block was considered; undefined if the response never throttled. */
  readonly throttlingStart: TcpSnapshot | undefined;
  readonly end: TcpSnapshot;
  readonly startupBytes: number;
  readonly throttledBytes: number;
  /**
   * Startup bytes already sent but not yet acknowledged when throttling began (with a limit in the
   * socket; with an application limit also those still unsent): startup goodput, not throttled goodput.
   */
  readonly startupBacklogBytes: number;
  readonly completed: boolean;
  /** Whether all bytes were acknowledged before the end snapshot (false: drain timed out or the socket closed). */
  readonly drained: boolean;
  /** Target media rate R over the throttled blocks (over all blocks when none was throttled), bits/s. */
  readonly targetRateBps: Summary | null;
  /** Mean target rate of the throttled blocks only, bits/s (what throttled goodput is compared with). */
  readonly throttledTargetMeanBps: number | undefined;
  /** The socket's cwnd (TCP_INFO) sampled as each throttled block was written. */
  readonly cwndPackets: Summary | null;
  readonly report: PolicyReport;
}

export interface PhaseRecord {
  readonly durationMs: number;
  readonly bytes: number;
  readonly goodputBps: number | null;
  /** TCP_INFO deltas over the phase (the paper's statistics are the throttling phase's). */
  readonly retransmittedSegments: number | null;
  readonly dataSegmentsOut: number | null;
  readonly retransmissionRate: number | null;
}

export interface ThrottlingRecord extends PhaseRecord {
  /** Startup bytes that left at startup speed but were acknowledged after throttling began (credited to the startup phase's goodput). */
  readonly startupBacklogBytes: number;
}

export interface InitialWindowRecord {
  readonly packets: number;
  /** pending: no data segment built yet; failed: the kernel refused it (errno); unsupported: no bpf backend. */
  readonly status: 'pending' | 'applied' | 'failed' | 'unsupported';
  readonly errno?: number;
}

export interface FlowRecord {
  readonly id: number;
  readonly ts: string;
  readonly startedAtEpochMs: number;
  readonly connectionId: number;
  readonly asset: string;
  readonly file: string;
  readonly role: 'segment' | 'progressive';
  readonly rendition: string | null;
  readonly segmentNumber: number | null;
  readonly range: { readonly start: number; readonly end: number };
  readonly status: number;
  readonly policy: string;
  readonly group: string | null;
  readonly backend: PolicyReport['backend'];
  readonly fallbackReason: string | null;
  readonly reason: string;
  readonly bytes: number;
  readonly completed: boolean;
  readonly drained: boolean;
  readonly durationMs: number;
  readonly startup: PhaseRecord;
  readonly throttling: ThrottlingRecord | null;
  readonly srttAtStartupEndUs: number | null;
  readonly srttUs: number | null;
  readonly minRttUs: number | null;
  readonly retransmittedSegments: number | null;
  readonly dataSegmentsOut: number | null;
  readonly retransmissionRate: number | null;
  readonly targetRateBps: Summary | null;
  readonly paceRateBps: Summary | null;
  readonly throttledGoodputToTarget: number | null;
  readonly clampPackets: Summary | null;
  readonly appliedClampPackets: Summary | null;
  readonly cwndWhileClampedPackets: Summary | null;
  readonly cwndPackets: Summary | null;
  readonly catchUps: number;
  readonly throttledWriteBlocks: number;
  readonly cmcd: Record<string, unknown> | null;
  readonly congestionControl: string | null;
  /** The connection's initial window when one was asked for (TCP_BPF_IW), and what became of it. */
  readonly initialWindow: InitialWindowRecord | null;
  readonly client: { readonly address: string | null; readonly port: number | null };
}

function delta(from: TcpInfo | undefined, to: TcpInfo | undefined, field: 'bytesAcked' | 'totalRetrans' | 'dataSegsOut'): number | undefined {
  const a = from?.[field];
  const b = to?.[field];
  return a === undefined || b === undefined ? undefined : Math.max(0, b - a);
}

function phase(from: TcpSnapshot, to: TcpSnapshot, bytes: number, creditedBytes: number): PhaseRecord {
  const durationMs = Math.max(0, to.atMs - from.atMs);
  const ackedDelta = delta(from.info, to.info, 'bytesAcked');
  const acked = ackedDelta === undefined ? undefined : Math.max(0, ackedDelta + creditedBytes);
  const retransmitted = delta(from.info, to.info, 'totalRetrans');
  const segmentsOut = delta(from.info, to.info, 'dataSegsOut');
  return {
    durationMs: Math.round(durationMs * 1000) / 1000,
    bytes,
    goodputBps: acked === undefined || durationMs <= 0 ? null : Math.round((acked * 8 * 1000) / durationMs),
    ...retransmissions(retransmitted, segmentsOut),
  };
}

function retransmissions(retransmitted: number | undefined, segmentsOut: number | undefined): Pick<PhaseRecord, 'retransmittedSegments' | 'dataSegmentsOut' | 'retransmissionRate'> {
  return {
    retransmittedSegments: retransmitted ?? null,
    dataSegmentsOut: segmentsOut ?? null,
    retransmissionRate: retransmitted === undefined || segmentsOut === undefined || segmentsOut === 0 ? null : retransmitted / segmentsOut,
  };
}

export function buildFlowRecord(facts: FlowFacts): FlowRecord {
  const { start, throttlingStart, end, report } = facts;
  // Startup bytes acknowledged after throttling began count for the startup phase's goodput, not the throttled one's.
  const backlog = throttlingStart === undefined ? 0 : facts.startupBacklogBytes;
  const startup = phase(start, throttlingStart ?? end, facts.startupBytes, backlog);
  const throttling = throttlingStart === undefined ? null : { ...phase(throttlingStart, end, facts.throttledBytes, -backlog), startupBacklogBytes: backlog };
  const targetMean = facts.throttledTargetMeanBps;
  return {
    id: facts.id,
    ts: new Date(facts.startedAtEpochMs + (end.atMs - start.atMs)).toISOString(),
    startedAtEpochMs: facts.startedAtEpochMs,
    connectionId: facts.connectionId,
    asset: facts.asset,
    file: facts.file,
    role: facts.role,
    rendition: facts.rendition ?? null,
    segmentNumber: facts.segmentNumber ?? null,
    range: facts.range,
    status: facts.status,
    policy: facts.policy,
    group: facts.group ?? null,
    backend: report.backend,
    fallbackReason: report.fallbackReason ?? null,
    reason: `${facts.policyReason}; ${report.reason}`,
    bytes: facts.startupBytes + facts.throttledBytes,
    completed: facts.completed,
    drained: facts.drained,
    durationMs: Math.round((end.atMs - start.atMs) * 1000) / 1000,
    startup,
    throttling,
    srttAtStartupEndUs: throttlingStart?.info?.rttUs ?? null,
    srttUs: end.info?.rttUs ?? null,
    minRttUs: end.info?.minRttUs ?? null,
    ...retransmissions(delta(start.info, end.info, 'totalRetrans'), delta(start.info, end.info, 'dataSegsOut')),
    targetRateBps: facts.targetRateBps,
    paceRateBps: report.paceRateBps,
    throttledGoodputToTarget: throttling?.goodputBps == null || targetMean === undefined || targetMean <= 0 ? null : throttling.goodputBps / targetMean,
    clampPackets: report.clampPackets,
    appliedClampPackets: report.appliedClampPackets,
    cwndWhileClampedPackets: report.cwndWhileClampedPackets,
    cwndPackets: facts.cwndPackets,
    catchUps: report.catchUps,
    throttledWriteBlocks: report.throttledWriteBlocks,
    cmcd: facts.cmcd ?? null,
    congestionControl: facts.congestionControl ?? null,
    initialWindow: facts.initialWindow ?? null,
    client: { address: facts.client.address ?? null, port: facts.client.port ?? null },
  };
}
