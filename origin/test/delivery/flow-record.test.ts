import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { TcpInfo } from '@trickle/native';
import type { TcpSnapshot } from '../../src/delivery/connection.js';
import type { EnforcerReport } from '../../src/delivery/enforcers/enforcer.js';
import type { MeterFacts } from '../../src/delivery/flow-meter.js';
import { buildFlowRecord, type EndFacts, type ResponseFacts } from '../../src/delivery/flow-record.js';

const report: EnforcerReport = {
  backend: 'kernel-pacing',
  paceRateBps: { min: 2.5e6, mean: 2.5e6, max: 2.5e6 },
  reason: 'test',
  enforcer: { kind: 'kernel-pacing', catchUps: 0, throttledWriteBlocks: 0, kernelPhase: null },
};

type FlowFacts = ResponseFacts &
  Omit<MeterFacts, 'lastReading' | 'mediaRateBps' | 'unsentStartupBytes'> &
  EndFacts & { readonly report: EnforcerReport };

/**
 * The record from flat facts: what the engine knows, what the meter measured, what the enforcer reports, how it ended.
 */
function recordOf(f: FlowFacts) {
  return buildFlowRecord(
    f,
    { ...f, lastReading: f.end, mediaRateBps: f.targetRateBps, unsentStartupBytes: 0 },
    f.report,
    f,
  );
}

const snapshot = (atMs: number, bytesAcked: number, extra: Partial<TcpInfo> = {}): TcpSnapshot => ({
  atMs,
  info: { kernelLengthBytes: 232, bytesAcked, totalRetrans: 0, dataSegsOut: 0, ...extra },
});

/**
 * 1 MB of startup at full speed, then 2.5 MB throttled over 10 s; 500 kB of startup still unacknowledged when
 * throttling began.
 */
function facts(overrides: Partial<FlowFacts> = {}): FlowFacts {
  return {
    id: 1,
    connectionId: 1,
    asset: 'demo',
    file: 'progressive.mp4',
    role: 'progressive',
    rendition: undefined,
    segmentNumber: undefined,
    range: { start: 0, end: 3_499_999 },
    status: 206,
    policy: 'pacing',
    group: undefined,
    policyReason: 'default',
    sendfileCalls: undefined,
    client: { address: '10.0.0.2', port: 40000 },
    cmcd: undefined,
    congestionControl: 'bbr',
    initialWindow: { packets: 40, status: 'applied' },
    startedAtEpochMs: 1_700_000_000_000,
    start: snapshot(0, 0, { totalRetrans: 1, dataSegsOut: 10 }),
    throttlingStart: snapshot(1000, 500_000, { totalRetrans: 2, dataSegsOut: 710 }),
    end: snapshot(11_000, 3_500_000, { totalRetrans: 3, dataSegsOut: 2510 }),
    startupBytes: 1_000_000,
    throttledBytes: 2_500_000,
    startupBacklogBytes: 500_000,
    completed: true,
    drained: true,
    targetRateBps: { min: 2e6, mean: 2e6, max: 2e6 },
    throttledTargetMeanBps: 2e6,
    cwndPackets: { min: 10, mean: 20, max: 30 },
    report,
    ...overrides,
  };
}

describe('flow records', () => {
  it('credits startup bytes acknowledged after throttling began to the startup phase', () => {
    const record = recordOf(facts());
    assert.equal(record.bytes, 3_500_000);
    assert.deepEqual(record.initialWindow, { packets: 40, status: 'applied' });
    assert.equal(record.startup.durationMs, 1000);
    // Startup: its 1 MB over its own second (the 0.5 MB backlog is credited to it, not to throttling).
    assert.equal(record.startup.goodputBps, 8e6);
    const throttling = record.throttling!;
    assert.equal(throttling.durationMs, 10_000);
    assert.equal(throttling.startupBacklogBytes, 500_000);
    // (3.5 MB acked - 0.5 MB acked at throttling start - 0.5 MB backlog) / 10 s.
    assert.equal(throttling.goodputBps, 2e6);
    assert.equal(record.throttledGoodputToTarget, 1);
    assert.equal(record.retransmittedSegments, 2);
    assert.equal(record.dataSegmentsOut, 2500);
    assert.equal(record.retransmissionRate, 2 / 2500);
    // Per phase: startup 1 of 700 segments retransmitted, throttling 1 of 1800.
    assert.deepEqual(
      [record.startup.retransmittedSegments, record.startup.dataSegmentsOut, record.startup.retransmissionRate],
      [1, 700, 1 / 700],
    );
    assert.deepEqual(
      [throttling.retransmittedSegments, throttling.dataSegmentsOut, throttling.retransmissionRate],
      [1, 1800, 1 / 1800],
    );
  });

  it('has no throttling phase for a response that never throttled, and no rates without TCP_INFO', () => {
    const bulk = recordOf(
      facts({ throttlingStart: undefined, startupBytes: 3_500_000, throttledBytes: 0, end: snapshot(2000, 3_500_000) }),
    );
    assert.equal(bulk.throttling, null);
    assert.equal(bulk.startup.goodputBps, 14e6);
    assert.equal(bulk.throttledGoodputToTarget, null);
    const blind = recordOf(facts({ start: { atMs: 0, info: undefined }, end: { atMs: 11_000, info: undefined } }));
    assert.equal(blind.startup.goodputBps, null);
    assert.equal(blind.retransmissionRate, null);
    assert.equal(blind.throttling!.retransmissionRate, null);
    assert.equal(blind.srttUs, null);
  });
});
