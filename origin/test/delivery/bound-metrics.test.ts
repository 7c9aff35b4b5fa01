import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { BoundCounter, BoundHistogram } from '../../src/delivery/bound-metrics.js';

const buckets = [0.001, 0.005, 0.01, 0.5];
// On a bound, between bounds, below the first, above the last, zero.
const observations: [string, string, number][] = [
  ['bulk', 'bulk', 0.001],
  ['bulk', 'bulk', 0.003],
  ['bulk', 'bulk', 0.0001],
  ['trickle', 'trickle-b', 7],
  ['trickle', 'trickle-b', 0.5],
  ['bulk', 'bulk', 0],
];

describe('bound metrics', () => {
  it("write /metrics line for line as prom-client's Histogram and Counter do with the same observations", async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const histogram = new BoundHistogram('t_seconds', 'a histogram', ['policy', 'group'], buckets, ours);
    const counter = new BoundCounter('t_total', 'a counter', ['policy', 'group'], ours);
    const promHistogram = new Histogram({
      name: 't_seconds',
      help: 'a histogram',
      labelNames: ['policy', 'group'],
      buckets,
      registers: [theirs],
    });
    const promCounter = new Counter({
      name: 't_total',
      help: 'a counter',
      labelNames: ['policy', 'group'],
      registers: [theirs],
    });
    for (const [policy, group, value] of observations) {
      histogram.labels({ policy, group }).observe(value);
      counter.labels({ policy, group }).inc(value * 1000);
      promHistogram.labels({ policy, group }).observe(value);
      promCounter.labels({ policy, group }).inc(value * 1000);
    }
    const text = await ours.metrics();
    assert.equal(text, await theirs.metrics());
    assert.ok(text.includes('t_seconds_bucket{le="0.005",policy="bulk",group="bulk"} 4'), text);
    assert.ok(text.includes('t_seconds_bucket{le="+Inf",policy="trickle",group="trickle-b"} 2'), text);
  });

  it('count a bound series with no lookup, skip what prom-client throws for, reset as it does', async () => {
    const registry = new Registry();
    const histogram = new BoundHistogram('h', 'h', ['route'], buckets, registry);
    const counter = new BoundCounter('c', 'c', ['route'], registry);
    const series = histogram.labels({ route: '/a' });
    assert.equal(histogram.labels({ route: '/a' }), series, 'the same series for the same label values');
    histogram.labels({ route: '/never' });
    counter.labels({ route: '/never' });
    series.observe(Number.NaN);
    series.observe(Number.POSITIVE_INFINITY);
    series.observe(0.002);
    counter.labels({ route: '/a' }).inc(-5);
    counter.labels({ route: '/a' }).inc();
    assert.equal(series.count, 1);
    assert.equal(series.sum, 0.002);
    const text = await registry.metrics();
    assert.ok(text.includes('h_count{route="/a"} 1'), text);
    assert.ok(text.includes('c{route="/a"} 1'), text);
    assert.doesNotMatch(text, /never/, 'a series bound but never counted is not written (as prom-client)');
    registry.resetMetrics();
    assert.doesNotMatch(await registry.metrics(), /route="\/a"/);
    series.observe(0.5);
    assert.ok(
      (await registry.metrics()).includes('h_count{route="/a"} 1'),
      'a series bound before the reset counts on',
    );
  });
});
