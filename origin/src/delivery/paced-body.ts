/**
 * The body of a paced response: a Readable that produces one block at a time when the policy
 * lets it, and (unless the policy reads ahead) only when the socket has taken the previous one.
 * Destroying it (client abort) clears its timer at once; nothing is left behind.
 */
import { Readable } from 'node:stream';
import type { Block, PolicyDelivery } from './policies/delivery-policy.js';

export interface BlockSource {
  /** `sizeBytes` bytes of the file from `offset`. */
  read(offset: number, sizeBytes: number): Buffer | Promise<Buffer>;
}

export interface PacedBodyHooks {
  /** The first throttled block, at file offset `offset`, is next. */
  onThrottlingStart(nowMs: number, offset: number): void;
  onBlock(block: Block, phase: 'startup' | 'throttling'): void;
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
    private readonly delivery: PolicyDelivery,
    private readonly hooks: PacedBodyHooks,
    private readonly now: () => number = () => performance.now(),
  ) {
    super({ highWaterMark: delivery.readAheadBlocks * delivery.blockBytes });
    this.offset = rangeStart;
  }

  override _read(): void {
    this.next().catch((error: unknown) => this.destroy(error as Error));
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    callback(error);
  }

  private async next(): Promise<void> {
    if (this.offset > this.rangeEnd) {
      this.push(null);
      return;
    }
    const plan = this.delivery.plan;
    const inStartup = this.offset < plan.startupEndOffset;
    // Startup blocks end where the throttling phase begins, so phase lengths are exact to the byte.
    const limit = inStartup ? Math.min(this.rangeEnd + 1, plan.startupEndOffset) : this.rangeEnd + 1;
    const sizeBytes = Math.min(inStartup ? Math.max(startupBlockBytes, this.delivery.blockBytes) : this.delivery.blockBytes, limit - this.offset);
    let block: Block = { offset: this.offset, sizeBytes, rateBytesPerSec: plan.rateAt(this.offset, sizeBytes), nowMs: this.now() };
    if (!inStartup) {
      if (!this.throttling) {
        this.throttling = true;
        this.hooks.onThrottlingStart(block.nowMs, block.offset);
      }
      let waitMs = this.delivery.beforeBlock(block);
      while (waitMs > 0) {
        await this.sleep(waitMs);
        if (this.destroyed) return;
        block = { ...block, nowMs: this.now() };
        waitMs = this.delivery.beforeBlock(block);
      }
    }
    const chunk = await this.source.read(block.offset, block.sizeBytes);
    if (this.destroyed) return;
    if (chunk.length !== block.sizeBytes) throw new Error(`short read: ${chunk.length} of ${block.sizeBytes} bytes at offset ${block.offset}`);
    this.offset += block.sizeBytes;
    if (!inStartup) this.delivery.afterBlock(block);
    this.hooks.onBlock(block, inStartup ? 'startup' : 'throttling');
    this.push(chunk);
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
