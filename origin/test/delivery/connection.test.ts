/**
 * The connection's drain/settle protocol on its own: a scripted socket (an emitter with a byte count)
 * and a scripted SocketControl whose TCP_INFO readings the test sets, timers mocked. No sockets, no
 * wall clock.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { afterEach, beforeEach, describe, it, mock } from 'node:test';
import type { SocketControl, TcpInfo } from '@trickle/native';
import { Connection, type ConnectionPort, type DrainOutcome, type TcpSnapshot } from '../../src/delivery/connection.js';
import { defaultDeliveryConfig } from '../../src/delivery/delivery-config.js';

class ScriptedSocket extends EventEmitter {
  bytesWritten = 0;
  destroyed = false;
}

function reading(fields: Partial<TcpInfo>): TcpInfo {
  return { kernelLengthBytes: 232, unacked: 0, notsentBytes: 0, rttUs: 40_000, mss: 1448, ...fields };
}

function setup(options: { drainTimeoutMs?: number; initialWindowPackets?: number } = {}) {
  const socket = new ScriptedSocket();
  let info: TcpInfo | undefined = reading({ bytesSent: 0, bytesAcked: 0 });
  const calls = { tcpInfo: 0, forget: 0, setInitialWindow: 0 };
  const errors: string[] = [];
  let draining = 0;
  const control = {
    tcpInfo: () => {
      calls.tcpInfo++;
      if (info === undefined) throw Object.assign(new Error('closed'), { code: 'NATIVE_ERR_EBADF' });
      return info;
    },
    setCongestionControl: () => undefined,
    getCongestionControl: () => 'cubic',
    clamp: {
      setInitialWindow: () => {
        calls.setInitialWindow++;
      },
      forget: () => {
        calls.forget++;
      },
      state: () => ({ initialWindow: { packets: options.initialWindowPackets, status: 'applied' } }),
    },
  } as unknown as SocketControl;
  const port: ConnectionPort = {
    control,
    drainTimeoutMs: options.drainTimeoutMs ?? 500,
    socketError: (operation) => errors.push(operation),
    countDraining: (delta) => {
      draining += delta;
    },
    pathHold: defaultDeliveryConfig.abr.pathHold,
  };
  const connection = new Connection(
    socket as unknown as Socket,
    7,
    undefined,
    options.initialWindowPackets === undefined ? {} : { initialWindowPackets: options.initialWindowPackets },
    port,
  );
  const ends: { end: TcpSnapshot; outcome: DrainOutcome }[] = [];
  return {
    socket,
    connection,
    calls,
    errors,
    ends,
    draining: () => draining,
    setReading: (next: TcpInfo | undefined) => {
      info = next;
    },
    awaitDrain: (options?: { paceFloorBytesPerSec?: number; deferFirstReading?: boolean }) =>
      connection.awaitDrain((end, outcome) => ends.push({ end, outcome }), options),
  };
}

describe('Connection', () => {
  beforeEach(() => mock.timers.enable({ apis: ['setTimeout'] }));
  afterEach(() => mock.timers.reset());

  it('settles a response acknowledged by its first poll at once, with one reading, and lends it to the next response', () => {
    const c = setup();
    c.socket.bytesWritten = 65_000;
    c.setReading(reading({ bytesSent: 65_000, bytesAcked: 65_000 }));
    c.awaitDrain();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
    assert.equal(c.calls.tcpInfo, 1);
    assert.equal(c.draining(), 0);
    // Nothing written since: the drained reading starts the next response, no second read.
    assert.equal(c.connection.beginResponse()?.bytesAcked, 65_000);
    assert.equal(c.calls.tcpInfo, 1);
    // Written since (here by sendfile(2), which the socket's count does not see): read anew.
    c.connection.sentFile(10);
    c.connection.beginResponse();
    assert.equal(c.calls.tcpInfo, 2);
  });

  it('polls at about a quarter of the RTT until the last byte is acknowledged', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 65_000, bytesAcked: 20_000, unacked: 31 }));
    c.awaitDrain();
    assert.equal(c.ends.length, 0);
    mock.timers.tick(9);
    assert.equal(c.calls.tcpInfo, 1, 'not before rtt / 4 (10 ms)');
    mock.timers.tick(1);
    assert.equal(c.calls.tcpInfo, 2);
    c.setReading(reading({ bytesSent: 65_000, bytesAcked: 65_000 }));
    mock.timers.tick(10);
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
    assert.equal(c.ends[0]!.end.info?.bytesAcked, 65_000);
  });

  it("ends the wait at the next request: drained if the reading then shows every byte acknowledged, 'next-request' if not", () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 1000, bytesAcked: 0, unacked: 1 }));
    c.awaitDrain();
    c.setReading(reading({ bytesSent: 1000, bytesAcked: 1000 }));
    const start = c.connection.beginResponse();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
    assert.equal(start?.bytesAcked, 1000, 'the settling reading starts the next response');
    assert.equal(c.calls.tcpInfo, 2);

    c.setReading(reading({ bytesSent: 2000, bytesAcked: 1000, unacked: 1 }));
    c.awaitDrain();
    c.connection.beginResponse();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained', 'next-request'],
    );
    assert.equal(c.draining(), 0);
  });

  it('reads an unpaced keep-alive response once: at the next request, if it comes before the first poll', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 0, bytesAcked: 0, rttUs: 40_000 }));
    c.connection.beginResponse();
    assert.equal(c.calls.tcpInfo, 1, "the response's start");
    c.setReading(reading({ bytesSent: 65_000, bytesAcked: 65_000 }));
    c.awaitDrain({ deferFirstReading: true });
    assert.equal(c.calls.tcpInfo, 1, 'no reading at the last write');
    mock.timers.tick(9);
    const start = c.connection.beginResponse();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
    assert.equal(c.calls.tcpInfo, 2, 'one reading ended it and starts the next response');
    assert.equal(start?.bytesAcked, 65_000);
    mock.timers.tick(100);
    assert.equal(c.calls.tcpInfo, 2, 'its poll was cancelled');
  });

  it('reads an unpaced keep-alive response at the first poll, a quarter of the last RTT after its last write, without a next request', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 0, bytesAcked: 0, rttUs: 40_000 }));
    c.connection.beginResponse();
    c.setReading(reading({ bytesSent: 65_000, bytesAcked: 65_000 }));
    c.awaitDrain({ deferFirstReading: true });
    mock.timers.tick(9);
    assert.equal(c.ends.length, 0);
    mock.timers.tick(1);
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
    assert.equal(c.calls.tcpInfo, 2);
  });

  it('counts as drained a response acknowledged up to its own end, with bytes after it in flight (a TLS close_notify)', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 5000, bytesAcked: 3000, unacked: 2 }));
    c.awaitDrain();
    c.setReading(reading({ bytesSent: 5031, bytesAcked: 5000, unacked: 1 }));
    mock.timers.tick(10);
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
  });

  it('times out a response whose bytes stay unacknowledged past the drain timeout, the socket still open', () => {
    const c = setup({ drainTimeoutMs: 0 });
    c.setReading(reading({ bytesSent: 5000, bytesAcked: 0, unacked: 4 }));
    c.awaitDrain();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['timeout'],
    );
  });

  it('allows a paced rest its time at the pace floor before timing out, polling at half the time it still needs', () => {
    const c = setup({ drainTimeoutMs: 0 });
    // 100 packets of 1448 B unacknowledged at 144,800 B/s: 1 s of rest.
    c.setReading(reading({ bytesSent: 200_000, bytesAcked: 55_200, unacked: 100 }));
    c.awaitDrain({ paceFloorBytesPerSec: 144_800 });
    assert.equal(c.ends.length, 0, 'not timed out at once: the rest has a second to leave');
    mock.timers.tick(499);
    assert.equal(c.calls.tcpInfo, 1);
    mock.timers.tick(1);
    assert.equal(c.calls.tcpInfo, 2, 'the next poll at half the rest (500 ms)');
  });

  it("tells a client that left with bytes unacknowledged ('client-left') from the server's own close ('server-closed')", () => {
    const left = setup();
    left.setReading(reading({ bytesSent: 5000, bytesAcked: 0, unacked: 4 }));
    left.awaitDrain();
    left.socket.emit('end');
    assert.deepEqual(
      left.ends.map((e) => e.outcome),
      ['client-left'],
    );

    const closed = setup();
    closed.setReading(reading({ bytesSent: 5000, bytesAcked: 0, unacked: 4 }));
    closed.awaitDrain();
    closed.socket.destroyed = true;
    closed.socket.emit('close', false);
    assert.deepEqual(
      closed.ends.map((e) => e.outcome),
      ['server-closed'],
    );
    assert.equal(closed.ends[0]!.end.info?.unacked, 4, 'a closed socket: the last reading it gave');
    assert.equal(closed.calls.forget, 1, "the clamp's entry goes with the socket");
  });

  it("does not take a reset socket's emptied queues for acknowledgements (the reset reached the kernel before Node saw the end)", () => {
    const reset = setup();
    // 5000 B unacknowledged when the first poll reads them; the client's reset then empties the queues (TCP_CLOSE).
    reset.setReading(reading({ bytesSent: 5000, bytesAcked: 0, unacked: 4 }));
    reset.awaitDrain();
    reset.setReading(reading({ state: 7, bytesSent: 5000, bytesAcked: 1200, unacked: 0 }));
    mock.timers.tick(50);
    assert.equal(reset.ends.length, 0, 'a closed socket with 3800 B never acknowledged is not drained');
    reset.socket.emit('end');
    assert.deepEqual(
      reset.ends.map((e) => e.outcome),
      ['client-left'],
    );

    const clean = setup();
    // Closed cleanly: every byte acknowledged, and the FIN's one byte of sequence space with them.
    clean.setReading(reading({ state: 7, bytesSent: 5000, bytesAcked: 5001, unacked: 0 }));
    clean.awaitDrain();
    assert.deepEqual(
      clean.ends.map((e) => e.outcome),
      ['drained'],
    );
  });

  it('takes a clean FIN that came before the response finished as drained (TLS completes writes after the bytes left)', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 5000, bytesAcked: 5000 }));
    c.socket.emit('end');
    assert.equal(c.connection.peerEndedWithAll?.info?.bytesAcked, 5000);
    c.awaitDrain();
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['drained'],
    );
  });

  it('says so, once counted, when TCP_INFO fails, and settles on the last reading it had', () => {
    const c = setup();
    c.setReading(reading({ bytesSent: 5000, bytesAcked: 0, unacked: 4 }));
    c.awaitDrain();
    c.setReading(undefined);
    mock.timers.tick(10);
    assert.deepEqual(
      c.ends.map((e) => e.outcome),
      ['server-closed'],
    );
    assert.equal(c.ends[0]!.end.info?.unacked, 4);
    assert.deepEqual(c.errors, ['tcpInfo']);
  });

  it('asks for its initial window once, at its start, and reads back what became of it', () => {
    const c = setup({ initialWindowPackets: 4 });
    assert.equal(c.calls.setInitialWindow, 1);
    assert.deepEqual(c.connection.initialWindow(), { packets: 4, status: 'applied' });
  });

  it("keeps what the connection's segments say about its path: full speed first, then the paced ones", () => {
    const c = setup();
    const hold = () => c.connection.pathHold;
    assert.equal(hold(), undefined);
    // A startup segment: 100 kB in 1.2265 s over a 50 ms base RTT, no loss: a 680 kbit/s link.
    c.connection.segmentAtFullSpeed({
      bytes: 100_000,
      durationMs: 1226.5,
      retransmittedSegments: 0,
      minRttUs: 50_000,
      mssBytes: 1448,
      initialWindowPackets: 10,
    });
    assert.ok(Math.abs(hold()!.holdBps / (1.25 * 680e3) - 1) < 0.002);
    assert.equal(hold()?.aimBps, undefined);
    // The first paced one aimed at the held rate and reached 0.95 of it: the path no longer holds it.
    c.connection.segmentPaced({ aimBps: 850e3, goodputBps: 815e3, bytes: 100_000 });
    assert.equal(hold(), undefined);
  });
});
