import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeliveryMetrics } from '../../src/delivery/metrics.js';
import type { FlowRecord } from '../../src/delivery/flow-record.js';

/** The fields DeliveryMetrics reads; the rest of a record does not reach the metrics. */
function record(fields: {
  policy: string;
  group?: string;
  role?: 'segment' | 'progressive';
  completed?: boolean;
  bytes: number;
  srttUs?: number;
  catchUps?: number;
}): FlowRecord {
  return {
    policy: fields.policy,
    group: fields.group ?? null,
    role: fields.role ?? 'segment',
    completed: fields.completed ?? true,
    bytes: fields.bytes,
    retransmissionRate: 0,
    srttUs: fields.srttUs ?? 2000,
    throttledGoodputToTarget: null,
    enforcer:
      fields.catchUps === undefined
        ? { kind: 'none' }
        : { kind: 'kernel-pacing', catchUps: fields.catchUps, throttledWriteBlocks: 0, kernelPhase: null },
  } as unknown as FlowRecord;
}

describe('DeliveryMetrics', () => {
  it('keeps each (policy, group) and each role and outcome in its own series, however often a series is reused', async () => {
    const metrics = new DeliveryMetrics();
    metrics.record(record({ policy: 'bulk', bytes: 100 }));
    metrics.record(record({ policy: 'bulk', bytes: 50, completed: false }));
    metrics.record(record({ policy: 'trickle', group: 'trickle-b', bytes: 7, srttUs: 30_000 }));
    metrics.record(record({ policy: 'pacing', bytes: 9, catchUps: 2 }));
    metrics.record(record({ policy: 'pacing', bytes: 9, catchUps: 1 }));
    metrics.record(record({ policy: 'bulk', bytes: 1, role: 'progressive' }));
    metrics.flowStarted('trickle', 'trickle-b');
    metrics.flowStarted('trickle', 'trickle-b');
    metrics.flowEnded('trickle', 'trickle-b');
    metrics.httpResponse('/media/:asset/*', 206, 0.002);
    metrics.httpResponse('/media/:asset/*', 206, 0.003);
    metrics.httpResponse('/media/:asset/*', 404, 0.001);
    const text = await metrics.registry.metrics();
    for (const line of [
      'trickle_responses_total{policy="bulk",group="bulk",role="segment",outcome="completed"} 1',
      'trickle_responses_total{policy="bulk",group="bulk",role="segment",outcome="aborted"} 1',
      'trickle_responses_total{policy="bulk",group="bulk",role="progressive",outcome="completed"} 1',
      'trickle_responses_total{policy="trickle",group="trickle-b",role="segment",outcome="completed"} 1',
      'trickle_response_bytes_total{policy="bulk",group="bulk"} 151',
      'trickle_response_bytes_total{policy="trickle",group="trickle-b"} 7',
      'trickle_srtt_seconds_count{policy="bulk",group="bulk"} 3',
      'trickle_srtt_seconds_sum{policy="trickle",group="trickle-b"} 0.03',
      'trickle_active_paced_flows{policy="trickle",group="trickle-b"} 1',
      'trickle_clamp_catchups_total{policy="pacing",group="pacing"} 3',
      'trickle_http_request_duration_seconds_count{route="/media/:asset/*",status_code="206"} 2',
      'trickle_http_request_duration_seconds_count{route="/media/:asset/*",status_code="404"} 1',
    ])
      assert.ok(text.split('\n').includes(line), `has ${line}`);
    assert.doesNotMatch(text, /trickle_throttled_goodput_ratio_count/, 'no throttling phase, no goodput ratio');
  });
});
