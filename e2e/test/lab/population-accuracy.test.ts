import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parsePingOutput } from '../../src/lab/population-accuracy.js';

const pingText = (times: readonly string[], summary: string, transmitted = times.length) =>
  [
    'PING 10.73.0.1 (10.73.0.1) from 10.73.1.8 : 56(84) bytes of data.',
    ...times.map((time, i) => `64 bytes from 10.73.0.1: icmp_seq=${i + 1} ttl=63 time=${time} ms`),
    '',
    '--- 10.73.0.1 ping statistics ---',
    `${transmitted} packets transmitted, ${times.length} ` +
      `received, ${Math.round((1 - times.length / transmitted) * 100)}% packet loss, time ` +
      `1803ms`,
    summary,
  ].join('\n');

describe('population accuracy: reading ping', () => {
  it(
    'takes the trimmed mean from the exact summary, not from the whole milliseconds ' + 'ping prints from 100 ms on',
    () => {
      // Ten echoes of 248.55 ms print as 249; one of them came back 8 ms late.
      const times = ['249', '249', '249', '249', '257', '249', '249', '249', '249', '249'];
      const result = parsePingOutput(pingText(times, 'rtt min/avg/max/mdev = 248.530/249.355/256.560/2.402 ms'));
      // (249.355 x 10 - 248.530 - 256.560) / 8
      assert.ok(Math.abs(result.trimmedMeanMs - 248.5575) < 1e-9, String(result.trimmedMeanMs));
      assert.deepEqual(result.echoesMs, times.map(Number));
    },
  );

  it('leaves out 15 % at each end of 20 echoes, so a stall that held three echoes at once does not count', () => {
    // 61.8 ms links with 0.2 ms of their own: 17 echoes at 62.0, three held 10-16 ms by a stall of the host.
    const times = [
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '78.0',
      '72.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '62.0',
      '72.5',
      '62.0',
    ];
    const sum = times.reduce((total, time) => total + Number(time), 0);
    const result = parsePingOutput(
      pingText(times, `rtt min/avg/max/mdev = 62.000/${(sum / 20).toFixed(3)}/78.000/4.100 ms`),
    );
    assert.ok(Math.abs(result.trimmedMeanMs - 62) < 1e-3, String(result.trimmedMeanMs));
  });

  it('stays within its bound of the exact trimmed mean when ping prints whole milliseconds', () => {
    // Exact RTTs 248.50-248.69 ms (printed 249 but for the first, 248.50 -> 249 too); the stall's two at 262.3 and
    // 258.9.
    const exact = Array.from({ length: 20 }, (_, i) => 248.5 + (i % 10) * 0.021);
    exact[7] = 262.3;
    exact[8] = 258.9;
    const printed = exact.map((ms) => String(Math.round(ms)));
    const mean = exact.reduce((total, ms) => total + ms, 0) / 20;
    const result = parsePingOutput(
      pingText(
        printed,
        `rtt min/avg/max/mdev ` +
          `= ${Math.min(...exact).toFixed(3)}/${mean.toFixed(3)}/${Math.max(...exact).toFixed(3)}/3.000 ` +
          `ms`,
      ),
    );
    const sorted = [...exact].sort((a, b) => a - b);
    const exactTrimmed = sorted.slice(3, 17).reduce((total, ms) => total + ms, 0) / 14;
    assert.ok(
      Math.abs(result.trimmedMeanMs - exactTrimmed) <= (0.5 * 4) / 14,
      `${result.trimmedMeanMs} for ${exactTrimmed}`,
    );
    assert.ok(Math.abs(result.trimmedMeanMs - 248.59) < 0.2, String(result.trimmedMeanMs));
  });

  it('counts no duplicate echo', () => {
    const text = pingText(['20.1', '20.3', '20.2'], 'rtt min/avg/max/mdev = 20.100/20.200/20.300/0.100 ms').replace(
      'time=20.3 ms',
      'time=20.3 ms\n64 bytes from 10.73.0.1: icmp_seq=2 ttl=63 time=20.9 ms (DUP!)',
    );
    assert.deepEqual(parsePingOutput(text).echoesMs, [20.1, 20.3, 20.2]);
  });

  it('keeps the plain mean below three echoes, and NaN when none came back', () => {
    assert.equal(
      parsePingOutput(pingText(['62.1', '62.3'], 'rtt min/avg/max/mdev = 62.100/62.200/62.300/0.100 ms', 10))
        .trimmedMeanMs,
      62.2,
    );
    const silent = parsePingOutput(pingText([], '', 10));
    assert.ok(Number.isNaN(silent.trimmedMeanMs));
    assert.deepEqual(silent.echoesMs, []);
  });
});
