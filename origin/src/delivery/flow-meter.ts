/**
 * The flow meter of one response: it owns the response's TCP_INFO readings (at the start, when the
 * throttling phase starts, before each throttled block, at the end), its byte counts per phase,
 * the rates its blocks were given, and the throttling phase's schedule: the bytes the kernel has
 * been handed and the seconds they should take at R. From those it tells enforcers how the phase
 * is doing (`observe`: goodput against the schedule, judged once a few RTTs have passed and only
 * while data waits in the socket) and gives the flow record its facts. Pure apart from the reading function
 * it is given (and the time it is told).
 */
import type { TcpInfo } from '@trickle/native';
import type { Block, Observation, ScheduleProgress, ThrottlingStart } from './enforcers/enforcer.js';
import type { TcpSnapshot } from './connection.js';
import type { RatePlan } from './rates/rate-rule.js';
import { RateStats, RunningStats, type Summary } from './running-stats.js';

/**
 * Bytes the kernel has taken from the application: acknowledged, in flight, or unsent. With
 * TCP_NOTSENT_LOWAT of one block the unsent part is bounded, so this advances only as fast as
 * the path delivers, without acknowledgements' one-RTT lag or the socket's pipeline showing up
 * as a shortfall (the pipeline, up to two blocks and a window, would otherwise read as "behind"
 * for the first seconds of every response).
 */
function takenBytes(info: TcpInfo): number | undefined {
  if (info.bytesAcked === undefined || info.unacked === undefined || info.mss === undefined) return undefined;
  return info.bytesAcked + info.unacked * info.mss + (info.notsentBytes ?? 0);
}

/** Before acknowledgements can say anything about goodput, at least this long must pass. */
export const minimumGoodputWindowMs = 200;

/** What the flow record takes from the meter. */
export interface MeterFacts {
  readonly start: TcpSnapshot;
  /** Taken when the first throttled block was considered; undefined if the response never throttled. */
  readonly throttlingStart: TcpSnapshot | undefined;
  /** The latest reading (the end of a response whose client closed the socket: nothing can be read then). */
  readonly lastReading: TcpSnapshot | undefined;
  readonly startupBytes: number;
  readonly throttledBytes: number;
  /**
   * Startup bytes already sent but not yet acknowledged when throttling began (with a limit in the
   * socket; with an application limit also those still unsent): startup goodput, not throttled goodput.
   */
  readonly startupBacklogBytes: number;
  /**
   * Startup bytes still unsent in the socket when throttling began that leave under its limit (the phase's schedule
   * starts with them).
   */
  readonly unsentStartupBytes: number;
  /** Target R over the throttled blocks (over all blocks when none was throttled), bits/s. */
  readonly targetRateBps: Summary | null;
  /** Mean target of the throttled blocks only, bits/s (what throttled goodput is compared with). */
  readonly throttledTargetMeanBps: number | undefined;
  /** The media's own rate over the same blocks, bits/s. */
  readonly mediaRateBps: Summary | null;
  /**
   * The socket's cwnd read before each throttled block was written (before sampled blocks, for a clock-only enforcer).
   */
  readonly cwndPackets: Summary | null;
}

interface ThrottledStats {
  readonly targets: RateStats;
  readonly mediaRates: RateStats;
  readonly cwnds: RunningStats;
}

export class FlowMeter {
  private latest: TcpSnapshot | undefined;
  private throttlingStart: TcpSnapshot | undefined;
  private startupBytes = 0;
  private throttledBytes = 0;
  private startupBacklogBytes = 0;
  private unsentStartupBytes = 0;
  private readonly targets = new RateStats();
  private readonly mediaRates = new RateStats();
  /** The throttled blocks' figures, made when the first one is counted (most responses of an edge never throttle). */
  private throttled: ThrottledStats | undefined;
  /** The reading of the block being considered (the observation given to the enforcer). */
  private blockReading: TcpInfo | undefined;
  // The throttling phase's schedule: bytes handed to the kernel and the seconds they should take at R.
  private takenAtStart: number | undefined;
  private phaseBytes = 0;
  private phaseSeconds = 0;
  private lastRateBytesPerSec = 1;

