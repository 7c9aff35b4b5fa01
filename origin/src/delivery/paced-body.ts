/**
 * The body of a paced response: a Readable that produces one block at a time when its driver lets
 * it, and (unless the driver reads ahead) only when the socket has taken the previous one.
 * Destroying it (client abort) cancels its wake-up at once; nothing is left behind.
 */
import { Readable } from 'node:stream';
import type { Block } from './enforcers/enforcer.js';
import type { PacingClock, Wake } from './pacing-clock.js';

export interface BlockSource {
  /** `sizeBytes` bytes of the file from `offset`. */
  read(offset: number, sizeBytes: number): Buffer | Promise<Buffer>;
}

/** Where the phases split, how big blocks are, and what each throttled block waits for. */
export interface BlockDriver {
  /** Absolute offset at which the throttling phase begins. */
  readonly startupEndOffset: number;
  readonly blockBytes: number;
  readonly readAheadBlocks: number;
  /** Target rate R of the bytes [offset, offset + sizeBytes), bytes/s. */
  rateAt(offset: number, sizeBytes: number): number;
  /** The first throttled block, at file offset `offset`, is next. */
  startThrottling(nowMs: number, offset: number): void;
  /** Milliseconds to wait before writing this throttled block (0: now); asked again after the wait. */
  beforeBlock(block: Block): number;
  /** The block is being handed to the socket. */
  written(block: Block, phase: 'startup' | 'throttling'): void;
}

/** Startup goes at full speed: larger blocks cost fewer calls and change nothing on the wire. */
const startupBlockBytes = 256 * 1024;

/**
 * Driven by callbacks, not promises: a block that must wait registers one wake-up on the shared
 * pacing clock (no timer, promise or closure of its own), and a block held in memory is pushed in
 * the same call that decided it.
 */
export class PacedBody extends Readable {
  private offset: number;
  private throttling = false;
  private wake: Wake | undefined;
  private readonly onWake = (): void => {
    this.wake = undefined;
    this.step();
  };

  constructor(
    private readonly source: BlockSource,
    rangeStart: number,
    private readonly rangeEnd: number,
    private readonly driver: BlockDriver,
    private readonly clock: PacingClock,
    private readonly now: () => number = () => performance.now(),
  ) {
    super({ highWaterMark: driver.readAheadBlocks * driver.blockBytes });
    this.offset = rangeStart;
  }

  override _read(): void {
    if (this.wake === undefined) this.step();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.wake?.cancel();
    this.wake = undefined;
    callback(error);
  }

  /** Decides the next block: pushes it, or waits on the clock and decides again then. */
  private step(): void {
    if (this.destroyed) return;
    if (this.offset > this.rangeEnd) {
      this.push(null);
      return;
    }
    const driver = this.driver;
    const inStartup = this.offset < driver.startupEndOffset;
    // Startup blocks end where the throttling phase begins, so phase lengths are exact to the byte.
    const limit = inStartup ? Math.min(this.rangeEnd + 1, driver.startupEndOffset) : this.rangeEnd + 1;
    const sizeBytes = Math.min(inStartup ? Math.max(startupBlockBytes, driver.blockBytes) : driver.blockBytes, limit - this.offset);
    const block: Block = { offset: this.offset, sizeBytes, rateBytesPerSec: driver.rateAt(this.offset, sizeBytes), nowMs: this.now() };
    if (!inStartup) {
      if (!this.throttling) {
        this.throttling = true;
        driver.startThrottling(block.nowMs, block.offset);
      }
      // Asked again after the wait, with the time then.
      const waitMs = driver.beforeBlock(block);
      if (waitMs > 0) {
        this.wake = this.clock.after(waitMs, this.onWake);
        return;
      }
    }
    const chunk = this.source.read(block.offset, block.sizeBytes);
    if (Buffer.isBuffer(chunk)) this.deliver(block, chunk, inStartup);
    else chunk.then((bytes) => this.deliver(block, bytes, inStartup), (error: unknown) => this.destroy(error as Error));
  }

  private deliver(block: Block, chunk: Buffer, inStartup: boolean): void {
    if (this.destroyed) return;
    if (chunk.length !== block.sizeBytes) {
      this.destroy(new Error(`short read: ${chunk.length} of ${block.sizeBytes} bytes at offset ${block.offset}`));
      return;
    }
    this.offset += block.sizeBytes;
    this.driver.written(block, inStartup ? 'startup' : 'throttling');
    // push() may call _read() again synchronously (room left under the high-water mark): step() then runs from there.
    this.push(chunk);
  }
}
