/**
 * Fallback where BPF is unavailable: SO_MAX_PACING_RATE at gain x rate. This is kernel pacing,
 * not a cwnd clamp: it does not follow the RTT and bursts are spaced rather than bounded by the
 * window. It is named as what it is in every record.
 */
import { NativeError } from '../errors.js';
import { getMaxPacingRate, setMaxPacingRate, socketFd, tcpInfo, type SocketLike } from '../socket.js';
import {
  checkClampRate,
  checkPackets,
  type ClampBackend,
  type ClampRate,
  type ClampSocketState,
  type ClampStats,
} from './clamp-backend.js';

export class PacingRateClampBackend implements ClampBackend {
  readonly backend = 'pacing-rate';
  /** Sockets with a pacing rate set (held until released or forgotten: a closed socket has no fd to key by). */
  private readonly paced = new Set<SocketLike>();
  private updates = 0;
  private errors = 0;

  constructor(readonly fallbackReason: string | undefined) {}

  setRate(socket: SocketLike, target: ClampRate): void {
    const { rateBytesPerSec, gain } = checkClampRate(target);
    this.apply(socket, rateBytesPerSec * gain);
  }

  /** packets per RTT as a rate, from the socket's current srtt and mss. */
  setPackets(socket: SocketLike, packets: number): void {
    checkPackets(packets);
    const info = tcpInfo(socket);
    const rttUs = info.rttUs ?? 0;
    const mss = info.mss ?? 0;
    if (rttUs <= 0 || mss <= 0)
      throw Object.assign(new Error('no RTT sample yet: cannot turn packets into a pacing rate'), {
        code: 'NATIVE_ERR_ARGUMENT',
      });
    this.apply(socket, (packets * mss * 1e6) / rttUs);
  }

  release(socket: SocketLike): void {
    this.apply(socket, null);
  }

  setInitialWindow(): void {
    throw new NativeError(
      'NATIVE_ERR_UNSUPPORTED',
      'an initial window (TCP_BPF_IW) needs the bpf clamp backend; this host runs the pacing-rate fallback',
    );
  }

  setSchedule(): void {
    throw new NativeError(
      'NATIVE_ERR_UNSUPPORTED',
      'a schedule in the kernel needs the bpf clamp backend; this host runs the pacing-rate fallback',
    );
  }

  forget(socket: SocketLike): void {
    this.paced.delete(socket);
  }

  state(socket: SocketLike): ClampSocketState | undefined {
    return { backend: 'pacing-rate', pacingRateBytesPerSec: getMaxPacingRate(socket) };
  }

  /** No schedules run here, so none is kept. */
  takeClosedPhase(): undefined {
    return undefined;
  }

  stats(): ClampStats {
    return { backend: 'pacing-rate', entries: this.paced.size, updatesApplied: this.updates, errors: this.errors };
  }

  close(): void {
    this.paced.clear();
  }

  private apply(socket: SocketLike, bytesPerSecond: number | null): void {
    const fd = socketFd(socket);
    try {
      setMaxPacingRate(fd, bytesPerSecond === null ? null : Math.max(1, Math.round(bytesPerSecond)));
    } catch (error) {
      this.errors++;
      throw error;
    }
    this.updates++;
    if (bytesPerSecond === null) this.paced.delete(socket);
    else this.paced.add(socket);
  }
}
