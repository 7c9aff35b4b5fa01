/**
 * One coalescing timer for every paced body of an engine: a body whose next block must wait sleeps
 * here, woken at the first tick boundary at or after its time (ticks of a few milliseconds). The
 * blocks of all flows due within a tick then go in one wake-up of the event loop, with one timer
 * armed for the earliest tick instead of a timer object per block. Waking up to a tick late costs
 * application pacing nothing: the token bucket keeps accruing meanwhile, so a block's lateness
 * never accumulates into the flow's rate. Never early: a sleeper is woken once its time has come
 * on the timer's clock (`performance.now()` unless a test injects one).
 */

import { MinHeap } from './min-heap.js';

/** What sleeps: a paced body waiting for its next block's time. */
export interface Sleeper {
  wake(): void;
}

/** The clock and the one underlying timer (Node's, unless a test injects its own). */
export interface TimerHost {
  now(): number;
  setTimeout(callback: () => void, delayMs: number): unknown;
  clearTimeout(handle: unknown): void;
}

const nodeHost: TimerHost = {
  now: () => performance.now(),
  setTimeout: (callback, delayMs) => setTimeout(callback, delayMs),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export class BlockTimer {
  /** Sleepers by tick (the tick's time is tick x tickMs). */
  private readonly slots = new Map<number, Sleeper[]>();
  /** The slots' ticks as a min-heap. */
  private readonly ticks = new MinHeap<number>((a, b) => a < b);
  private armed: { readonly tick: number; readonly handle: unknown } | undefined;
  /** Waking a tick's sleepers: the timer is armed once they are done, for the earliest tick left. */
  private firing = false;
  private readonly fire = () => this.onFire();

  constructor(
    readonly tickMs = 4,
    private readonly host: TimerHost = nodeHost,
  ) {
    if (!(tickMs > 0)) throw new RangeError(`tickMs must be positive (got ${tickMs})`);
  }

  /** Sleepers waiting (what the tests check a cancel against). */
  get size(): number {
    let count = 0;
    for (const sleepers of this.slots.values()) count += sleepers.length;
    return count;
  }

  /** Wakes `sleeper` once `delayMs` have passed, at the next tick boundary; returns the tick to cancel with. */
  schedule(sleeper: Sleeper, delayMs: number): number {
    const tick = Math.ceil((this.host.now() + Math.max(0, delayMs)) / this.tickMs);
    const slot = this.slots.get(tick);
    if (slot !== undefined) slot.push(sleeper);
    else {
      this.slots.set(tick, [sleeper]);
      this.ticks.push(tick);
    }
    if (!this.firing && (this.armed === undefined || tick < this.armed.tick)) this.arm(tick);
    return tick;
  }

  /** The sleeper scheduled at `tick` will not be woken (the client left). */
  cancel(sleeper: Sleeper, tick: number): void {
    const slot = this.slots.get(tick);
    const index = slot?.indexOf(sleeper) ?? -1;
    if (slot === undefined || index < 0) return;
    slot.splice(index, 1);
    if (slot.length > 0) return;
    // An emptied slot stays in the heap until its turn (cheap); only the timer goes when nothing waits.
    this.slots.delete(tick);
    if (this.slots.size === 0) this.disarm();
  }

  private arm(tick: number): void {
    this.disarm();
    this.armed = {
      tick,
      handle: this.host.setTimeout(this.fire, Math.max(0, Math.ceil(tick * this.tickMs - this.host.now()))),
    };
  }

  private disarm(): void {
    if (this.armed === undefined) return;
    this.host.clearTimeout(this.armed.handle);
    this.armed = undefined;
  }

  private onFire(): void {
    this.armed = undefined;
    this.firing = true;
    const nowTick = Math.floor(this.host.now() / this.tickMs);
    try {
      for (let tick = this.ticks.peek(); tick !== undefined && tick <= nowTick; tick = this.ticks.peek()) {
        this.ticks.pop();
        const sleepers = this.slots.get(tick);
        if (sleepers === undefined) continue;
        this.slots.delete(tick);
        // A sleeper woken may sleep again: always at a later tick, never this one.
        for (const sleeper of sleepers) sleeper.wake();
      }
    } finally {
      this.firing = false;
      // Slots emptied by cancel leave their ticks behind: skip them to the first that has sleepers.
      while (this.ticks.size > 0 && !this.slots.has(this.ticks.peek()!)) this.ticks.pop();
      const next = this.ticks.peek();
      if (next !== undefined) this.arm(next);
    }
  }
}