  constructor(
    private readonly readTcpInfo: () => TcpInfo | undefined,
    readonly start: TcpSnapshot,
    private readonly options: { readonly goodputGraceRtts: number; readonly limitsInSocket: boolean },
  ) {}

  /** TCP_INFO now (remembered as the latest reading). */
  read(nowMs: number): TcpInfo | undefined {
    const info = this.readTcpInfo();
    if (info !== undefined) this.latest = { atMs: nowMs, info };
    return info;
  }

  /**
   * The first throttled block, at file offset `offset`, is next: the phase's start reading and the startup bytes still
   * unsent.
   */
  startThrottling(nowMs: number, offset: number, plan: RatePlan): ThrottlingStart {
    const info = this.read(nowMs);
    const startInfo = this.start.info;
    const ackedSinceStart =
      info?.bytesAcked !== undefined && startInfo?.bytesAcked !== undefined
        ? info.bytesAcked - startInfo.bytesAcked
        : 0;
    const unsentBytes = Math.min(this.startupBytes, info?.notsentBytes ?? 0);
    const unsent = {
      sizeBytes: unsentBytes,
      rateBytesPerSec: unsentBytes > 0 ? plan.rateAt(offset - unsentBytes, unsentBytes) : 0,
    };
    // Under a limit in the socket, startup bytes still unsent leave at the throttled pace: throttled goodput, at their
    // own R.
    const throttledUnsentBytes = this.options.limitsInSocket ? unsentBytes : 0;
    this.unsentStartupBytes = throttledUnsentBytes;
    if (throttledUnsentBytes > 0) {
      const throttled = this.throttledStats();
      throttled.targets.add(unsent.rateBytesPerSec * 8, throttledUnsentBytes);
      throttled.mediaRates.add(plan.media.rateAt(offset - unsentBytes, unsentBytes) * 8, throttledUnsentBytes);
    }
    this.startupBacklogBytes = Math.max(0, this.startupBytes - ackedSinceStart - throttledUnsentBytes);
    this.throttlingStart = { atMs: nowMs, info };
    // Under a limit in the socket the schedule starts with the unsent startup bytes: the kernel took them before the
    // phase, they leave in it.
    const taken = info === undefined ? undefined : takenBytes(info);
    this.takenAtStart = taken === undefined ? undefined : taken - throttledUnsentBytes;
    if (throttledUnsentBytes > 0) this.handed(throttledUnsentBytes, unsent.rateBytesPerSec);
    return { nowMs, reading: info, unsent };
  }

  /**
   * Reads the socket before a throttled block and tells how the phase is doing. `sampleEveryMs`:
   * read only when the last reading is at least this old (an enforcer that decides by the clock;
   * the readings then only feed the record's cwnd figures).
   */
  observe(nowMs: number, sampleEveryMs = 0): Observation {
    const schedule = { startMs: this.throttlingStart?.atMs ?? nowMs, handedSec: this.phaseSeconds };
    if (sampleEveryMs > 0 && this.latest !== undefined && nowMs - this.latest.atMs < sampleEveryMs) {
      this.blockReading = undefined;
      return { reading: undefined, progress: undefined, schedule };
    }
    const reading = this.read(nowMs);
    this.blockReading = reading;
    return { reading, progress: reading === undefined ? undefined : this.progress(reading, nowMs), schedule };
  }

