/** Socket introspection and control on live loopback connections (no root needed). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { openSync, closeSync } from 'node:fs';
import type { Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { connectedPair } from './helpers/loopback-pair.js';
import {
  getCongestionControl,
  getMaxPacingRate,
  isSyscallError,
  raiseSendBuffer,
  setCongestionControl,
  setMaxPacingRate,
  setNotsentLowat,
  socketCookie,
  tcpInfo,
} from '../src/index.js';

/**
 * Streams for `durationMs` from serverSide to client; returns the client's goodput in bits/s after
 * `warmupMs` (the first ten packets are never paced, and on loopback a packet is up to 64 KB).
 */
async function stream(serverSide: Socket, client: Socket, durationMs: number, warmupMs = 0): Promise<number> {
  const block = Buffer.alloc(64 * 1024);
  const startMs = performance.now();
  let received = 0;
  let firstMs = 0;
  let lastMs = 0;
  client.on('data', (chunk: Buffer) => {
    const nowMs = performance.now();
    if (nowMs - startMs < warmupMs) return;
    if (firstMs === 0) firstMs = nowMs;
    else received += chunk.length;
    lastMs = nowMs;
  });
  let writing = true;
  const pump = () => {
    while (writing && serverSide.write(block));
  };
  serverSide.on('drain', pump);
  pump();
  await new Promise((resolve) => setTimeout(resolve, durationMs));
  writing = false;
  return ((received * 8) / (lastMs - firstMs)) * 1000;
}

const isErrno = (code: string, syscall?: string) => (error: unknown) =>
  isSyscallError(error) &&
  error.code === code &&
  (syscall === undefined || error.syscall === syscall) &&
  error.errno < 0;

describe('socket introspection and control', () => {
  let pair: Awaited<ReturnType<typeof connectedPair>>;

  before(async () => {
    pair = await connectedPair();
  });

  after(() => {
    pair.client.destroy();
    pair.serverSide.destroy();
    pair.server.close();
  });

  it('reads TCP_INFO by the length the kernel returns, with sane values on a live transfer', async () => {
    const first = tcpInfo(pair.serverSide);
    assert.ok(first.kernelLengthBytes >= 232, `kernel returned ${first.kernelLengthBytes} bytes`);
    for (const [name, value] of Object.entries(first))
      assert.ok(value === undefined || typeof value === 'boolean' || Number.isFinite(value), `${name} = ${value}`);
    assert.ok(
      Object.values(first).filter((value) => value !== undefined).length > 50,
      'the kernel reports most fields',
    );
    await stream(pair.serverSide, pair.client, 300);
    const later = tcpInfo(pair.serverSide);
    assert.ok(later.rttUs! > 0 && later.mss! > 0 && later.cwnd! >= 1);
    assert.ok(later.bytesAcked! > first.bytesAcked!, 'bytesAcked grows');
    assert.ok(later.bytesSent! >= later.bytesAcked!);
    assert.equal(later.state, 1, 'ESTABLISHED');
    if (later.kernelLengthBytes >= 232) assert.equal(typeof later.sndWnd, 'number');
    if (later.kernelLengthBytes < 240)
      assert.equal(later.totalRto, undefined, 'fields past the returned length are undefined');
  });

  it('paces a live transfer with SO_MAX_PACING_RATE: 2 Mbit/s within 10%', async () => {
    const { server, serverSide, client } = await connectedPair();
    try {
      setMaxPacingRate(serverSide, 250_000);
      assert.equal(getMaxPacingRate(serverSide), 250_000);
      const goodput = await stream(serverSide, client, 4000, 1000);
      assert.ok(Math.abs(goodput / 2e6 - 1) < 0.1, `goodput ${goodput} bit/s`);
      setMaxPacingRate(serverSide, null);
      assert.equal(getMaxPacingRate(serverSide), null);
    } finally {
      client.destroy();
      serverSide.destroy();
      server.close();
    }
  });

  it('sets and reads the congestion control, and the not-sent low-water mark', () => {
    const available = ['reno', 'bbr', 'cubic'].filter((name) => {
      try {
        setCongestionControl(pair.client, name);
        return true;
      } catch {
        return false;
      }
    });
    assert.ok(available.length > 0);
    setCongestionControl(pair.client, available[0]!);
    assert.equal(getCongestionControl(pair.client), available[0]);
    assert.throws(() => setCongestionControl(pair.client, 'no-such-cc'), isErrno('ENOENT', 'setsockopt'));
    setNotsentLowat(pair.serverSide, 16_384);
  });

  it('raises the send buffer to hold a payload, and never lowers it', async () => {
    const fresh = await connectedPair();
    try {
      const wmemMaxBytes = Number(readFileSync('/proc/sys/net/core/wmem_max', 'utf8'));
      // What the connection starts with (on loopback, with its 64 kB MSS, already megabytes).
      const initial = raiseSendBuffer(fresh.serverSide, 0);
      assert.ok(initial > 0);
      assert.equal(
        raiseSendBuffer(fresh.serverSide, Math.floor(initial / 4)),
        initial,
        'a payload it holds leaves it as it is',
      );
      // The kernel doubles the value for its overhead and caps it at net.core.wmem_max (doubled).
      const raised = raiseSendBuffer(fresh.serverSide, initial);
      assert.equal(raised, Math.max(initial, Math.min(2 * initial, 2 * wmemMaxBytes)));
      assert.equal(raiseSendBuffer(fresh.serverSide, 10_000), raised, 'fixed from then on, never lowered');
      assert.throws(() => raiseSendBuffer(-1, 1000));
    } finally {
      fresh.client.destroy();
      fresh.serverSide.destroy();
      fresh.server.close();
    }
  });

  it('gives each socket its own stable cookie', () => {
    const a = socketCookie(pair.client);
    assert.equal(typeof a, 'bigint');
    assert.equal(socketCookie(pair.client), a);
    assert.notEqual(socketCookie(pair.serverSide), a);
  });

  it('fails with the errno for a closed socket, a UDP socket and a file', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.destroy();
    serverSide.destroy();
    server.close();
    assert.throws(() => tcpInfo(client), isErrno('EBADF'));
    assert.throws(() => setMaxPacingRate(client, 1000), isErrno('EBADF'));
    const udp = createSocket('udp4');
    udp.bind(0, '127.0.0.1');
    await once(udp, 'listening');
    const udpFd = (udp as unknown as { _handle: { fd: number } })._handle.fd;
    assert.throws(() => tcpInfo(udpFd), isErrno('EOPNOTSUPP', 'getsockopt'));
    assert.equal(typeof socketCookie(udpFd), 'bigint', 'SO_COOKIE works on any socket');
    udp.close();
    const fileFd = openSync('/proc/self/status', 'r');
    try {
      assert.throws(() => tcpInfo(fileFd), isErrno('ENOTSOCK', 'getsockopt'));
      assert.throws(() => socketCookie(fileFd), isErrno('ENOTSOCK'));
    } finally {
      closeSync(fileFd);
    }
    assert.throws(() => tcpInfo(999_999), isErrno('EBADF'));
  });

  it('rejects negative, NaN and infinite rates before any syscall', () => {
    for (const bad of [-1, 0, Number.NaN, Number.POSITIVE_INFINITY]) {
      assert.throws(
        () => setMaxPacingRate(pair.serverSide, bad),
        (error: unknown) => error instanceof RangeError && (error as { code?: string }).code === 'NATIVE_ERR_ARGUMENT',
      );
    }
    assert.throws(
      () => tcpInfo(-1),
      (error: unknown) => (error as { code?: string }).code === 'NATIVE_ERR_ARGUMENT',
    );
  });
});
