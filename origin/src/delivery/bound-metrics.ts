/**
 * Counters and histograms whose series are bound once and then counted with no label work, for the
 * metrics of every response. prom-client's own `labels(...)` children hash their label object, check
 * it and look the series up by that string on every call (about a microsecond each, five to six
 * per media response); these keep each series' numbers in the series itself. They register in a
 * prom-client Registry as custom metrics (name, help, type, get, reset), so /metrics is written by
 * prom-client in its format, line for line what its Counter and Histogram write (the Registry awaits get(),
 * so a value does as well as a promise).
 */
import type { Metric, Registry } from 'prom-client';

type Labels<L extends string> = Readonly<Record<L, string>>;

/** One exposition line's worth: what prom-client's own metrics give its Registry. */
interface SeriesValue {
  readonly metricName?: string;
  readonly labels: Readonly<Record<string, string | number>>;
  readonly value: number;
}

/** A metric as the Registry reads it (what prom-client's own get() returns). */
export interface MetricSnapshot {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'histogram';
  readonly aggregator: 'sum';
  readonly values: readonly SeriesValue[];
}

/** The label values' key of a series (label values never hold a NUL). */
function seriesKey<L extends string>(labelNames: readonly L[], labels: Labels<L>): string {
  let key = '';
  for (const name of labelNames) key += `${labels[name]}\u0000`;
  return key;
}

/** A series' numbers; reset() takes it back to never counted, and it stays bound. */
interface Series {
  reset(): void;
}

abstract class BoundMetric<L extends string, S extends Series> {
  readonly aggregator = 'sum' as const;
  protected readonly series = new Map<string, { readonly labels: Labels<L>; readonly series: S }>();

  constructor(
    readonly name: string,
    readonly help: string,
    protected readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    // prom-client types a registrable metric as the union of its own classes; it reads only name, help, type,
    // aggregator, get() and reset().
    registry.registerMetric(this as unknown as Metric);
  }

  /** The series of these label values, made at its first use. */
  labels(labels: Labels<L>): S {
    const key = seriesKey(this.labelNames, labels);
    let entry = this.series.get(key);
    if (entry === undefined) {
      const own = Object.freeze({ ...labels });
      entry = { labels: own, series: this.create() };
      this.series.set(key, entry);
    }
    return entry.series;
  }

  /** As prom-client's reset: no series written until counted again (bound series keep counting into the metric). */
  reset(): void {
    for (const { series } of this.series.values()) series.reset();
  }

  protected abstract create(): S;
}

export class CounterSeries implements Series {
  value = 0;
  /** Counted at least once (by any amount): as with prom-client, a series is written from its first count on. */
  counted = false;

  inc(amount = 1): void {
    this.counted = true;
    // A counter only goes up (prom-client throws for a negative increment; a response's metrics never throw).
    if (amount > 0) this.value += amount;
  }

  reset(): void {
    this.value = 0;
    this.counted = false;
  }
}

export class BoundCounter<L extends string> extends BoundMetric<L, CounterSeries> {
  readonly type = 'counter' as const;

  protected create(): CounterSeries {
    return new CounterSeries();
  }

  get(): MetricSnapshot {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: [...this.series.values()]
        .filter(({ series }) => series.counted)
        .map(({ labels, series }) => ({ labels: { ...labels }, value: series.value })),
    };
  }
}

export class HistogramSeries implements Series {
  /** Observations per bucket (not cumulative); the last one counts those above every bound. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly upperBounds: readonly number[]) {
    this.counts = new Float64Array(upperBounds.length + 1);
  }

  observe(value: number): void {
    // prom-client throws for NaN and infinities; a response's metrics leave them out instead.
    if (!Number.isFinite(value)) return;
    const bounds = this.upperBounds;
    let bucket = 0;
    while (bucket < bounds.length && value > bounds[bucket]!) bucket++;
    this.counts[bucket]! += 1;
    this.sum += value;
    this.count += 1;
  }

  reset(): void {
    this.counts.fill(0);
    this.sum = 0;
    this.count = 0;
  }
}

export class BoundHistogram<L extends string> extends BoundMetric<L, HistogramSeries> {
  readonly type = 'histogram' as const;
  private readonly upperBounds: readonly number[];

  constructor(name: string, help: string, labelNames: readonly L[], buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
    this.upperBounds = Object.freeze([...buckets].sort((a, b) => a - b));
  }

  protected create(): HistogramSeries {
    return new HistogramSeries(this.upperBounds);
  }

  get(): MetricSnapshot {
    const values: SeriesValue[] = [];
    for (const { labels, series } of this.series.values()) {
      // As with prom-client, a series is written from its first observation on.
      if (series.count === 0) continue;
      let cumulative = 0;
      this.upperBounds.forEach((bound, i) => {
        cumulative += series.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { le: bound, ...labels }, value: cumulative });
      });
      values.push(
        { metricName: `${this.name}_bucket`, labels: { le: '+Inf', ...labels }, value: series.count },
        { metricName: `${this.name}_sum`, labels: { ...labels }, value: series.sum },
        { metricName: `${this.name}_count`, labels: { ...labels }, value: series.count },
      );
    }
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    };
  }
}