  private progress(info: TcpInfo, nowMs: number): ScheduleProgress | undefined {
    const rttUs = info.rttUs ?? 0;
    const taken = takenBytes(info);
    const elapsedMs = nowMs - (this.throttlingStart?.atMs ?? nowMs);
    if (
      this.takenAtStart === undefined ||
      taken === undefined ||
      rttUs <= 0 ||
      elapsedMs < Math.max(minimumGoodputWindowMs, (this.options.goodputGraceRtts * rttUs) / 1000)
    )
      return undefined;
    // Nothing waits in the socket: the path took all it was given, so a shortfall is the sender's own
    // (a write throttle or a bucket holding the next block), not the path's. Judging it would lift
    // the limit just before each held-back block and turn that block into a burst.
    if (info.notsentBytes === 0) return undefined;
    // VBR: goodput is compared with R of what the kernel has taken so far (its bytes over the
    // seconds they should take: blocks handed, less what still waits in user space at the last
    // block's rate), not with one block's R.
    const takenDelta = taken - this.takenAtStart;
    const takenSeconds = this.phaseSeconds - Math.max(0, this.phaseBytes - takenDelta) / this.lastRateBytesPerSec;
    return {
      goodputBytesPerSec: (Math.max(0, takenDelta) * 1000) / elapsedMs,
      targetBytesPerSec: takenDelta > 0 && takenSeconds > 0 ? takenDelta / takenSeconds : undefined,
    };
  }

  private handed(sizeBytes: number, rateBytesPerSec: number): void {
    this.phaseBytes += sizeBytes;
    this.phaseSeconds += sizeBytes / rateBytesPerSec;
    this.lastRateBytesPerSec = rateBytesPerSec;
  }

  /**
   * The phase ran in the kernel: its start as the program recorded it (undefined: it never began,
   * e.g. the client left during startup). Startup bytes not yet acknowledged then are startup goodput.
   */
  kernelPhaseStarted(start: TcpSnapshot | undefined): void {
    if (start === undefined) return;
    this.throttlingStart = start;
    const ackedThen = start.info?.bytesAcked;
    const ackedAtStart = this.start.info?.bytesAcked;
    this.startupBacklogBytes =
      ackedThen === undefined || ackedAtStart === undefined
        ? 0
        : Math.max(0, this.startupBytes - (ackedThen - ackedAtStart));
  }

  /** A block went to the socket; `mediaBytesPerSec` is the media's own rate of its bytes. */
  written(block: Block, phase: 'startup' | 'throttling', mediaBytesPerSec: number): void {
    if (phase === 'startup') {
      this.startupBytes += block.sizeBytes;
      this.targets.add(block.rateBytesPerSec * 8, block.sizeBytes);
      this.mediaRates.add(mediaBytesPerSec * 8, block.sizeBytes);
      return;
    }
    this.throttledBytes += block.sizeBytes;
    const throttled = this.throttledStats();
    throttled.targets.add(block.rateBytesPerSec * 8, block.sizeBytes);
    throttled.mediaRates.add(mediaBytesPerSec * 8, block.sizeBytes);
    this.handed(block.sizeBytes, block.rateBytesPerSec);
    const cwnd = this.blockReading?.cwnd;
    this.blockReading = undefined;
    if (cwnd !== undefined) throttled.cwnds.add(cwnd);
  }

  private throttledStats(): ThrottledStats {
    this.throttled ??= { targets: new RateStats(), mediaRates: new RateStats(), cwnds: new RunningStats() };
    return this.throttled;
  }

  facts(): MeterFacts {
    const stats = this.throttled;
    const throttledTarget = stats?.targets.summary() ?? null;
    return {
      start: this.start,
      throttlingStart: this.throttlingStart,
      lastReading: this.latest,
      startupBytes: this.startupBytes,
      throttledBytes: this.throttledBytes,
      startupBacklogBytes: this.startupBacklogBytes,
      unsentStartupBytes: this.unsentStartupBytes,
      // The target of a response that throttled is that of its throttled blocks; otherwise the rate of all it carried.
      targetRateBps: throttledTarget ?? this.targets.summary(),
      throttledTargetMeanBps: throttledTarget?.mean,
      mediaRateBps: throttledTarget !== null ? (stats?.mediaRates.summary() ?? null) : this.mediaRates.summary(),
      cwndPackets: stats?.cwnds.summary() ?? null,
    };
  }
}
