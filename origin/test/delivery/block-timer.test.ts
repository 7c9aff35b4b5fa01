/** The coalescing block timer on an injected clock: ticks, never early, one timer armed, cancel, sleeping again. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockTimer, type Sleeper, type TimerHost } from '../../src/delivery/block-timer.js';

/** A clock and one-shot timers the test advances by hand. */
function fakeHost(): TimerHost & {
  nowMs: number;
  timers: { atMs: number; callback: () => void }[];
  advanceTo(ms: number): void;
} {
  const host = {
    nowMs: 0,
    timers: [] as { atMs: number; callback: () => void }[],
    now: () => host.nowMs,
    setTimeout(callback: () => void, delayMs: number) {
      const timer = { atMs: host.nowMs + delayMs, callback };
      host.timers.push(timer);
      return timer;
    },
    clearTimeout(handle: unknown) {
      host.timers = host.timers.filter((timer) => timer !== handle);
    },
    advanceTo(ms: number) {
      for (;;) {
        const due = host.timers.filter((timer) => timer.atMs <= ms).sort((a, b) => a.atMs - b.atMs)[0];
        if (due === undefined) break;
        host.timers = host.timers.filter((timer) => timer !== due);
        host.nowMs = due.atMs;
        due.callback();
      }
      host.nowMs = ms;
    },
  };
  return host;
}

function sleeper(name: string, woken: string[], host: { now(): number }, then?: () => void): Sleeper {
  return {
    wake() {
      woken.push(`${name}@${host.now()}`);
      then?.();
    },
  };
}

describe('block timer', () => {
  it(
    'wakes each sleeper at the first tick boundary at or after its time, those of one ' +
      'tick together, with one timer armed',
    () => {
      const host = fakeHost();
      const timer = new BlockTimer(4, host);
      const woken: string[] = [];
      host.nowMs = 1;
      timer.schedule(sleeper('a', woken, host), 5); // due 6: tick 8
      timer.schedule(sleeper('b', woken, host), 6.5); // due 7.5: tick 8
      timer.schedule(sleeper('c', woken, host), 0.5); // due 1.5: tick 4
      timer.schedule(sleeper('d', woken, host), 11); // due 12: tick 12 (on the boundary)
      assert.equal(host.timers.length, 1, 'one timer, for the earliest tick');
      assert.equal(timer.size, 4);
      host.advanceTo(20);
      assert.deepEqual(woken, ['c@4', 'a@8', 'b@8', 'd@12']);
      assert.equal(host.timers.length, 0);
      assert.equal(timer.size, 0);
    },
  );

  it('never wakes early when its timer fires before the tick on its clock', () => {
    const host = fakeHost();
    const timer = new BlockTimer(4, host);
    const woken: string[] = [];
    timer.schedule(sleeper('a', woken, host), 3);
    const armed = host.timers[0]!;
    host.timers = [];
    host.nowMs = 3.5;
    armed.callback();
    assert.deepEqual(woken, [], 'not yet at tick 4');
    assert.equal(host.timers.length, 1, 'armed again for the same tick');
    host.advanceTo(5);
    assert.deepEqual(woken, ['a@4.5'], 'woken by the timer armed again (whole milliseconds)');
  });

  it(
    'a sleeper woken may sleep again (a later tick); one scheduled earlier than the ' + 'armed tick re-arms the timer',
    () => {
      const host = fakeHost();
      const timer = new BlockTimer(4, host);
      const woken: string[] = [];
      let again = 2;
      const repeating: Sleeper = {
        wake() {
          woken.push(`r@${host.now()}`);
          if (again-- > 0) timer.schedule(repeating, 0.1);
        },
      };
      timer.schedule(sleeper('late', woken, host), 30);
      timer.schedule(repeating, 9);
      host.advanceTo(40);
      assert.deepEqual(woken, ['r@12', 'r@16', 'r@20', 'late@32']);
    },
  );

  it('cancels one sleeper of a tick, keeps the others, and disarms when nothing waits', () => {
    const host = fakeHost();
    const timer = new BlockTimer(4, host);
    const woken: string[] = [];
    const a = sleeper('a', woken, host);
    const b = sleeper('b', woken, host);
    const tickA = timer.schedule(a, 5);
    timer.schedule(b, 6);
    timer.cancel(a, tickA);
    timer.cancel(a, tickA);
    host.advanceTo(10);
    assert.deepEqual(woken, ['b@8']);
    const tick = timer.schedule(a, 100);
    assert.equal(host.timers.length, 1);
    timer.cancel(a, tick);
    assert.equal(host.timers.length, 0, 'nothing waits: no timer armed');
    const c = timer.schedule(b, 2);
    assert.equal(c, 3);
    host.advanceTo(200);
    assert.deepEqual(woken, ['b@8', 'b@12']);
  });

  it('refuses a tick that is not positive', () => {
    assert.throws(() => new BlockTimer(0), RangeError);
  });
});
