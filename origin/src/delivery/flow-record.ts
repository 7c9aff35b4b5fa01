/**
 * Per-flow records, the paper's dataset: one per media response, built from TCP_INFO snapshots
 * taken when the response starts, when its throttling phase starts and when its last byte has
 * been acknowledged (or the response ended otherwise). Rates are bits per second.
 */
import type { TcpInfo } from '@trickle/native';
import type { InitialWindowRecord, TcpSnapshot } from './connection.js';
import type { EnforcerRecord, EnforcerReport, KernelPhaseRecord } from './enforcers/enforcer.js';
import type { MeterFacts } from './flow-meter.js';
import type { Summary } from './running-stats.js';

/** What the engine knows of a response, apart from its meter and its enforcer. */
export interface ResponseFacts {
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
  /** Why this policy, and why its rate rule planned what it did. */
  readonly policyReason: string;
  readonly client: { readonly address: string | undefined; readonly port: number | undefined };
  readonly cmcd: Record<string, unknown> | undefined;
  readonly congestionControl: string | undefined;
  readonly initialWindow: InitialWindowRecord | undefined;
  /** sendfile(2) calls that wrote the body into the socket (undefined: Node wrote it). */
  readonly sendfileCalls: number | undefined;
  /** Wall-clock start (ms since the epoch), for /api/flows?since=. */
  readonly startedAtEpochMs: number;
}

/** How the response ended. */
export interface EndFacts {
  readonly end: TcpSnapshot;
  readonly completed: boolean;
  /** Whether all bytes were acknowledged before the end snapshot (false: drain timed out or the socket closed). */
  readonly drained: boolean;
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
  /**
   * Startup bytes that left at startup speed but were acknowledged after throttling began (credited to the startup
   * phase's goodput).
   */
  readonly startupBacklogBytes: number;
  /**
   * Startup bytes still unsent in the socket when throttling began, which left under the phase's limit in the socket
   * (its schedule starts with them).
   */
  readonly unsentStartupBytes: number;
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
  readonly backend: EnforcerReport['backend'];
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
  /** The rate rule's target R over the throttled blocks (all blocks when none throttled), bits/s. */
  readonly targetRateBps: Summary | null;
  /** The media's own rate over the same blocks (equal to the target under the paper's rule), bits/s. */
  readonly mediaRateBps: Summary | null;
  readonly paceRateBps: Summary | null;
  readonly throttledGoodputToTarget: number | null;
  /** The socket's cwnd read before each throttled block was written (packets; null in the kernel path). */
  readonly cwndPackets: Summary | null;
  /**
   * What the policy's enforcer did, by its kind and nothing of the others: the token bucket's blocks; the cwnd
   * clamp's packets, catch-ups and where Algorithm 1 ran; kernel pacing's catch-ups; the phase in the kernel.
   */
  readonly enforcer: EnforcerRecord;
  readonly cmcd: Record<string, unknown> | null;
  readonly congestionControl: string | null;
  /** The connection's initial window when one was asked for (TCP_BPF_IW), and what became of it. */
  readonly initialWindow: InitialWindowRecord | null;
  /** sendfile(2) calls that wrote the body (null: Node wrote it, from memory). */
  readonly sendfileCalls: number | null;
  readonly client: { readonly address: string | null; readonly port: number | null };
}

/** The cwnd clamp's part of a record (null under any other enforcer). */
export function cwndClampOf(
  record: Pick<FlowRecord, 'enforcer'>,
): Extract<EnforcerRecord, { readonly kind: 'cwnd-clamp' }> | null {
  return record.enforcer.kind === 'cwnd-clamp' ? record.enforcer : null;
}

/** The phase in the kernel (null: none ran, or the enforcer has none). */
export function kernelPhaseOf(record: Pick<FlowRecord, 'enforcer'>): KernelPhaseRecord | null {
  const { enforcer } = record;
  return enforcer.kind === 'cwnd-clamp' || enforcer.kind === 'kernel-pacing' ? enforcer.kernelPhase : null;
}

