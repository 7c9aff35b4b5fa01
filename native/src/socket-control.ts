/**
 * SocketControl: the small port through which delivery policies reach sockets. The native
 * package implements it; tests and non-Linux hosts can use the same shape.
 */
import type { ClampBackend } from './clamp/clamp-backend.js';
import {
  getCongestionControl,
  openFileSend,
  raiseSendBuffer,
  setCongestionControl,
  setMaxPacingRate,
  setNotsentLowat,
  socketCookie,
  tcpInfo,
  type FileSend,
  type SocketLike,
  type TcpInfo,
} from './socket.js';

export interface SocketControl {
  tcpInfo(socket: SocketLike): TcpInfo;
  setMaxPacingRate(socket: SocketLike, bytesPerSecond: number | null): void;
  setCongestionControl(socket: SocketLike, name: string): void;
  getCongestionControl(socket: SocketLike): string;
  setNotsentLowat(socket: SocketLike, bytes: number): void;
  raiseSendBuffer(socket: SocketLike, bytes: number): number;
  socketCookie(socket: SocketLike): bigint;
  openFileSend(socket: SocketLike, path: string, endOffsetBytes: number): FileSend;
  readonly clamp: ClampBackend;
}

export function createSocketControl(clamp: ClampBackend): SocketControl {
  return {
    tcpInfo,
    setMaxPacingRate,
    setCongestionControl,
    getCongestionControl,
    setNotsentLowat,
    raiseSendBuffer,
    socketCookie,
    openFileSend,
    clamp,
  };
}
