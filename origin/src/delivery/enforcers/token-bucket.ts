/**
 * token-bucket: the ustreamer baseline (the paper's application pacing). A token bucket filled at
 * headroom x R (in media seconds, so per-block VBR rates keep the schedule) releases whole blocks (64 kB, or 16 kB for the shrunk-block variant) as soon as it
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
      // Tokens are media seconds, filled at headroom seconds per second; a block costs its bytes'
      // seconds at its own R. Counted in bytes, a wait during a block above the mean would save
      // that block's rate and spend it on the blocks after, releasing VBR media ahead of headroom
      // x real time.
      let bucket: TokenBucket | undefined;
      const paceRates = new RateStats();
      const mediaSec = (block: Block) => block.sizeBytes / block.rateBytesPerSec;
      return {
        blockBytes: options.blockBytes,
        readAheadBlocks,
        limitsInSocket: false,
        detail: undefined,
        clockOnly: true,
        startThrottling: () => undefined,
        beforeBlock(block) {
          // A fresh bucket holds one block, so the first throttled block goes at once.
          bucket ??= new TokenBucket(options.headroom, block.nowMs, mediaSec(block));
          return bucket.delayMs(mediaSec(block), block.nowMs);
        },
        afterBlock(block) {
          bucket?.consume(mediaSec(block), block.nowMs);
          paceRates.add(options.headroom * block.rateBytesPerSec * 8, block.sizeBytes);
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
