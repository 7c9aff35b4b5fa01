/**
 * The body of a paced response: a Readable that produces one block at a time when its driver lets
 * it, and (unless the driver reads ahead) only when the socket has taken the previous one.
 * Destroying it (client abort) clears its timer at once; nothing is left behind.
 */
import { Readable } from 'node:stream';
import type { Block } from './enforcers/enforcer.js';

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

/**
 * Where blocks go instead of the stream's own buffer: straight into the socket (sendfile(2)). The
 * body then carries no bytes and only ends; each block is handed over once the previous one is in
 * the socket.
 */
export interface BlockSink {
  /** Called once before the first block, `ready` when blocks may go (the response's header is in the socket). */
  start(ready: (error: Error | null) => void): void;
  /** Hands the block to the socket; `done` once all of it is there. */
  send(offset: number, sizeBytes: number, done: (error: Error | null) => void): void;
  /** The client left: stop what is under way. */
  cancel(): void;
}

/** Startup goes at full speed: larger blocks cost fewer calls and change nothing on the wire. */
const startupBlockBytes = 256 * 1024;

export class PacedBody extends Readable {
  private offset: number;
  private throttling = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly source: BlockSource,
    rangeStart: number,
    private readonly rangeEnd: number,
    private readonly driver: BlockDriver,
    private readonly now: () => number = () => performance.now(),
    private readonly sink?: BlockSink,
  ) {
    super({ highWaterMark: driver.readAheadBlocks * driver.blockBytes });
    this.offset = rangeStart;
  }

  private sinkStarted = false;
  private sinkFinished = false;

  /** Every byte of the range has been pushed, or is in the socket for a sink (the stream may not have emitted 'end' yet). */
  get allPushed(): boolean {
    return this.sink === undefined ? this.offset > this.rangeEnd : this.sinkFinished;
  }

  override _read(): void {
    if (this.sink === undefined) {
      this.next().catch((error: unknown) => this.destroy(error as Error));
      return;
    }
    // Into a sink the body drives itself, block after block; the stream is only asked once.
    if (this.sinkStarted) return;
    this.sinkStarted = true;
    this.sink.start((error) => (error === null ? this.nextIntoSink() : this.destroy(error)));
  }

  private nextIntoSink(): void {
    this.next().catch((error: unknown) => this.destroy(error as Error));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.sinkFinished) this.sink?.cancel();
    callback(error);
  }

  private async next(): Promise<void> {
    if (this.offset > this.rangeEnd) {
      this.push(null);
      return;
    }
    const driver = this.driver;
    const inStartup = this.offset < driver.startupEndOffset;
    // Startup blocks end where the throttling phase begins, so phase lengths are exact to the byte.
    const limit = inStartup ? Math.min(this.rangeEnd + 1, driver.startupEndOffset) : this.rangeEnd + 1;
    const sizeBytes = Math.min(inStartup ? Math.max(startupBlockBytes, driver.blockBytes) : driver.blockBytes, limit - this.offset);
    let block: Block = { offset: this.offset, sizeBytes, rateBytesPerSec: driver.rateAt(this.offset, sizeBytes), nowMs: this.now() };
    if (!inStartup) {
      if (!this.throttling) {
        this.throttling = true;
        driver.startThrottling(block.nowMs, block.offset);
      }
      let waitMs = driver.beforeBlock(block);
      while (waitMs > 0) {
        await this.sleep(waitMs);
        if (this.destroyed) return;
        block = { ...block, nowMs: this.now() };
        waitMs = driver.beforeBlock(block);
      }
    }
    if (this.sink !== undefined) {
      this.offset += block.sizeBytes;
      driver.written(block, inStartup ? 'startup' : 'throttling');
      this.sink.send(block.offset, block.sizeBytes, (error) => {
        if (error !== null) this.destroy(error);
        else if (this.offset <= this.rangeEnd) this.nextIntoSink();
        else {
          this.sinkFinished = true;
          this.push(null);
        }
      });
      return;
    }
    const chunk = await this.source.read(block.offset, block.sizeBytes);
    if (this.destroyed) return;
    if (chunk.length !== block.sizeBytes) throw new Error(`short read: ${chunk.length} of ${block.sizeBytes} bytes at offset ${block.offset}`);
    this.offset += block.sizeBytes;
    driver.written(block, inStartup ? 'startup' : 'throttling');
    this.push(chunk);
    // The end goes with the last block, not on a later read after the socket has taken it.
    if (this.offset > this.rangeEnd) this.push(null);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        resolve();
      }, ms);
    });
  }
}
