/** Loads the compiled addon (node-gyp-build); on failure records why, for the JS fallback. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { packageRoot } from './paths.js';
import { join } from 'node:path';

export interface RawTarget {
  mode: number;
  rateBytesPerSec: number;
  gainMilli: number;
  minPackets: number;
  fixedPackets: number;
  appliedPackets: number;
  appliedRttUs: number;
  appliedMss: number;
  /** enum trickle_clamp_rtt: 0 srtt, 1 the path's minimum RTT. */
  clampRtt: number;
  updates: number;
  /** The ssthresh the congestion control last set below the applied clamp (0: none seen). */
  ccSsthresh: number;
  initialWindowPackets: number;
  initialWindowResult: number;
  pacingBytesPerSec: number;
  schedule?: RawScheduleState;
}

/**
 * What the program kept of a scheduled response whose socket closed under it, with the connection's counters at the
 * close.
 */
export interface RawClosedPhase {
  schedule: RawScheduleState;
  /** CLOCK_MONOTONIC, ns. */
  closedNs: number;
  bytesAcked: number;
  totalRetrans: number;
  dataSegsOut: number;
  srttUs: number;
}

export interface RawScheduleState {
  state: number;
  catchUps: number;
  phaseStartNs: number;
  phaseStartAcked: number;
  phaseStartRetrans: number;
  phaseStartSegsOut: number;
  phaseStartSrttUs: number;
  floorNs: number;
  catchingUpNs: number;
  clampSum: number;
  clampSamples: number;
  clampMin: number;
  clampMax: number;
  maxLagUs: number;
  heldNs: number;
  cwndSum: number;
  cwndMin: number;
  cwndMax: number;
}

export interface RawBpfStats {
  rttSamples: number;
  clampUpdates: number;
  closedRemoved: number;
  closedPhasesKept: number;
  setsockoptErrors: number;
  catchUps: number;
  pacingUpdates: number;
  entries: number;
}

/** The addon's exports, as defined in addon/addon.cc. */
export interface NativeBinding {
  /** Fills `out` with TCP_INFO values in tcpInfoFields() order (NaN: not returned); returns the kernel's length. */
  tcpInfoInto(fd: number, out: Float64Array): number;
  tcpInfoFields(): string[];
  setMaxPacingRate(fd: number, bytesPerSecond: number | null): void;
  getMaxPacingRate(fd: number): number | null;
  setCongestionControl(fd: number, name: string): void;
  getCongestionControl(fd: number): string;
  setNotsentLowat(fd: number, bytes: number): void;
  raiseSendBuffer(fd: number, bytes: number): number;
  socketCookie(fd: number): bigint;
  bpfCompiled(): { compiled: boolean; reason?: string };
  bpfLoadAndAttach(cgroupPath: string, pinDir: string): boolean;
  bpfOpenPinned(pinDir: string): void;
  bpfUnpin(pinDir: string): void;
  bpfClose(): void;
  bpfSetTarget(
    cookie: bigint,
    mode: number,
    rateBytesPerSec: number,
    gainMilli: number,
    minPackets: number,
    fixedPackets: number,
    clampRtt: number,
  ): void;
  bpfGetTarget(cookie: bigint): RawTarget | undefined;
  bpfSetInitialWindow(cookie: bigint, packets: number): void;
  bpfSetSchedule(
    cookie: bigint,
    mode: number,
    baseAcked: number,
    throttleOffset: number,
    graceUs: number,
    gainMilli: number,
    minPackets: number,
    clampRtt: number,
    pieces: Uint32Array,
  ): void;
  bpfDeleteTarget(cookie: bigint): boolean;
  /** Reads and deletes the closed phase kept for the cookie. */
  bpfTakeClosed(cookie: bigint): RawClosedPhase | undefined;
  bpfStats(): RawBpfStats;
  /** A transfer id for writes of `path` into the socket, whose ranges end before `endOffsetBytes`. */
  fileSendOpen(fd: number, path: string, endOffsetBytes: number): number;
  /** The sendfile calls when every byte was taken at once (no callback), else -1 and `done` later. */
  fileSendWrite(
    id: number,
    offsetBytes: number,
    lengthBytes: number,
    done: (error: Error | null, sentBytes: number, calls: number) => void,
  ): number;
  /** The bytes a transfer sent over its life, or -1 for an id that is not open. */
  fileSendClose(id: number): number;
}

export interface BuildStatus {
  readonly addon: boolean;
  /** The prebuild used instead of a build (path in the package), or null. */
  readonly prebuilt: string | null;
  readonly bpf: boolean;
  readonly delayline: boolean;
  readonly reasons: Readonly<Record<string, string>>;
}

export function buildStatus(): BuildStatus | undefined {
  try {
    return JSON.parse(readFileSync(join(packageRoot, 'out', 'native-status.json'), 'utf8')) as BuildStatus;
  } catch {
    return undefined;
  }
}

function load(): { binding: NativeBinding | undefined; reason: string | undefined } {
  if (process.platform !== 'linux') return { binding: undefined, reason: `${process.platform} is not Linux` };
  try {
    const require = createRequire(import.meta.url);
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => NativeBinding;
    return { binding: nodeGypBuild(packageRoot), reason: undefined };
  } catch (error) {
    const built = buildStatus()?.reasons.addon;
    return {
      binding: undefined,
      reason: `the addon could not be loaded: ${built ?? (error as Error).message.split('\n')[0]}`,
    };
  }
}

const loaded = load();

/** The addon, or undefined with `bindingUnavailableReason` saying why. */
export const binding: NativeBinding | undefined = loaded.binding;
export const bindingUnavailableReason: string | undefined = loaded.reason;
