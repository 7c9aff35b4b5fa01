/**
 * The ustreamer token bucket (the paper's application pacing): tokens accrue at the fill rate; a
 * block is written as soon as the bucket holds its cost. When the network stalls, tokens keep
 * accruing and are spent back to back on recovery (catch-up), which is what makes application
 * pacing bursty. Unit-free (the enforcer counts media seconds). Pure: the caller passes the time.
 */
export class TokenBucket {
  private tokens: number;
  private updatedMs: number;

  constructor(
    private readonly fillPerSec: number,
    nowMs: number,
    /** Tokens at the start (a fresh bucket holding one block lets it go at once). */
    initialTokens = 0,
  ) {
    if (!(fillPerSec > 0)) throw new RangeError(`fill rate must be positive (got ${fillPerSec})`);
    this.tokens = initialTokens;
    this.updatedMs = nowMs;
  }

  private refill(nowMs: number): void {
    if (nowMs > this.updatedMs) {
      this.tokens += (this.fillPerSec * (nowMs - this.updatedMs)) / 1000;
      this.updatedMs = nowMs;
    }
  }

  /** Tokens available at `nowMs`. */
  available(nowMs: number): number {
    this.refill(nowMs);
    return this.tokens;
  }

  /** How long until `cost` can be spent (0: now). */
  delayMs(cost: number, nowMs: number): number {
    this.refill(nowMs);
    const waitMs = ((cost - this.tokens) * 1000) / this.fillPerSec;
    // Below a microsecond the shortfall is floating-point residue of the sums, not a wait.
    return waitMs < 1e-3 ? 0 : waitMs;
  }

  consume(cost: number, nowMs: number): void {
    this.refill(nowMs);
    this.tokens -= cost;
  }
}
