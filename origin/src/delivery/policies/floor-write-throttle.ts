/**
 * Writes spaced at the media rate while a socket-level limit sits at its floor (trickle's clamp
 * at floorPackets, the kernel pacer's floor rate): the floor alone would let each block out
 * faster than R. A fresh token bucket on entering the floor (holding `initialTokensBytes`), so
 * tokens never carry over from an earlier stretch at the floor.
 */
import { TokenBucket } from '../token-bucket.js';

export class FloorWriteThrottle {
  private bucket: TokenBucket | undefined;
  private blocks = 0;

  constructor(private readonly initialTokensBytes: number) {}

  /** Whether writes are being spaced (the next written block spends tokens). */
  get active(): boolean {
    return this.bucket !== undefined;
  }

  /** Blocks written while the throttle was active. */
  get throttledBlocks(): number {
    return this.blocks;
  }

  /** Enters (or stays at) the floor: how long the next block of `sizeBytes` waits at `rateBytesPerSec`. */
  delayMs(rateBytesPerSec: number, sizeBytes: number, nowMs: number): number {
    this.bucket ??= new TokenBucket(rateBytesPerSec, nowMs, this.initialTokensBytes);
    this.bucket.setFillRate(rateBytesPerSec, nowMs);
    return this.bucket.delayMs(sizeBytes, nowMs);
  }

  /** Leaves the floor. */
  stop(): void {
    this.bucket = undefined;
  }

  written(sizeBytes: number, nowMs: number): void {
    if (this.bucket === undefined) return;
    this.bucket.consume(sizeBytes, nowMs);
    this.blocks++;
  }
}
