import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  formatCookedTrace,
  lteLikeTrace,
  parseCookedTrace,
  parseMahimahiTrace,
  parseSabreTrace,
  parseTrace,
  stepTrace,
  threeGLikeTrace,
  traceAt,
} from '../src/index.js';

const isTraceError = (error: unknown) => (error as { code?: string }).code === 'SIM_ERR_TRACE';

describe('bandwidth traces', () => {
  it('reads Sabre JSON (latency is a round trip; the lab delay is one way)', () => {
    const trace = parseSabreTrace(
      '[{"duration_ms": 1000, "bandwidth_kbps": 4000, "latency_ms": 40}, {"duration_ms": ' +
        '500, "bandwidth_kbps": 1000, "latency_ms": 100}]',
    );
    assert.deepEqual(trace.points, [
      { atMs: 0, rateBps: 4e6, delayMs: 20 },
      { atMs: 1000, rateBps: 1e6, delayMs: 50 },
    ]);
    assert.equal(trace.durationMs, 1500);
    assert.throws(() => parseSabreTrace('{}'), isTraceError);
    assert.throws(() => parseSabreTrace('[{"duration_ms": 0, "bandwidth_kbps": 1}]'), isTraceError);
    assert.throws(() => parseSabreTrace('not json'), isTraceError);
  });

  it('reads Pensieve cooked traces', () => {
    const trace = parseCookedTrace('# time Mbps\n10.0 2.5\n11.0 0\n12.5 3\n');
    assert.deepEqual(trace.points, [
      { atMs: 0, rateBps: 2.5e6 },
      { atMs: 1000, rateBps: 0 },
    ]);
    assert.equal(trace.durationMs, 2500);
    assert.throws(() => parseCookedTrace('1 2\nx y\n'), isTraceError);
    assert.throws(() => parseCookedTrace('1 2\n'), isTraceError);
  });

  it('reads Mahimahi delivery opportunities as rates per 100 ms', () => {
    const lines = [...Array.from({ length: 10 }, () => '5'), '150', '150'].join('\n');
    const trace = parseMahimahiTrace(lines);
    assert.deepEqual(trace.points, [
      { atMs: 0, rateBps: (10 * 1500 * 8 * 1000) / 100 },
      { atMs: 100, rateBps: (2 * 1500 * 8 * 1000) / 100 },
    ]);
    assert.throws(() => parseMahimahiTrace('1\n-2\n'), isTraceError);
  });

  it('detects the format from the content', () => {
    assert.equal(parseTrace('[{"duration_ms": 1, "bandwidth_kbps": 1}]', 'a').points.length, 1);
    assert.equal(parseTrace('0\n1\n2\n', 'b').points.length, 1);
    assert.equal(parseTrace('0 1\n1 2\n', 'c').points[0]!.rateBps, 1e6);
  });

  it('loops and looks points up by time', () => {
    const trace = stepTrace(8e6, 2e6, 3000, 10_000);
    assert.equal(traceAt(trace, 0).rateBps, 8e6);
    assert.equal(traceAt(trace, 2999).rateBps, 8e6);
    assert.equal(traceAt(trace, 3000).rateBps, 2e6);
    assert.equal(traceAt(trace, 13_500).rateBps, 2e6);
    assert.equal(traceAt(trace, 10_500).rateBps, 8e6);
  });

  it('generates seeded, bounded, reproducible cellular-like traces that round-trip through cooked text', () => {
    const lte = lteLikeTrace(3, 60_000);
    assert.deepEqual(lteLikeTrace(3, 60_000), lte);
    assert.notDeepEqual(lteLikeTrace(4, 60_000).points, lte.points);
    assert.ok(lte.points.every((p) => p.rateBps >= 1e6 && p.rateBps <= 40e6));
    const mean = lte.points.reduce((sum, p) => sum + p.rateBps, 0) / lte.points.length;
    assert.ok(mean > 5e6 && mean < 25e6, `mean ${mean}`);
    const threeG = threeGLikeTrace(1, 60_000);
    assert.ok(threeG.points.every((p) => p.rateBps >= 150e3 && p.rateBps <= 3e6));
    const back = parseCookedTrace(formatCookedTrace(threeG));
    assert.equal(back.durationMs, threeG.durationMs);
    back.points.forEach((p, i) => assert.ok(Math.abs(p.rateBps - threeG.points[i]!.rateBps) <= 100));
  });
});