/** Times the limit was lifted for catch-up (0 under an enforcer that has none). */
export function catchUpsOf(record: Pick<FlowRecord, 'enforcer'>): number {
  const { enforcer } = record;
  return enforcer.kind === 'cwnd-clamp' || enforcer.kind === 'kernel-pacing' ? enforcer.catchUps : 0;
}

/** Blocks whose writes user space spaced in time (0 under `none`). */
export function throttledWriteBlocksOf(record: Pick<FlowRecord, 'enforcer'>): number {
  return record.enforcer.kind === 'none' ? 0 : record.enforcer.throttledWriteBlocks;
}

function delta(
  from: TcpInfo | undefined,
  to: TcpInfo | undefined,
  field: 'bytesAcked' | 'totalRetrans' | 'dataSegsOut',
): number | undefined {
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
    retransmittedSegments: retransmitted ?? null,
    dataSegmentsOut: segmentsOut ?? null,
    retransmissionRate: retransmissionRate(retransmitted, segmentsOut),
  };
}

// Fields written out rather than spread from a helper's object: a record is built for every media response.
function retransmissionRate(retransmitted: number | undefined, segmentsOut: number | undefined): number | null {
  return retransmitted === undefined || segmentsOut === undefined || segmentsOut === 0
    ? null
    : retransmitted / segmentsOut;
}

export function buildFlowRecord(
  response: ResponseFacts,
  meter: MeterFacts,
  report: EnforcerReport,
  ending: EndFacts,
): FlowRecord {
  const { start, throttlingStart } = meter;
  const end = ending.end;
  // Startup bytes acknowledged after throttling began count for the startup phase's goodput, not the throttled one's.
  const backlog = throttlingStart === undefined ? 0 : meter.startupBacklogBytes;
  const startup = phase(start, throttlingStart ?? end, meter.startupBytes, backlog);
  const throttling =
    throttlingStart === undefined
      ? null
      : {
          ...phase(throttlingStart, end, meter.throttledBytes, -backlog),
          startupBacklogBytes: backlog,
          unsentStartupBytes: meter.unsentStartupBytes,
        };
  const targetMean = meter.throttledTargetMeanBps;
  const retransmitted = delta(start.info, end.info, 'totalRetrans');
  const segmentsOut = delta(start.info, end.info, 'dataSegsOut');
  return {
    id: response.id,
    ts: new Date(response.startedAtEpochMs + (end.atMs - start.atMs)).toISOString(),
    startedAtEpochMs: response.startedAtEpochMs,
    connectionId: response.connectionId,
    asset: response.asset,
    file: response.file,
    role: response.role,
    rendition: response.rendition ?? null,
    segmentNumber: response.segmentNumber ?? null,
    range: response.range,
    status: response.status,
    policy: response.policy,
    group: response.group ?? null,
    backend: report.backend,
    fallbackReason: report.fallbackReason ?? null,
    reason: `${response.policyReason}; ${report.reason}`,
    bytes: meter.startupBytes + meter.throttledBytes,
    completed: ending.completed,
    drained: ending.drained,
    durationMs: Math.round((end.atMs - start.atMs) * 1000) / 1000,
    startup,
    throttling,
    srttAtStartupEndUs: throttlingStart?.info?.rttUs ?? null,
    srttUs: end.info?.rttUs ?? null,
    minRttUs: end.info?.minRttUs ?? null,
    retransmittedSegments: retransmitted ?? null,
    dataSegmentsOut: segmentsOut ?? null,
    retransmissionRate: retransmissionRate(retransmitted, segmentsOut),
    targetRateBps: meter.targetRateBps,
    mediaRateBps: meter.mediaRateBps,
    paceRateBps: report.paceRateBps,
    throttledGoodputToTarget:
      throttling?.goodputBps == null || targetMean === undefined || targetMean <= 0
        ? null
        : throttling.goodputBps / targetMean,
    cwndPackets: meter.cwndPackets,
    enforcer: report.enforcer,
    cmcd: response.cmcd ?? null,
    congestionControl: response.congestionControl ?? null,
    initialWindow: response.initialWindow ?? null,
    sendfileCalls: response.sendfileCalls ?? null,
    client: { address: response.client.address ?? null, port: response.client.port ?? null },
  };
}
