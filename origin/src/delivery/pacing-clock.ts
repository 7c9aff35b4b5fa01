/**
 * One coalescing timer for every paced body of the process (a timer wheel with `tickMs` slots):
 * wake-ups due in the same slot run together from one timer, so N flows cost one epoll wake-up
 * per slot instead of one per block each. A wake-up runs at the end of its slot, never before it
 * is due (a token bucket asked again then finds its block's tokens; the bytes it saved while it
 * waited keep its mean rate). Cancelled wake-ups are dropped, and the timer is cleared when none
 * is left, so an idle origin holds no timer.
 */

/** A pending wake-up; `cancel` is safe to call at any time, also after it ran. */
export interface Wake {
  cancel(): void;
}

interface Entry extends Wake {
  readonly run: () => void;
  cancelled: boolean;
}

export class PacingClock {
  /** Slot -> the wake-ups due in it. */
  private readonly slots = new Map<number, Entry[]>();
  /** Slots with entries, as a binary min-heap. */
  private readonly heap: number[] = [];
  private armedSlot: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private live = 0;

  constructor(
    readonly tickMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(tickMs > 0)) throw new RangeError(`tickMs must be positive (got ${tickMs})`);
  }

  /** Pending wake-ups (not cancelled). */
  get pending(): number {
    return this.live;
  }

  /** Runs `run` once, no earlier than `delayMs` from now, at the end of its slot. */
  after(delayMs: number, run: () => void): Wake {
    const slot = Math.ceil((this.now() + Math.max(0, delayMs)) / this.tickMs);
    const entry: Entry = {
      run,
      cancelled: false,
      cancel: () => {
        if (entry.cancelled) return;
        entry.cancelled = true;
        this.live--;
        if (this.live === 0) this.disarm();
      },
    };
    this.live++;
    const entries = this.slots.get(slot);
    if (entries === undefined) {
      this.slots.set(slot, [entry]);
      this.push(slot);
    } else entries.push(entry);
    if (this.armedSlot === undefined || slot < this.armedSlot) this.arm(slot);
    return entry;
  }

  private arm(slot: number): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.armedSlot = slot;
    this.timer = setTimeout(this.fire, Math.max(0, slot * this.tickMs - this.now()));
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.armedSlot = undefined;
    this.slots.clear();
    this.heap.length = 0;
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.armedSlot = undefined;
    const currentSlot = Math.floor(this.now() / this.tickMs);
    while (this.heap.length > 0 && this.heap[0]! <= currentSlot) {
      const slot = this.pop();
      const entries = this.slots.get(slot)!;
      this.slots.delete(slot);
      for (const entry of entries) {
        if (entry.cancelled) continue;
        entry.cancelled = true;
        this.live--;
        entry.run();
      }
    }
    // A wake-up run above may have armed the timer for a new slot already.
    if (this.timer === undefined && this.heap.length > 0) this.arm(this.heap[0]!);
  };

  private push(slot: number): void {
    const heap = this.heap;
    heap.push(slot);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent]! <= slot) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = slot;
  }

  private pop(): number {
    const heap = this.heap;
    const top = heap[0]!;
    const last = heap.pop()!;
    if (heap.length > 0) {
      let i = 0;
      for (;;) {
        const left = 2 * i + 1;
        if (left >= heap.length) break;
        const right = left + 1;
        const child = right < heap.length && heap[right]! < heap[left]! ? right : left;
        if (heap[child]! >= last) break;
        heap[i] = heap[child]!;
        i = child;
      }
      heap[i] = last;
    }
    return top;
  }
}
