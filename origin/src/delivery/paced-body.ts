/**
 * The body of a paced response: a Readable that produces one block at a time when its driver lets
 * it, and (unless the driver reads ahead) only when the socket has taken the previous one.
 * Destroying it (client abort) takes it off the block timer at once; nothing is left behind.
 */
import { Readable } from 'node:stream';
import type { BlockTimer, Sleeper } from './block-timer.js';
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
  /**
   * Hands the block to the socket: true when all of it is there now (`done` is not called), false
   * when the rest goes as the socket has room (`done` then). Throws what fails at once.
   */
  send(offset: number, sizeBytes: number, done: (error: Error | null) => void): boolean;
  /**
   * The body is done with the sink (every block is in the socket, or the client left): stop what is under way and
   * release what it holds.
   */
  close(): void;
}

/** Startup goes at full speed: larger blocks cost fewer calls and change nothing on the wire. */
const startupBlockBytes = 256 * 1024;

/**
 * Blocks go back to back until one must wait (it sleeps on the engine's block timer) or the socket
 * is full (the sink calls back): no promise, timer object or closure per block.
 */
export class PacedBody extends Readable implements Sleeper {
  private offset: number;
  private throttling = false;
  /** The throttled block waiting for its time, and the timer tick it sleeps until. */
  private waiting: Block | undefined;
  private sleepingTick: number | undefined;
  private sinkStarted = false;
  private sinkFinished = false;
  private readonly onSent = (error: Error | null) => (error === null ? this.pump() : this.destroy(error));

  constructor(
    private readonly source: BlockSource,
    rangeStart: number,
    private readonly rangeEnd: number,
    private readonly driver: BlockDriver,
    private readonly timer: BlockTimer,
    private readonly now: () => number = () => performance.now(),
    private readonly sink?: BlockSink,
  ) {
    super({ highWaterMark: driver.readAheadBlocks * driver.blockBytes });
    this.offset = rangeStart;
  }

  /**
   * Every byte of the range has been pushed, or is in the socket for a sink (the stream may not have emitted 'end'
   * yet).
   */
  get allPushed(): boolean {
    return this.sink === undefined ? this.offset > this.rangeEnd : this.sinkFinished;
  }

  override _read(): void {
    if (this.sink === undefined) {
      this.produce();
      return;
    }
    // Into a sink the body drives itself, block after block; the stream is only asked once.
    if (this.sinkStarted) return;
    this.sinkStarted = true;
    this.sink.start((error) => (error === null ? this.pump() : this.destroy(error)));
  }

  /** The block timer: the waiting block's time has come. */
  wake(): void {
    this.sleepingTick = undefined;
    if (this.destroyed) return;
    if (this.sink !== undefined) this.pump();
    else this.produce();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.sleepingTick !== undefined) this.timer.cancel(this, this.sleepingTick);
    this.sleepingTick = undefined;
    this.closeSink();
    callback(error);
  }

  /** Once: the sink is told the body is done with it (at the end, or when the client left). */
  private closeSink(): void {
    if (this.sink === undefined || this.sinkFinished) return;
    this.sinkFinished = true;
    this.sink.close();
  }

  /** Into the sink: blocks until one must wait or the socket is full. */
  private pump(): void {
    const sink = this.sink!;
    try {
      for (;;) {
        const block = this.destroyed ? undefined : this.nextBlock();
        if (block === undefined) return;
        this.offset += block.sizeBytes;
        this.driver.written(block, this.phaseOf(block));
        if (!sink.send(block.offset, block.sizeBytes, this.onSent)) return;
      }
    } catch (error) {
      this.destroy(error as Error);
    }
  }

  /** Into the stream: one block read and pushed (the stream asks for the next). */
  private produce(): void {
    let block: Block | undefined;
    let bytes: Buffer | Promise<Buffer>;
    try {
      block = this.nextBlock();
      if (block === undefined) return;
      bytes = this.source.read(block.offset, block.sizeBytes);
    } catch (error) {
      this.destroy(error as Error);
      return;
    }
    const read = block;
    if (Buffer.isBuffer(bytes)) this.pushBlock(read, bytes);
    else
      bytes.then(
        (chunk) => this.pushBlock(read, chunk),
        (error: unknown) => this.destroy(error as Error),
      );
  }

  private pushBlock(block: Block, chunk: Buffer): void {
    if (this.destroyed) return;
    if (chunk.length !== block.sizeBytes) {
      this.destroy(new Error(`short read: ${chunk.length} of ${block.sizeBytes} bytes at offset ${block.offset}`));
      return;
    }
    this.offset += block.sizeBytes;
    this.driver.written(block, this.phaseOf(block));
    this.push(chunk);
    // The end goes with the last block, not on a later read after the socket has taken it.
    if (this.offset > this.rangeEnd) this.push(null);
  }

  private phaseOf(block: Block): 'startup' | 'throttling' {
    return block.offset < this.driver.startupEndOffset ? 'startup' : 'throttling';
  }

  /**
   * The next block if it may go now; undefined when the range is done (the body ends) or the
   * block must wait (it sleeps on the timer and is asked again, with the time then, on waking).
   */
  private nextBlock(): Block | undefined {
    if (this.offset > this.rangeEnd) {
      this.closeSink();
      this.push(null);
      return undefined;
    }
    const driver = this.driver;
    let block = this.waiting;
    if (block === undefined) {
      const inStartup = this.offset < driver.startupEndOffset;
      // Startup blocks end where the throttling phase begins, so phase lengths are exact to the byte.
      const limit = inStartup ? Math.min(this.rangeEnd + 1, driver.startupEndOffset) : this.rangeEnd + 1;
      const sizeBytes = Math.min(
        inStartup ? Math.max(startupBlockBytes, driver.blockBytes) : driver.blockBytes,
        limit - this.offset,
      );
      block = {
        offset: this.offset,
        sizeBytes,
        rateBytesPerSec: driver.rateAt(this.offset, sizeBytes),
        nowMs: this.now(),
      };
      if (inStartup) return block;
      if (!this.throttling) {
        this.throttling = true;
        driver.startThrottling(block.nowMs, block.offset);
      }
    } else block = { ...block, nowMs: this.now() };
    const waitMs = driver.beforeBlock(block);
    if (waitMs > 0) {
      this.waiting = block;
      this.sleepingTick = this.timer.schedule(this, waitMs);
      return undefined;
    }
    this.waiting = undefined;
    return block;
  }
}
