/** The coalescing pacing clock: slots, order, never early, one timer for many waits, cancellation. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PacingClock } from '../../src/delivery/pacing-clock.js';

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const settle = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('pacing clock', () => {
  it('runs waits due in the same slot together, from one timer, never before they are due, slot by slot in order', async () => {
    const clock = new PacingClock(10);
    const before = timers();
    const ran: { name: string; atMs: number; dueMs: number }[] = [];
    const start = performance.now();
    const wait = (name: string, delayMs: number) => clock.after(delayMs, () => ran.push({ name, atMs: performance.now(), dueMs: start + delayMs }));
    // Scheduled out of order; 'mid' and 'late' fall in one slot (both due in the third slot from the next boundary).
    const toBoundaryMs = Math.ceil(start / 10) * 10 - start;
    wait('late', toBoundaryMs + 28);
    wait('first', 1);
    wait('mid', toBoundaryMs + 21);
    wait('second', toBoundaryMs + 12);
    assert.equal(clock.pending, 4);
    assert.equal(timers(), before + 1, 'one timer for every wait');
    await settle(80);
    assert.deepEqual(ran.slice(0, 2).map((r) => r.name), ['first', 'second']);
    assert.deepEqual(new Set(ran.slice(2).map((r) => r.name)), new Set(['mid', 'late']));
    for (const r of ran) assert.ok(r.atMs >= r.dueMs, `${r.name} ran ${(r.dueMs - r.atMs).toFixed(2)} ms early`);
    const shared = ran.filter((r) => r.name === 'mid' || r.name === 'late').map((r) => r.atMs);
    assert.ok(Math.abs(shared[0]! - shared[1]!) < 1, 'waits of one slot ran in one wake-up');
    assert.equal(clock.pending, 0);
    assert.equal(timers(), before, 'no timer left once nothing waits');
  });

  it('clears its timer when every wait is cancelled, and a wait scheduled from a wake-up runs too', async () => {
    const clock = new PacingClock(4);
    const before = timers();
    const a = clock.after(50, () => assert.fail('cancelled'));
    const b = clock.after(60, () => assert.fail('cancelled'));
    a.cancel();
    a.cancel();
    assert.equal(clock.pending, 1);
    b.cancel();
    assert.equal(clock.pending, 0);
    assert.equal(timers(), before);
    const ran: string[] = [];
    clock.after(2, () => {
      ran.push('outer');
      clock.after(3, () => ran.push('inner'));
    });
    await settle(40);
    assert.deepEqual(ran, ['outer', 'inner']);
    assert.equal(timers(), before);
  });

  it('refuses a slot that is not positive', () => {
    assert.throws(() => new PacingClock(0), /tickMs must be positive/);
  });
});
