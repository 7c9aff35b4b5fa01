/**
 * Socket introspection and control: TCP_INFO and the per-socket options a pacing origin needs.
 * Every function takes a net.Socket or a raw file descriptor.
 */
import type { Socket } from 'node:net';
import { binding, bindingUnavailableReason, type NativeBinding } from './binding.js';
import { NativeError, type SyscallError } from './errors.js';

export type SocketLike = Socket | number;

/** TCP_INFO with units in the names; fields the running kernel does not report are undefined. */
export interface TcpInfo {
  readonly state?: number;
  readonly caState?: number;
  readonly retransmits?: number;
  readonly rtoUs?: number;
  readonly mss?: number;
  readonly unacked?: number;
  readonly sacked?: number;
  readonly lost?: number;
  readonly retrans?: number;
  readonly rttUs?: number;
  readonly rttVarUs?: number;
  readonly ssthresh?: number;
  readonly cwnd?: number;
  readonly totalRetrans?: number;
  /** bits per second */
  readonly pacingRateBps?: number;
  /** bits per second; undefined when unlimited */
  readonly maxPacingRateBps?: number;
  readonly bytesAcked?: number;
  readonly bytesReceived?: number;
  readonly segsOut?: number;
  readonly segsIn?: number;
  readonly notsentBytes?: number;
  readonly minRttUs?: number;
  readonly dataSegsOut?: number;
  /** bits per second */
  readonly deliveryRateBps?: number;
  readonly deliveryRateAppLimited?: boolean;
  readonly busyTimeUs?: number;
  readonly rwndLimitedUs?: number;
  readonly sndbufLimitedUs?: number;
  readonly delivered?: number;
  readonly bytesSent?: number;
  readonly bytesRetrans?: number;
  readonly sndWnd?: number;
  readonly rcvWnd?: number;
  readonly totalRto?: number;
  /** How many bytes of struct tcp_info the kernel returned. */
  readonly kernelLengthBytes: number;
  readonly [field: string]: number | boolean | undefined;
}

export function requireBinding(): NativeBinding {
  if (binding === undefined)
    throw new NativeError(
      'NATIVE_ERR_UNSUPPORTED',
      `native socket control is not available: ${bindingUnavailableReason}`,
    );
  return binding;
}

/** The socket's file descriptor; a destroyed socket fails like a closed fd would (EBADF). */
export function socketFd(socket: SocketLike): number {
  if (typeof socket === 'number') return socket;
  const fd = (socket as unknown as { _handle?: { fd?: number } | null })._handle?.fd;
  if (typeof fd !== 'number' || fd < 0) {
    const error = new Error('the socket is closed or has no file descriptor') as SyscallError;
    error.code = 'EBADF';
    error.errno = -9;
    error.syscall = 'fd';
    throw error;
  }
  return fd;
}

type TcpInfoBuilder = (values: Float64Array, kernelLengthBytes: number) => TcpInfo;

/**
 * Builds TcpInfo objects as one object literal with a fixed shape, compiled once from the addon's
 * field list: ~10x faster than assigning 59 keys in a loop (this runs once per paced block).
 * Missing fields (NaN from the addon) become undefined.
 */
function compileTcpInfoBuilder(names: readonly string[]): TcpInfoBuilder {
  if (!names.every((name) => /^[A-Za-z][A-Za-z0-9]*$/.test(name)))
    throw new Error('unexpected TCP_INFO field name from the addon');
  const properties = names.map((name, i) =>
    name === 'deliveryRateAppLimited'
      ? `${name}: values[${i}] !== values[${i}] ? undefined : values[${i}] === 1`
      : `${name}: values[${i}] !== values[${i}] ? undefined : values[${i}]`,
  );
  return new Function(
    'values',
    'kernelLengthBytes',
    `return { ${properties.join(', ')}, kernelLengthBytes };`,
  ) as TcpInfoBuilder;
}

let tcpInfoLayout: { build: TcpInfoBuilder; values: Float64Array } | undefined;

export function tcpInfo(socket: SocketLike): TcpInfo {
  const native = requireBinding();
  tcpInfoLayout ??= (() => {
    const names = native.tcpInfoFields();
    return { build: compileTcpInfoBuilder(names), values: new Float64Array(names.length) };
  })();
  const kernelLengthBytes = native.tcpInfoInto(socketFd(socket), tcpInfoLayout.values);
  return tcpInfoLayout.build(tcpInfoLayout.values, kernelLengthBytes);
}

