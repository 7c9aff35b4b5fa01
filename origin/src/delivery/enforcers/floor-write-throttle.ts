/**
 * Writes spaced at the rate while a socket-level limit sits at its floor (the cwnd clamp at
 * floorPackets, the kernel pacer's floor rate): the floor alone would let each block out faster
 * than R. The spacing follows the phase's schedule (the flow meter's: the seconds the bytes handed
 * so far should take at R): the next block waits until those bytes are due at `speed` x R. So the
 * phase never runs ahead of its media by more than the block in hand, a still scene after a busy
 * one waits its own time instead of going out free, and time lost while the socket, not the
 * throttle, held writes back (a slower stretch of the path) is made up at once, at the floor's pace.
 */
import type { Schedule } from './enforcer.js';

export class FloorWriteThrottle {
  private engaged = false;
  private blocks = 0;

  /** Whether writes are being spaced (the next written block is counted). */
  get active(): boolean {
    return this.engaged;
  }

  /** Blocks written while the throttle was active. */
  get throttledBlocks(): number {
    return this.blocks;
  }

  /** Enters (or stays at) the floor: how long the next block waits for the bytes before it to be due. */
  delayMs(schedule: Schedule, speed: number, nowMs: number): number {
    this.engaged = true;
    return Math.max(0, schedule.startMs + (schedule.handedSec * 1000) / speed - nowMs);
  }

  /**
   * Leaves the floor: the first block above it still waits for the bytes before it to be due (a
   * still scene's block, sent at the floor's pace, is owed its own time before the limit alone paces
   * again), then the throttle lets go. Returns the wait.
   */
  leave(schedule: Schedule, speed: number, nowMs: number): number {
    const waitMs = this.engaged ? this.delayMs(schedule, speed, nowMs) : 0;
    if (waitMs === 0) this.engaged = false;
    return waitMs;
  }

  /** Stops spacing at once (a lifted limit: catching up). */
  stop(): void {
    this.engaged = false;
  }

  written(): void {
    if (this.engaged) this.blocks++;
  }
}
