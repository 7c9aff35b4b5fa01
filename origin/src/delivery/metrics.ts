/**
 * Prometheus metrics of delivery (prom-client), in the app's own registry: per policy and group,
 * histograms of retransmission rate, srtt and throttled goodput / target, counters of responses
 * and bytes, a gauge of active paced flows, failed socket calls (served unpaced, counted), HTTP
 * response durations by route and status, and prom-client's default process and Node.js metrics
 * under their standard names (process_cpu_seconds_total, nodejs_eventloop_lag_p99_seconds, ...), so
 * stock dashboards read them.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { BoundCounter, BoundHistogram, type CounterSeries, type HistogramSeries } from './bound-metrics.js';
import { catchUpsOf, type FlowRecord } from './flow-record.js';

const labelNames = ['policy', 'group'] as const;

/** One (policy, group)'s series, looked up once per response (bound-metrics.ts: no label work per count). */
interface FlowSeries {
  readonly responses: Map<string, CounterSeries>;
  readonly bytes: CounterSeries;
  readonly retransmissionRate: HistogramSeries;
  readonly srtt: HistogramSeries;
  readonly goodputRatio: HistogramSeries;
  readonly activeFlows: { inc(): void; dec(): void };
  readonly catchUps: CounterSeries;
}

/** How often the event loop's delay is sampled for the nodejs_eventloop_lag_p* series. */
const eventLoopSampleMs = 100;

export class DeliveryMetrics {
  readonly registry = new Registry();
  private readonly responses: BoundCounter<'policy' | 'group' | 'role' | 'outcome'>;
  private readonly bytes: BoundCounter<'policy' | 'group'>;
  private readonly retransmissionRate: BoundHistogram<'policy' | 'group'>;
  private readonly srtt: BoundHistogram<'policy' | 'group'>;
  private readonly goodputRatio: BoundHistogram<'policy' | 'group'>;
  private readonly activeFlows: Gauge<'policy' | 'group'>;
  private readonly socketErrors: Counter<'operation' | 'code'>;
  private readonly catchUps: BoundCounter<'policy' | 'group'>;
  private readonly httpDuration: BoundHistogram<'route' | 'status_code'>;
  /** A (policy, group)'s series by `${policy}\n${group}`: one lookup per response for its six series (a small set). */
  private readonly flowSeries = new Map<string, FlowSeries>();

  constructor() {
    // The loop-delay percentiles sample on a timer: prom-client's default, every 10 ms, woke an idle
    // origin 100 times a second (1.2 % of a core with no traffic, more than nginx serving 100 paced
    // flows). Every 100 ms still sees a blocked loop; nodejs_eventloop_lag_seconds is measured at each scrape.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: eventLoopSampleMs });
    const registry = this.registry;
    this.responses = new BoundCounter(
      'trickle_responses_total',
      'Media responses by policy, A/B group, role and outcome (completed, aborted)',
      [...labelNames, 'role', 'outcome'],
      registry,
    );
    this.bytes = new BoundCounter(
      'trickle_response_bytes_total',
      'Body bytes written to media responses',
      labelNames,
      registry,
    );
    this.retransmissionRate = new BoundHistogram(
      'trickle_retransmission_ratio',
      'Retransmitted / data segments sent, per response',
      labelNames,
      [0, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2],
      registry,
    );
    this.srtt = new BoundHistogram(
      'trickle_srtt_seconds',
      'Smoothed RTT at the end of each response',
      labelNames,
      [0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2],
      registry,
    );
    this.goodputRatio = new BoundHistogram(
      'trickle_throttled_goodput_ratio',
      'Goodput of the throttling phase / target media rate, per response that throttled',
      labelNames,
      [0.5, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.2, 1.3, 1.5, 2, 5],
      registry,
    );
    this.activeFlows = new Gauge({
      name: 'trickle_active_paced_flows',
      help: 'Responses being delivered under a paced policy',
      labelNames,
      registers: [registry],
    });
    this.socketErrors = new Counter({
      name: 'trickle_socket_errors_total',
      help: 'Socket option or TCP_INFO calls that failed (the response went on unpaced)',
      labelNames: ['operation', 'code'],
      registers: [registry],
    });
    this.catchUps = new BoundCounter(
      'trickle_clamp_catchups_total',
      'Times a paced response lifted its limit (the clamp, or the pacing rate) because goodput fell below R',
      labelNames,
      registry,
    );
    this.httpDuration = new BoundHistogram(
      'trickle_http_request_duration_seconds',
      // A paced media response lasts as long as its pacing: seconds to minutes.
      'Time from request to the last byte handed to the socket, by route (its pattern) and status code',
      ['route', 'status_code'],
      [0.001, 0.005, 0.025, 0.1, 0.25, 1, 2.5, 10, 30, 120],
      registry,
    );
  }

  /** A response ended: `route` is its route pattern (not the URL, which would make a series per file). */
  httpResponse(route: string, statusCode: number, seconds: number): void {
    this.httpDuration.labels({ route, status_code: String(statusCode) }).observe(seconds);
  }

  flowStarted(policy: string, group: string): void {
    this.series(policy, group).activeFlows.inc();
  }

  flowEnded(policy: string, group: string): void {
    this.series(policy, group).activeFlows.dec();
  }

  socketError(operation: string, code: string): void {
    this.socketErrors.inc({ operation, code });
  }

  record(record: FlowRecord): void {
    const series = this.series(record.policy, record.group ?? record.policy);
    const outcome = record.completed ? 'completed' : 'aborted';
    const responsesKey = `${record.role}\n${outcome}`;
    let responses = series.responses.get(responsesKey);
    if (responses === undefined) {
      responses = this.responses.labels({
        policy: record.policy,
        group: record.group ?? record.policy,
        role: record.role,
        outcome,
      });
      series.responses.set(responsesKey, responses);
    }
    responses.inc();
    series.bytes.inc(record.bytes);
    if (record.retransmissionRate !== null) series.retransmissionRate.observe(record.retransmissionRate);
    if (record.srttUs !== null) series.srtt.observe(record.srttUs / 1e6);
    if (record.throttledGoodputToTarget !== null) series.goodputRatio.observe(record.throttledGoodputToTarget);
    const catchUps = catchUpsOf(record);
    if (catchUps > 0) series.catchUps.inc(catchUps);
  }

  private series(policy: string, group: string): FlowSeries {
    const key = `${policy}\n${group}`;
    let series = this.flowSeries.get(key);
    if (series === undefined) {
      const labels = { policy, group };
      series = {
        responses: new Map(),
        bytes: this.bytes.labels(labels),
        retransmissionRate: this.retransmissionRate.labels(labels),
        srtt: this.srtt.labels(labels),
        goodputRatio: this.goodputRatio.labels(labels),
        activeFlows: this.activeFlows.labels(labels),
        catchUps: this.catchUps.labels(labels),
      };
      this.flowSeries.set(key, series);
    }
    return series;
  }

  /** The gauge's current total (tests and shutdown checks). */
  async activeFlowCount(): Promise<number> {
    const metric = await this.activeFlows.get();
    return metric.values.reduce((sum, v) => sum + v.value, 0);
  }
}
