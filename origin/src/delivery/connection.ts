/**
 * One TCP connection as delivery sees it, owned in one place: its A/B group and transport settings
 * (congestion control, initial window), the bytes written into it (by Node and by sendfile(2)), the
 * reading that can start its next response, and the wait for its current response's last
 * acknowledgement. A response asks its connection; the connection answers the response and never
 * calls the engine, so control flows one way: engine -> response -> connection.
 */
import type { Socket } from 'node:net';
import type { SocketControl, TcpInfo } from '@trickle/native';
import type { AbGroupConfig } from './delivery-config.js';
import {
  nextPathHold,
  pathAfterFullSpeed,
  type FullSpeedOutcome,
  type PathHold,
  type PathOptions,
  type PhaseOutcome,
} from './path-evidence.js';

/**
 * How the wait for a response's last acknowledgement ended: every byte acknowledged, the next
 * request on the connection (the client had it all), the drain timeout with the socket still
 * open, the client gone (FIN or reset) with bytes unacknowledged, or the server's own close
 * (Connection: close; the kernel delivers the rest, unseen).
 */
export type DrainOutcome = 'drained' | 'next-request' | 'timeout' | 'client-left' | 'server-closed';

/** A TCP_INFO reading and when it was taken (performance.now(), ms); undefined info: the kernel did not say. */
export interface TcpSnapshot {
  readonly atMs: number;
  readonly info: TcpInfo | undefined;
}

/** The initial window asked for a connection (TCP_BPF_IW), and what became of it. */
export interface InitialWindowRecord {
  readonly packets: number;
  /** pending: no data segment built yet; failed: the kernel refused it (errno); unsupported: no bpf backend. */
  readonly status: 'pending' | 'applied' | 'failed' | 'unsupported';
  readonly errno?: number;
}

/** What a connection needs from the process it runs in. */
export interface ConnectionPort {
  readonly control: SocketControl;
  /** After the last byte is written, how long to wait for it to be acknowledged before the record is closed. */
  readonly drainTimeoutMs: number;
  /** A failed socket call: logged once, counted; the response goes on without it. */
  socketError(operation: string, error: unknown): void;
  /** Responses waiting for their last acknowledgements (for /healthz and shutdown). */
  countDraining(delta: 1 | -1): void;
  /** When a segment's paced phase says the path held it back (the ABR-aware rate's `pathHold`). */
  readonly pathHold: PathOptions;
}

/** Data bytes the kernel has taken on this connection: sent (less retransmissions, counted again) plus not yet sent. */
export function streamBytesTaken(info: TcpInfo): number | undefined {
  return info.bytesSent === undefined
    ? undefined
    : info.bytesSent - (info.bytesRetrans ?? 0) + (info.notsentBytes ?? 0);
}

/** tcpi_state of a socket the kernel has closed (TCP_CLOSE). */
const tcpStateClose = 7;

/** Every byte the kernel has taken is acknowledged: none in flight, none waiting to be sent. */
export function nothingInFlight(info: TcpInfo): boolean {
  if (info.unacked !== 0 || (info.notsentBytes ?? 0) !== 0) return false;
  if (info.state !== tcpStateClose) return true;
  // A reset empties the queues without acknowledging them (and may reach the kernel before Node sees the socket's
  // end): closed, only the acknowledged count tells (a clean close's FIN adds one to it).
  const takenBytes = streamBytesTaken(info);
  return takenBytes !== undefined && info.bytesAcked !== undefined && info.bytesAcked >= takenBytes;
}

/** Poll interval bounds while waiting for the last bytes to be acknowledged. */
const drainPollMinMs = 1;
const drainPollMaxMs = 50;
/** A response the kernel paces is polled at most this far apart while its rest leaves. */
const pacedDrainPollMaxMs = 1000;

/** About a quarter of the RTT between polls for the last acknowledgement, within the bounds. */
function pollWaitMs(rttUs: number | undefined): number {
  return Math.min(drainPollMaxMs, Math.max(drainPollMinMs, (rttUs ?? 0) / 4000));
}

export class Connection {
  /** The initial window asked for this connection, and what became of it (settled once applied or failed). */
  private initialWindowState: InitialWindowRecord | undefined;
  /** Bytes sendfile(2) wrote, which the socket's own count (bytesWritten) does not see. */
  private sentFileBytes = 0;
  /** Ends the current response's wait: the next request came, the client half-closed, or the socket closed. */
  private settleCurrent: ((cause: 'next-request' | 'end' | 'close') => void) | undefined;
  /** The client closed its side (FIN) or reset the connection. */
  private peerLeft = false;
  /**
   * The client's FIN came with every byte in the kernel acknowledged and none unsent, before the
   * response's 'finish' (read when the FIN came). With the response ended (every byte handed
   * over) and the FIN clean, the client had it all: TLS completes writes after the bytes left.
   */
  private peerEndReading: TcpSnapshot | undefined;
  /**
   * The reading that found the previous response fully acknowledged, and the byte count then:
   * while nothing more was written, TCP_INFO's counters cannot have moved, so it is also the next
   * response's start (one TCP_INFO read per keep-alive response instead of two).
   */
  private idleReading: { readonly info: TcpInfo; readonly bytesWritten: number } | undefined;
  /** The smoothed RTT of the last reading, µs: when to poll a response whose first reading waits. */
  private lastRttUs: number | undefined;
  /** Whether the path held this connection's last paced segment back (see path-evidence.ts). */
  private pathHoldState: PathHold | undefined;
  readonly congestionControl: string | undefined;

