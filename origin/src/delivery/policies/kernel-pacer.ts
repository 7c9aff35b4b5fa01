/**
 * Kernel pacing of one response, shared by the pacing and cmcd policies: SO_MAX_PACING_RATE set
 * per block when the rate changes, TCP_NOTSENT_LOWAT of one block during throttling (so a
 * block's rate is set close to when its bytes leave), both reset when the response ends.
 */
import { RateStats } from '../running-stats.js';
import type { PolicyEnv, PolicyReport, UnsentStartup } from './delivery-policy.js';
import { FloorWriteThrottle } from './floor-write-throttle.js';
import { setNotsentLowat } from './socket-calls.js';

export interface KernelPacerOptions {
  readonly blockBytes: number;
  /** Packets per srtt below which writes, not the kernel, pace (as trickle's clamp floor). */
  readonly floorPackets: number;
}

export class KernelPacer {
  private appliedBytesPerSec: number | undefined;
  /** Entering the floor with no tokens: the first block there, too, takes its own time. */
  private readonly writeThrottle = new FloorWriteThrottle(0);
  private aimedBytesPerSec: number | undefined;
  private failed = false;
  private readonly paceRates = new RateStats();
  /** Startup bytes unsent when throttling began: they leave under the first rate set. */
  private unsentStartupBytes = 0;

  constructor(
    private readonly env: PolicyEnv,
    private readonly options: KernelPacerOptions,
  ) {}

  startThrottling(unsent: UnsentStartup): void {
    this.unsentStartupBytes = unsent.sizeBytes;
    setNotsentLowat(this.env, this.options.blockBytes);
  }

  /**
   * Paces the next block of `sizeBytes` at `rateBytesPerSec` and says how long to wait before
   * writing it; after a failure the response goes unpaced. The rate asked for covers what is still
   * unsent of the previous block too (both leave under it): bytes over the time each part should
   * take at its own rate. Below the floor (floorPackets per srtt) the kernel paces
   * at the floor and writes wait for a token bucket at the rate: a pacing cap far below what the
   * path carries teaches BBR that the path is that slow (pacing-limited samples are not
   * app-limited), and it then takes seconds to grow back once the media rate rises; an idle
   * socket between floor-paced blocks is app-limited, which BBR discounts.
   */
  pace(rateBytesPerSec: number, sizeBytes: number, nowMs: number): number {
    if (this.failed) return 0;
    const info = this.env.tcpInfo();
    const floorBytesPerSec = info?.mss !== undefined && info.rttUs !== undefined && info.rttUs > 0 ? (this.options.floorPackets * info.mss * 1e6) / info.rttUs : 0;
    let waitMs = 0;
    let queueBytesPerSec: number;
    if (rateBytesPerSec < floorBytesPerSec) {
      waitMs = this.writeThrottle.delayMs(rateBytesPerSec, sizeBytes, nowMs);
      queueBytesPerSec = floorBytesPerSec;
    } else {
      this.writeThrottle.stop();
      const unsentBytes = info?.notsentBytes ?? 0;
      const previous = this.aimedBytesPerSec;
      queueBytesPerSec = previous === undefined || unsentBytes === 0 ? rateBytesPerSec : (unsentBytes + sizeBytes) / (unsentBytes / previous + sizeBytes / rateBytesPerSec);
    }
    this.aimedBytesPerSec = rateBytesPerSec;
    const rate = Math.max(1, Math.round(queueBytesPerSec));
    if (rate === this.appliedBytesPerSec) return waitMs;
    try {
      this.env.control.setMaxPacingRate(this.env.socket, rate);
      this.appliedBytesPerSec = rate;
      if (this.unsentStartupBytes > 0) this.paceRates.add(rate * 8, this.unsentStartupBytes);
      this.unsentStartupBytes = 0;
    } catch (error) {
      this.failed = true;
      this.aimedBytesPerSec = undefined;
      this.writeThrottle.stop();
      this.env.socketError('setMaxPacingRate', error);
      return 0;
    }
    return waitMs;
  }

  /** Counts a written block toward the aimed-rate statistics (when a rate is in force) and spends its tokens. */
  written(sizeBytes: number, nowMs: number): void {
    this.writeThrottle.written(sizeBytes, nowMs);
    if (this.appliedBytesPerSec !== undefined && this.aimedBytesPerSec !== undefined) this.paceRates.add(this.aimedBytesPerSec * 8, sizeBytes);
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
      throttledWriteBlocks: this.writeThrottle.throttledBlocks,
      reason: this.writeThrottle.throttledBlocks > 0 ? `${reason}; ${this.writeThrottle.throttledBlocks} block(s) below the floor of ${this.options.floorPackets} packets per srtt had writes throttled at the rate` : reason,
    };
  }
}
