import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BurstSpanMeter, burstGapMs } from '../../bench/burst-span.js';

/** Bursts of `burstBytes` every `periodMs`, each as `chunks` chunks 1 ms apart, from `fromMs`; window [windowFromMs, windowToMs). */
function feed(
  meter: BurstSpanMeter,
  options: {
    burstBytes: number;
    periodMs: number;
    chunks: number;
    untilMs: number;
    windowFromMs: number;
    windowToMs: number;
  },
): number {
  let offset = 0;
  for (let startMs = 0; startMs < options.untilMs; startMs += options.periodMs) {
    for (let c = 0; c < options.chunks; c++) {
      const nowMs = startMs + c;
      meter.chunk(nowMs, offset, nowMs >= options.windowFromMs && nowMs < options.windowToMs);
      offset += options.burstBytes / options.chunks;
    }
  }
  return offset;
}

describe('BurstSpanMeter', () => {
  it('reads a bursty flow at its rate where the window holds a fraction of a burst more', () => {
    // 14,480 B every 1,160 ms (12.48 kB/s, a clamped flow at its floor); a 12 s window from 500 ms holds 10
    // bursts, which over the window read 3.3 % slow
    const meter = new BurstSpanMeter();
    feed(meter, {
      burstBytes: 14_480,
      periodMs: 1160,
      chunks: 4,
      untilMs: 20_000,
      windowFromMs: 500,
      windowToMs: 12_500,
    });
    const span = meter.span();
    assert.ok(span !== null);
    assert.equal(span.fromByte, 14_480);
    assert.equal(span.bursts, 10);
    assert.equal(span.toByte - span.fromByte, 9 * 14_480);
    assert.ok(Math.abs((span.toByte - span.fromByte) / span.seconds - 14_480 / 1.16) < 1e-6);
  });

  it('does not start a burst at the tail of one that began before the window', () => {
    const meter = new BurstSpanMeter();
    // the window opens 1 ms into a burst: its next chunks are its tail, not a start
    feed(meter, { burstBytes: 3000, periodMs: 1000, chunks: 3, untilMs: 5000, windowFromMs: 1001, windowToMs: 5000 });
    assert.equal(meter.span()?.fromByte, 6000);
  });

  it('treats chunks closer than the gap as one burst, and has no span from one burst', () => {
    const meter = new BurstSpanMeter();
    for (let ms = 0; ms < 1000; ms += burstGapMs / 2) meter.chunk(ms, ms, true);
    assert.equal(meter.span(), null);
  });

  it('has no span where the pauses come in a pattern (a large and a small part each second)', () => {
    const meter = new BurstSpanMeter();
    let offset = 0;
    for (let second = 0; second < 12; second++) {
      meter.chunk(second * 1000, offset, true);
      offset += 12_000;
      meter.chunk(second * 1000 + 400, offset, true);
      offset += 3_000;
    }
    assert.equal(meter.span(), null);
  });

  it('has no span where equal bursts come at uneven times', () => {
    const meter = new BurstSpanMeter();
    let offset = 0;
    for (const ms of [0, 1000, 4000, 4500, 8000, 9000]) {
      meter.chunk(ms, offset, true);
      offset += 60_000;
    }
    assert.equal(meter.span(), null);
  });
});