  constructor(
    readonly socket: Socket,
    readonly id: number,
    readonly group: AbGroupConfig | undefined,
    transport: { readonly congestionControl?: string; readonly initialWindowPackets?: number },
    private readonly port: ConnectionPort,
  ) {
    const { control } = port;
    const wanted = group?.congestionControl ?? transport.congestionControl;
    if (wanted !== undefined) {
      try {
        control.setCongestionControl(socket, wanted);
      } catch (error) {
        port.socketError('setCongestionControl', error);
      }
    }
    let congestionControl: string | undefined;
    try {
      congestionControl = control.getCongestionControl(socket);
    } catch (error) {
      port.socketError('getCongestionControl', error);
    }
    this.congestionControl = congestionControl;
    const initialWindowPackets = group?.initialWindowPackets ?? transport.initialWindowPackets;
    if (initialWindowPackets !== undefined) {
      try {
        control.clamp.setInitialWindow(socket, initialWindowPackets);
        this.initialWindowState = { packets: initialWindowPackets, status: 'pending' };
      } catch (error) {
        port.socketError('setInitialWindow', error);
        this.initialWindowState = {
          packets: initialWindowPackets,
          status: (error as { code?: unknown }).code === 'NATIVE_ERR_UNSUPPORTED' ? 'unsupported' : 'failed',
        };
      }
    }
    // A client that got everything closes: its FIN arrives after its last ACKs, and the fd is still open at 'end'.
    socket.once('end', () => {
      this.peerLeft = true;
      // Over TLS a client that had everything can close before the response's 'finish' (its writes
      // complete after encryption), or before its 'close' even reports one.
      if (this.settleCurrent === undefined) {
        const info = this.tcpInfo();
        if (info !== undefined && nothingInFlight(info)) this.peerEndReading = { atMs: performance.now(), info };
      }
      this.settleCurrent?.('end');
    });
    socket.once('close', (hadError: boolean) => {
      if (hadError) this.peerLeft = true;
      // Whatever a response wrote for this socket last (a release keeps a finite clamp) goes with it:
      // the program deletes entries at close, but not one written after the kernel had closed the socket.
      // First: without its entry the program keeps no phase as the kernel's socket closes later, so the
      // response ended below (its drain wait settled) takes every phase that will ever be kept for it.
      try {
        control.clamp.forget(socket);
      } catch (error) {
        port.socketError('clamp.forget', error);
      }
      this.settleCurrent?.('close');
    });
  }

  /** Whether the path held this connection's last segment back: what the next segment's rate may aim at. */
  get pathHold(): PathHold | undefined {
    return this.pathHoldState;
  }

  /** A completed segment's paced phase: what it says about the path. */
  segmentPaced(outcome: PhaseOutcome): void {
    this.pathHoldState = nextPathHold(this.pathHoldState, outcome, this.port.pathHold);
  }

  /** A completed segment sent whole at full speed: what it says about the link. */
  segmentAtFullSpeed(outcome: FullSpeedOutcome): void {
    this.pathHoldState = pathAfterFullSpeed(this.pathHoldState, outcome, this.port.pathHold);
  }

  // The SocketPort enforcers reach the socket through (the connection itself: none made per response).
  get control(): SocketControl {
    return this.port.control;
  }

  socketError(operation: string, error: unknown): void {
    this.port.socketError(operation, error);
  }

  /** TCP_INFO now; a failure is logged once, counted, and gives undefined. */
  tcpInfo(): TcpInfo | undefined {
    try {
      const info = this.port.control.tcpInfo(this.socket);
      this.lastRttUs = info.rttUs;
      return info;
    } catch (error) {
      this.port.socketError('tcpInfo', error);
      return undefined;
    }
  }

  /** Bytes written into the socket by Node and by sendfile(2). */
  bytesWritten(): number {
    return this.socket.bytesWritten + this.sentFileBytes;
  }

  sentFile(bytes: number): void {
    this.sentFileBytes += bytes;
  }

  /**
   * A new response on this connection: the previous one's wait ends (the client asked for more, so
   * it had the previous one), and the reading that starts the new one comes back: the previous
   * one's last, when nothing was written since.
   */
  beginResponse(): TcpInfo | undefined {
    this.settleCurrent?.('next-request');
    const idle = this.idleReading;
    this.idleReading = undefined;
    return idle !== undefined && idle.bytesWritten === this.bytesWritten() ? idle.info : this.tcpInfo();
  }