function checkRate(bytesPerSecond: number): void {
  if (typeof bytesPerSecond !== 'number' || !Number.isFinite(bytesPerSecond) || bytesPerSecond < 1) {
    const error = new RangeError(`rate must be a finite number of bytes per second >= 1 (got ${bytesPerSecond})`);
    Object.assign(error, { code: 'NATIVE_ERR_ARGUMENT' });
    throw error;
  }
}

/** SO_MAX_PACING_RATE in bytes per second (TCP internal pacing, no fq needed); null lifts it. */
export function setMaxPacingRate(socket: SocketLike, bytesPerSecond: number | null): void {
  if (bytesPerSecond !== null) checkRate(bytesPerSecond);
  requireBinding().setMaxPacingRate(socketFd(socket), bytesPerSecond === null ? null : Math.round(bytesPerSecond));
}

/** Bytes per second, or null when unlimited. */
export function getMaxPacingRate(socket: SocketLike): number | null {
  return requireBinding().getMaxPacingRate(socketFd(socket));
}

export function setCongestionControl(socket: SocketLike, name: string): void {
  requireBinding().setCongestionControl(socketFd(socket), name);
}

export function getCongestionControl(socket: SocketLike): string {
  return requireBinding().getCongestionControl(socketFd(socket));
}

/** TCP_NOTSENT_LOWAT: how many unsent bytes may wait in the socket before it stops being writable. */
export function setNotsentLowat(socket: SocketLike, bytes: number): void {
  requireBinding().setNotsentLowat(socketFd(socket), bytes);
}

/**
 * SO_SNDBUF raised so the socket holds about `bytes` of payload (never lowered below what TCP's
 * autotuning reached; capped by net.core.wmem_max; fixed from then on). Returns the effective
 * buffer (sk_sndbuf, which counts the kernel's overhead: about twice the payload).
 */
export function raiseSendBuffer(socket: SocketLike, bytes: number): number {
  return requireBinding().raiseSendBuffer(socketFd(socket), bytes);
}

/**
 * A response's file held open for writes into its socket with sendfile(2): from the page cache
 * into the socket, no copy in user space, no JavaScript per chunk (the addon writes as the socket
 * has room, watching it on the event loop). The file and a duplicate of the socket stay open until
 * `close`, so a write (a paced block) costs one or two sendfile calls and nothing else. Nothing
 * else may write to the socket meanwhile; the socket's own byte count (bytesWritten) does not see
 * these bytes.
 */
export interface FileSend {
  /**
   * Hands `lengthBytes` from `offsetBytes` to the socket. Every byte taken at once: the sendfile
   * calls it took (`done` is never called). Otherwise -1, and `done` once every byte is in the
   * socket or it failed (a reset socket, NATIVE_ERR_FILE_SHORT for a file that ended early).
   * One write at a time; throws what fails at once.
   */
  write(offsetBytes: number, lengthBytes: number, done: SendFileDone): number;
  /**
   * Stops a write under way (its `done` never comes) and releases the file; the bytes sent over the transfer's life.
   * Later calls: undefined.
   */
  close(): number | undefined;
}

/**
 * Opens `path` for writes into `socket` of ranges ending before `endOffsetBytes`. Throws
 * NATIVE_ERR_FILE_SHORT (code) when the file is shorter than that (replaced or truncated since it
 * was described), the syscall's error when it cannot be opened.
 */
export function openFileSend(socket: SocketLike, path: string, endOffsetBytes: number): FileSend {
  const native = requireBinding();
  const id = native.fileSendOpen(socketFd(socket), path, endOffsetBytes);
  let open = true;
  return {
    write: (offsetBytes, lengthBytes, done) => native.fileSendWrite(id, offsetBytes, lengthBytes, done),
    close() {
      if (!open) return undefined;
      open = false;
      return native.fileSendClose(id);
    },
  };
}

/**
 * How an asynchronous write ended: the error (null: every byte is in the socket), the bytes it sent, the sendfile calls
 * it made.
 */
export type SendFileDone = (error: Error | null, sentBytes: number, sendfileCalls: number) => void;

/** Cookies of live sockets: a socket keeps its cookie for life (a bare fd may be reused, so it is not cached). */
const cookies = new WeakMap<Socket, bigint>();

/** SO_COOKIE: the kernel's stable 64-bit id of the socket (the BPF map key). */
export function socketCookie(socket: SocketLike): bigint {
  if (typeof socket === 'number') return requireBinding().socketCookie(socket);
  let cookie = cookies.get(socket);
  if (cookie === undefined) {
    cookie = requireBinding().socketCookie(socketFd(socket));
    cookies.set(socket, cookie);
  }
  return cookie;
}
