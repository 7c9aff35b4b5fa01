/** The benchmarks' reader of Prometheus text: a metric's samples summed over the label sets kept. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { metricTotal } from '../../bench/prometheus-text.js';

const sample = [
  '# HELP nodejs_gc_duration_seconds Garbage collection duration by kind.',
  '# TYPE nodejs_gc_duration_seconds histogram',
  'nodejs_gc_duration_seconds_bucket{le="0.001",kind="minor"} 10',
  'nodejs_gc_duration_seconds_sum{kind="minor"} 0.25',
  'nodejs_gc_duration_seconds_sum{kind="major"} 1.5',
  'trickle_socket_errors_total{operation="openFileSend",code="EMFILE"} 641',
  'trickle_socket_errors_total{operation="tcpInfo",code="EBADF"} 3',
  'process_open_fds 20014',
  '',
].join('\n');

describe('Prometheus text', () => {
  it('sums every label set of a metric, or only those a filter keeps', () => {
    assert.equal(metricTotal(sample, 'nodejs_gc_duration_seconds_sum'), 1.75);
    assert.equal(metricTotal(sample, 'nodejs_gc_duration_seconds_sum', { kind: 'major' }), 1.5);
    assert.equal(
      metricTotal(sample, 'trickle_socket_errors_total', { operation: 'openFileSend', code: 'EMFILE' }),
      641,
    );
    assert.equal(metricTotal(sample, 'trickle_socket_errors_total'), 644);
  });

  it('reads a metric without labels, and does not take a longer name for it', () => {
    assert.equal(metricTotal(sample, 'process_open_fds'), 20014);
    assert.ok(Number.isNaN(metricTotal(sample, 'nodejs_gc_duration_seconds')));
  });

  it('says NaN for a metric that is not there', () => {
    assert.ok(Number.isNaN(metricTotal(sample, 'trickle_no_such_metric')));
    assert.ok(Number.isNaN(metricTotal(sample, 'trickle_socket_errors_total', { code: 'EACCES' })));
  });
});