  /** The reading at the client's FIN if it came with every byte written acknowledged (see above). */
  get peerEndedWithAll(): TcpSnapshot | undefined {
    return this.peerEndReading;
  }

  /** The initial window and what became of it, read back from the clamp backend until it has settled. */
  initialWindow(): InitialWindowRecord | undefined {
    const asked = this.initialWindowState;
    if (asked?.status !== 'pending' || this.socket.destroyed) return asked;
    try {
      const state = this.port.control.clamp.state(this.socket)?.initialWindow;
      if (state !== undefined && state.status !== 'pending') this.initialWindowState = state;
    } catch (error) {
      this.port.socketError('clamp.state', error);
    }
    return this.initialWindowState;
  }

  /**
   * After the response's last write: polls TCP_INFO until every byte is acknowledged (or the drain
   * timeout, the next request on the connection, or its close), then hands over the end snapshot.
   * The first poll is at once (a short response may be acknowledged already, and a connection about
   * to close leaves nothing to read after), unless `deferFirstReading`: an unpaced response on a
   * connection that stays open is read once, when the next request comes or at the first poll
   * after about a quarter of the RTT, whichever is first (its drain waits for nothing; the reading
   * at the next request also starts the next response). `paceFloorBytesPerSec`: the bytes left in
   * the socket leave at least this fast (a schedule the kernel paces): the timeout allows the rest
   * its time at that rate, and polls come at about half the time the rest still needs: a few per
   * response, not one per RTT.
   */
  awaitDrain(
    done: (end: TcpSnapshot, outcome: DrainOutcome) => void,
    options: { readonly paceFloorBytesPerSec?: number | undefined; readonly deferFirstReading?: boolean } = {},
  ): void {
    const { paceFloorBytesPerSec } = options;
    const socket = this.socket;
    const finishedMs = performance.now();
    let timeoutMs = this.port.drainTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let lastInfo: TcpInfo | undefined;
    let first = true;
    this.port.countDraining(1);
    const settle = (outcome: DrainOutcome, info: TcpInfo | undefined) => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      this.settleCurrent = undefined;
      this.port.countDraining(-1);
      if (outcome === 'drained' && info !== undefined && (info.notsentBytes ?? 0) === 0 && !socket.destroyed)
        this.idleReading = { info, bytesWritten: this.bytesWritten() };
      done({ atMs: performance.now(), info }, outcome);
    };
    // Closed by the server itself (Connection: close) the kernel still delivers what the socket holds.
    const closedOutcome = (): DrainOutcome => (this.peerLeft ? 'client-left' : 'server-closed');
    /**
     * The response's last byte in the TCP stream, read when it was handed over. Acknowledged up to
     * it counts as drained even with bytes in flight after it: a TLS peer's close_notify is answered
     * by the server's own before 'end' is seen.
     */
    let responseEndBytes: number | undefined;
    const acknowledgedAll = (info: TcpInfo) =>
      nothingInFlight(info) ||
      (responseEndBytes !== undefined && info.bytesAcked !== undefined && info.bytesAcked >= responseEndBytes);
    this.settleCurrent = (cause) => {
      const info = socket.destroyed ? lastInfo : (this.tcpInfo() ?? lastInfo);
      const drained = info !== undefined && acknowledgedAll(info);
      settle(drained ? 'drained' : cause === 'next-request' ? 'next-request' : closedOutcome(), info);
    };
    const poll = () => {
      timer = undefined;
      if (socket.destroyed) return settle(closedOutcome(), lastInfo);
      const info = this.tcpInfo();
      if (info === undefined) return settle(closedOutcome(), lastInfo);
      lastInfo = info;
      if (first) responseEndBytes = streamBytesTaken(info);
      if (acknowledgedAll(info)) return settle('drained', info);
      const restBytes = (info.unacked ?? 0) * (info.mss ?? 0) + (info.notsentBytes ?? 0);
      const restMs =
        paceFloorBytesPerSec !== undefined && paceFloorBytesPerSec > 0 ? (restBytes / paceFloorBytesPerSec) * 1000 : 0;
      if (first) timeoutMs += restMs;
      first = false;
      if (performance.now() - finishedMs >= timeoutMs) return settle('timeout', info);
      const waitMs =
        restMs > 0 ? Math.min(pacedDrainPollMaxMs, Math.max(drainPollMaxMs, restMs / 2)) : pollWaitMs(info.rttUs);
      timer = setTimeout(poll, waitMs);
    };
    const peerEnd = this.peerEndReading;
    if (peerEnd !== undefined) settle('drained', peerEnd.info);
    else if (options.deferFirstReading === true) timer = setTimeout(poll, pollWaitMs(this.lastRttUs));
    else poll();
  }
}
