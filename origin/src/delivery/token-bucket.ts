/**
 * The ustreamer token bucket (the paper's application pacing): tokens accrue at the fill rate
 * (headroom x the media rate); a block is written as soon as the bucket holds enough for it.
 * When the network stalls, tokens keep accruing and are spent back to back on recovery
 * (catch-up), which is what makes application pacing bursty. Pure: the caller passes the time.
 */
export class TokenBucket {
  private tokensBytes: number;
  private updatedMs: number;

  constructor(
    private fillBytesPerSec: number,
    nowMs: number,
    /** Tokens at the start (a fresh bucket lets the first block go at once). */
    initialBytes = 0,
  ) {
    if (!(fillBytesPerSec > 0)) throw new RangeError(`fill rate must be positive (got ${fillBytesPerSec})`);
    this.tokensBytes = initialBytes;
    this.updatedMs = nowMs;
  }

  private refill(nowMs: number): void {
    if (nowMs > this.updatedMs) {
      this.tokensBytes += (this.fillBytesPerSec * (nowMs - this.updatedMs)) / 1000;
      this.updatedMs = nowMs;
    }
  }

  /** Tokens available at `nowMs`. */
  available(nowMs: number): number {
    this.refill(nowMs);
    return this.tokensBytes;
  }

  /** How long until `bytes` can be written (0: now). */
  delayMs(bytes: number, nowMs: number): number {
    this.refill(nowMs);
    return this.tokensBytes >= bytes ? 0 : ((bytes - this.tokensBytes) * 1000) / this.fillBytesPerSec;
  }

  consume(bytes: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokensBytes -= bytes;
  }

  /** A new media rate (per VBR block): tokens accrued so far are kept. */
  setFillRate(fillBytesPerSec: number, nowMs: number): void {
    if (!(fillBytesPerSec > 0)) throw new RangeError(`fill rate must be positive (got ${fillBytesPerSec})`);
    this.refill(nowMs);
    this.fillBytesPerSec = fillBytesPerSec;
  }
}
