import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePingOutput } from '../../src/lab/population-accuracy.js';

const pingText = (times: readonly string[], summary: string, transmitted = times.length) =>
  [
    'PING 10.73.0.1 (10.73.0.1) from 10.73.1.8 : 56(84) bytes of data.',
    ...times.map((time, i) => `64 bytes from 10.73.0.1: icmp_seq=${i + 1} ttl=63 time=${time} ms`),
    '',
    '--- 10.73.0.1 ping statistics ---',
    `${transmitted} packets transmitted, ${times.length} received, ${Math.round((1 - times.length / transmitted) * 100)}% packet loss, time 1803ms`,
    summary,
  ].join('\n');

describe('population accuracy: reading ping', () => {
  it('takes the trimmed mean from the exact summary, not from the whole milliseconds ping prints from 100 ms on', () => {
    // Ten echoes of 248.55 ms print as 249; one of them came back 8 ms late.
    const times = ['249', '249', '249', '249', '257', '249', '249', '249', '249', '249'];
    const result = parsePingOutput(pingText(times, 'rtt min/avg/max/mdev = 248.530/249.355/256.560/2.402 ms'));
    // (249.355 x 10 - 248.530 - 256.560) / 8
    assert.ok(Math.abs(result.trimmedMeanMs - 248.5575) < 1e-9, String(result.trimmedMeanMs));
    assert.deepEqual(result.echoesMs, times.map(Number));
  });

  it('keeps the plain mean below three echoes, and NaN when none came back', () => {
    assert.equal(parsePingOutput(pingText(['62.1', '62.3'], 'rtt min/avg/max/mdev = 62.100/62.200/62.300/0.100 ms', 10)).trimmedMeanMs, 62.2);
    const silent = parsePingOutput(pingText([], '', 10));
    assert.ok(Number.isNaN(silent.trimmedMeanMs));
    assert.deepEqual(silent.echoesMs, []);
  });
});
