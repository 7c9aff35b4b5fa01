/** The real per-socket cwnd clamp: entries in the sock_ops program's map, keyed by socket cookie. */
import type { NativeBinding } from '../binding.js';
import { socketCookie, socketFd, type SocketLike } from '../socket.js';
import { checkClampRate, checkPackets, type ClampBackend, type ClampRate, type ClampSocketState, type ClampStats, type InitialWindowState, type ReleaseOptions } from './clamp-backend.js';

/** Mirrors enum trickle_clamp_mode in bpf/cwnd_clamp.h. */
export const clampMode = { rate: 1, packets: 2, releaseGradual: 3, releaseImmediate: 4 } as const;

export class BpfClampBackend implements ClampBackend {
  readonly backend = 'bpf';
  readonly fallbackReason = undefined;
  private errors = 0;
  /** The cookie of every socket given an entry: a socket the client closed has no fd left to ask. */
  private readonly cookies = new WeakMap<object, bigint>();

  constructor(private readonly native: NativeBinding) {}

  setRate(socket: SocketLike, target: ClampRate): void {
    const { rateBytesPerSec, gain, minPackets } = checkClampRate(target);
    this.write(socket, clampMode.rate, rateBytesPerSec, gain, minPackets, 0);
  }

  setPackets(socket: SocketLike, packets: number): void {
    this.write(socket, clampMode.packets, 0, 1, 1, checkPackets(packets));
  }

  release(socket: SocketLike, options: ReleaseOptions = {}): void {
    this.write(socket, options.mode === 'immediate' ? clampMode.releaseImmediate : clampMode.releaseGradual, 0, 1, 1, 0);
  }

  setInitialWindow(socket: SocketLike, packets: number): void {
    socketFd(socket);
    try {
      this.native.bpfSetInitialWindow(this.cookieOf(socket), checkPackets(packets));
    } catch (error) {
      this.errors++;
      throw error;
    }
  }

  /**
   * Deletes the socket's entry, also after the socket closed: the program removes entries when it
   * sees a socket close, but an entry written after the peer had already reset the connection
   * would otherwise stay.
   */
  forget(socket: SocketLike): void {
    // A bare fd is asked directly (it must still be open); a socket object by what was remembered.
    const cookie = typeof socket === 'number' ? socketCookie(socket) : this.cookies.get(socket);
    if (cookie === undefined) return;
    if (typeof socket !== 'number') this.cookies.delete(socket);
    this.native.bpfDeleteTarget(cookie);
  }

  state(socket: SocketLike): ClampSocketState | undefined {
    const target = this.native.bpfGetTarget(socketCookie(socket));
    if (target === undefined) return undefined;
    const state: ClampSocketState = { backend: 'bpf', appliedPackets: target.appliedPackets === 0 ? undefined : target.appliedPackets, updates: target.updates };
    if (target.initialWindowPackets === 0) return state;
    // The program writes 0 (pending), 1 (applied) or bpf_setsockopt's negative errno.
    const result = target.initialWindowResult;
    const initialWindow: InitialWindowState = { packets: target.initialWindowPackets, status: result === 0 ? 'pending' : result === 1 ? 'applied' : 'failed', ...(result < 0 ? { errno: result } : {}) };
    return { ...state, initialWindow };
  }

  stats(): ClampStats {
    const raw = this.native.bpfStats();
    return { backend: 'bpf', entries: raw.entries, updatesApplied: raw.clampUpdates, rttSamples: raw.rttSamples, closedRemoved: raw.closedRemoved, errors: raw.setsockoptErrors + this.errors };
  }

  close(): void {
    this.native.bpfClose();
  }

  private cookieOf(socket: SocketLike): bigint {
    if (typeof socket === 'number') return socketCookie(socket);
    let cookie = this.cookies.get(socket);
    if (cookie === undefined) this.cookies.set(socket, (cookie = socketCookie(socket)));
    return cookie;
  }

  private write(socket: SocketLike, mode: number, rateBytesPerSec: number, gain: number, minPackets: number, fixedPackets: number): void {
    socketFd(socket);
    try {
      this.native.bpfSetTarget(this.cookieOf(socket), mode, Math.round(rateBytesPerSec), Math.round(gain * 1000), minPackets, fixedPackets);
    } catch (error) {
      this.errors++;
      throw error;
    }
  }
}
