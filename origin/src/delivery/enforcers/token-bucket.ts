/**
 * token-bucket: the ustreamer baseline (the paper's application pacing). A token bucket filled at
 * headroom x R releases whole blocks (64 kB, or 16 kB for the shrunk-block variant) as soon as it
 * holds enough; after a stall the saved tokens are spent back to back (catch-up), which is what
 * makes it bursty.
 */
import { RateStats } from '../running-stats.js';
import { TokenBucket } from '../token-bucket.js';
import type { Block, Enforcer } from './enforcer.js';

export interface TokenBucketOptions {
  readonly headroom: number;
  readonly blockBytes: number;
}

/**
 * The bucket keeps its schedule while the socket buffer is full: blocks it releases then wait in
 * user space and go out back to back when the socket drains, as ustreamer's writes did.
 */
const readAheadBlocks = 8;

export function tokenBucketEnforcer(name: string, options: TokenBucketOptions): Enforcer {
  return {
    name,
    paced: true,
    usesClamp: false,
    headroom: options.headroom,
    start() {
      let bucket: TokenBucket | undefined;
      const paceRates = new RateStats();
      const fill = (block: Block) => options.headroom * block.rateBytesPerSec;
      return {
        blockBytes: options.blockBytes,
        readAheadBlocks,
        limitsInSocket: false,
        detail: undefined,
        clockOnly: true,
        startThrottling: () => undefined,
        beforeBlock(block) {
          // A fresh bucket holds one block, so the first throttled block goes at once.
          if (bucket === undefined) bucket = new TokenBucket(fill(block), block.nowMs, options.blockBytes);
          else bucket.setFillRate(fill(block), block.nowMs);
          return bucket.delayMs(block.sizeBytes, block.nowMs);
        },
        afterBlock(block) {
          bucket?.consume(block.sizeBytes, block.nowMs);
          paceRates.add(fill(block) * 8, block.sizeBytes);
        },
        end: () => undefined,
        report: () => ({
          backend: 'app',
          paceRateBps: paceRates.summary(),
          reason: `token bucket at ${options.headroom} x R, ${options.blockBytes}-byte blocks`,
          enforcer: { kind: 'token-bucket', throttledWriteBlocks: paceRates.size },
        }),
      };
    },
  };
}
