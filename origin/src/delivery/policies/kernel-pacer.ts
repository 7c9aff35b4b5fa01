/**
 * Kernel pacing of one response, shared by the pacing and cmcd policies: SO_MAX_PACING_RATE set
 * per block when the rate changes, TCP_NOTSENT_LOWAT of one block during throttling (so a
 * block's rate is set close to when its bytes leave), both reset when the response ends.
 */
import { RateStats } from '../running-stats.js';
import type { PolicyEnv, PolicyReport } from './delivery-policy.js';

export class KernelPacer {
  private appliedBytesPerSec: number | undefined;
  private failed = false;
  private readonly paceRates = new RateStats();

  constructor(
    private readonly env: PolicyEnv,
    private readonly blockBytes: number,
  ) {}

  startThrottling(): void {
    try {
      this.env.control.setNotsentLowat(this.env.socket, this.blockBytes);
    } catch (error) {
      this.env.socketError('setNotsentLowat', error);
    }
  }

  /** Paces the next block at `rateBytesPerSec`; after a failure the response goes unpaced. */
  pace(rateBytesPerSec: number): void {
    const rate = Math.max(1, Math.round(rateBytesPerSec));
    if (rate === this.appliedBytesPerSec || this.failed) return;
    try {
      this.env.control.setMaxPacingRate(this.env.socket, rate);
      this.appliedBytesPerSec = rate;
    } catch (error) {
      this.failed = true;
      this.env.socketError('setMaxPacingRate', error);
    }
  }

  /** Counts a written block toward the pace-rate statistics (when a rate is in force). */
  written(sizeBytes: number): void {
    if (this.appliedBytesPerSec !== undefined) this.paceRates.add(this.appliedBytesPerSec * 8, sizeBytes);
  }

  end(): void {
    if (this.appliedBytesPerSec === undefined) return;
    try {
      this.env.control.setMaxPacingRate(this.env.socket, null);
      this.env.control.setNotsentLowat(this.env.socket, 0);
    } catch (error) {
      this.env.socketError('resetPacing', error);
    }
  }

  report(reason: string): PolicyReport {
    return {
      backend: this.appliedBytesPerSec === undefined ? 'none' : 'kernel-pacing',
      fallbackReason: this.failed ? 'SO_MAX_PACING_RATE failed: served unpaced' : undefined,
      paceRateBps: this.paceRates.summary(),
      clampPackets: null,
      appliedClampPackets: null,
      cwndWhileClampedPackets: null,
      catchUps: 0,
      throttledWriteBlocks: 0,
      reason,
    };
  }
}
