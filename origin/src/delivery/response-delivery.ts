/**
 * One media response under its policy: the one place for a response's state. It drives the body
 * block by block (the BlockDriver of the paced body): startup blocks at full speed, then each
 * throttled block after the flow meter has read the socket and the enforcer has decided what to
 * wait for and set. The enforcer's limits stay on the socket until the last byte is acknowledged;
 * then (or when the client leaves) they are undone and the flow record is built from the meter,
 * the enforcer's report and the response's facts. What outlives the response (the socket's byte
 * count, the drain wait, the reading that starts the next response) it asks of its connection.
 */
import { TLSSocket } from 'node:tls';
import type { FastifyReply } from 'fastify';
import type { SocketControl, TcpInfo } from '@trickle/native';
import type { ByteRange } from '../http/range.js';
import { wholeRangeMaxBytes, type MediaFile } from '../media/library.js';
import { schedulePieces } from '@trickle/native';
import type { Block, Enforcement, Enforcer, KernelEnforcement } from './enforcers/enforcer.js';
import { kernelSchedule } from './kernel-schedule.js';
import { FlowMeter, minimumGoodputWindowMs } from './flow-meter.js';
import { streamBytesTaken, type Connection, type TcpSnapshot } from './connection.js';
import { buildFlowRecord, type ResponseFacts } from './flow-record.js';
import { initialWindowInUse } from './path-evidence.js';
import type { FlowLog } from './flow-log.js';
import type { DeliveryMetrics } from './metrics.js';
import type { BlockTimer } from './block-timer.js';
import { PacedBody, type BlockDriver, type BlockSink } from './paced-body.js';
import { openFileSend, SentFileBody, sendFileSink, type SentFilePiece } from './sent-file-body.js';
import { tlsRecordOverheadBytes, tlsWireOffset } from './tls-records.js';
import type { MediaResponse, RatePlan } from './rates/rate-rule.js';
import type { Selection } from './policy-selection.js';

/** What a response needs from the engine that runs it (its connection answers the rest). */
export interface ResponseServices {
  readonly control: SocketControl;
  readonly metrics: DeliveryMetrics;
  readonly flowLog: FlowLog;
  readonly goodputGraceRtts: number;
  /** Responses over plain TCP are written with sendfile(2) (paced ones block by block). */
  readonly sendFile: boolean;
  /** Where paced bodies sleep until their next block's time. */
  readonly blockTimer: BlockTimer;
  readonly timingAllowOrigin: string;
  readRange(file: MediaFile, range: ByteRange): Buffer | Promise<Buffer>;
  socketError(operation: string, error: unknown): void;
  nextFlowId(): number;
  /** Responses being written (for /healthz and shutdown). */
  countActive(delta: 1 | -1): void;
}

export interface ResponseSpec {
  /** The connection it is written on: its socket, transport settings, byte count and drain wait. */
  readonly connection: Connection;
  readonly reply: FastifyReply;
  readonly file: MediaFile;
  readonly range: ByteRange;
  readonly media: MediaResponse;
  readonly rendition: string | undefined;
  readonly segmentNumber: number | undefined;
  readonly policy: { readonly name: string; readonly enforcer: Enforcer };
  readonly plan: RatePlan;
  /** Why this policy (selection) and why this plan (rule). */
  readonly reason: string;
  /** Where the policy's choice came from. */
  readonly selectionSource: Selection['source'];
  /** The reading that starts it (the connection's previous one when nothing was written since). */
  readonly startReading: TcpInfo | undefined;
}

/**
 * Where a response's bytes are in the TCP stream the program counts: before it (`baseBytes`) and
 * each body offset on the wire. Plain HTTP: the bytes written. HTTPS: the stream carries TLS
 * records (the handshake, tickets, a header and tag per record), so the base comes from the
 * kernel's own count (sent, less retransmitted, plus not yet sent) and offsets grow by each full
 * record's overhead (writes are large: records are full). Undefined: the kernel does not say.
 */
function transportBytes(connection: Connection): { baseBytes: number; onWire: (offset: number) => number } | undefined {
  const socket = connection.socket;
  if (!(socket instanceof TLSSocket)) return { baseBytes: connection.bytesWritten(), onWire: (offset) => offset };
  const info = connection.tcpInfo();
  const baseBytes = info === undefined ? undefined : streamBytesTaken(info);
  if (baseBytes === undefined) return undefined;
  const overheadBytes = tlsRecordOverheadBytes(socket.getProtocol(), socket.getCipher()?.name);
  return { baseBytes, onWire: (offset) => tlsWireOffset(offset, overheadBytes) };
}

/** How often a clock-only enforcer's socket is read for the record (cwnd figures), at most. */
const clockOnlySampleMs = 100;

/** The program's offsets are 32-bit: larger responses go block by block. */
const maxKernelResponseBytes = 0xffff_ffff;

export class ResponseDelivery implements BlockDriver {
  private readonly meter: FlowMeter;
  private readonly enforcement: Enforcement;
  private readonly groupLabel: string;
  private readonly client: { readonly address: string | undefined; readonly port: number | undefined };
  private readonly startedAtEpochMs = Date.now();
  private ended = false;
  /** The body, when it goes block by block or by sendfile(2). */
  private body: PacedBody | SentFileBody | undefined;
  /** The throttling phase runs in the kernel: this mode, not the enforcement's blocks, ends and reports it. */
  private kernel: KernelEnforcement | undefined;
  /** The schedule's lowest rate: the socket's rest leaves at least this fast. */
  private kernelFloorBytesPerSec = 0;
  /** Where the kernel's phase begins, from the range's first byte. */
  private throttleOffsetBytes = 0;
  /** sendfile(2) calls that wrote the body (undefined: Node wrote it). */
  private sendfileCalls: number | undefined;

  constructor(
    private readonly services: ResponseServices,
    private readonly spec: ResponseSpec,
  ) {
    const { connection, policy } = spec;
    const socket = connection.socket;
    this.enforcement = policy.enforcer.start(connection, spec.plan);
    this.meter = new FlowMeter(
      () => connection.tcpInfo(),
      { atMs: performance.now(), info: spec.startReading },
      { goodputGraceRtts: services.goodputGraceRtts, limitsInSocket: this.enforcement.limitsInSocket },
    );
    this.groupLabel = connection.group?.name ?? policy.name;
    // Read now: a socket the client closed no longer knows its peer when the record is built.
    this.client = { address: socket.remoteAddress, port: socket.remotePort };
  }

  // BlockDriver
  get startupEndOffset(): number {
    return this.spec.plan.startupEndOffset;
  }
  get blockBytes(): number {
    return this.enforcement.blockBytes;
  }
  get readAheadBlocks(): number {
    return this.enforcement.readAheadBlocks;
  }
  rateAt(offset: number, sizeBytes: number): number {
    return this.spec.plan.rateAt(offset, sizeBytes);
  }
  startThrottling(nowMs: number, offset: number): void {
    this.enforcement.startThrottling(this.meter.startThrottling(nowMs, offset, this.spec.plan));
  }
  beforeBlock(block: Block): number {
    return this.enforcement.beforeBlock(
      block,
      this.meter.observe(block.nowMs, this.enforcement.clockOnly === true ? clockOnlySampleMs : 0),
    );
  }
  written(block: Block, phase: 'startup' | 'throttling'): void {
    if (phase === 'throttling') this.enforcement.afterBlock(block);
    this.meter.written(block, phase, this.spec.plan.media.rateAt(block.offset, block.sizeBytes));
  }

  /** Sets the headers, sends the body and closes the record when the response is over. */
  run(): void {
    const { reply, policy, plan, connection } = this.spec;
    const socket = connection.socket;
    const services = this.services;
    services.countActive(1);
    if (policy.enforcer.paced) services.metrics.flowStarted(policy.name, this.groupLabel);
    const detail = this.enforcement.detail;
    const headers = plan.headers;
    let timing = `policy;desc="${policy.name}${detail === undefined ? '' : ` (${detail})`}"`;
    if (headers['server-timing'] !== undefined) timing += `, ${headers['server-timing']}`;
    // Clients of an A/B experiment learn their connection's group (to attribute their QoE to it).
    if (connection.group !== undefined) timing += `, ab;desc="${connection.group.name}"`;
    for (const name in headers) if (name !== 'server-timing') reply.header(name, headers[name]);
    reply.header('server-timing', timing);
    // Without it Resource Timing hides Server-Timing from a player page on another origin.
    reply.header('timing-allow-origin', services.timingAllowOrigin);
    // Headers about this viewer (its A/B group, a rate from its buffer, a ?policy= pin) must not be
    // replayed by a shared cache to others: qualified private (RFC 9111 5.2.2.7) keeps the body
    // cacheable; a cache that ignores the qualifier treats the response as private.
    if (
      connection.group !== undefined ||
      headers['server-timing'] !== undefined ||
      headers['cmsd-dynamic'] !== undefined ||
      this.spec.selectionSource === 'override'
    ) {
      reply.header(
        'cache-control',
        `${String(reply.getHeader('cache-control') ?? 'public')}, private="server-timing, cmsd-dynamic"`,
      );
    }

    const raw = reply.raw;
    // The enforcer's socket limits stay until the last bytes are acknowledged, not just handed to
    // the kernel: up to a block still waits in the socket at 'finish' and must leave paced too.
    raw.once('finish', () => {
      connection.awaitDrain(
        // In the kernel path 'finish' only means the socket holds the rest: a client that left
        // before acknowledging it did not get the response.
        (drainEnd, outcome) => this.finish(drainEnd, outcome !== 'client-left', outcome === 'drained'),
        {
          paceFloorBytesPerSec: this.kernel === undefined ? undefined : this.kernelFloorBytesPerSec,
          // Nothing in the socket to undo, and the connection stays open to read it at the next request:
          // one TCP_INFO reading ends this response and starts the next (TLS reads its end at once,
          // to tell the response's bytes from the close_notify after them).
          deferFirstReading: !policy.enforcer.paced && raw.shouldKeepAlive && !(socket instanceof TLSSocket),
        },
      );
    });
    const onClose = () => {
      if (raw.writableFinished) return;
      // Every byte handed to the socket and acknowledged when the client closed, before 'finish'
      // (TLS completes writes after the bytes have left, and a paused pipe never ends the response).
      const handedOver = raw.writableEnded || (this.body?.allPushed && this.body.readableLength === 0);
      const peerEnd = handedOver ? connection.peerEndedWithAll : undefined;
      if (peerEnd !== undefined) {
        this.finish(peerEnd, true, true);
        return;
      }
      const last: TcpSnapshot = socket.destroyed
        ? (this.meter.facts().lastReading ?? { atMs: performance.now(), info: undefined })
        : { atMs: performance.now(), info: this.meter.read(performance.now()) };
      this.finish(last, false, false);
    };
    // The client may have gone while the file was being read: its 'close' has already been emitted.
    if (socket.destroyed || raw.destroyed) {
      onClose();
      return;
    }
    raw.once('close', onClose);

    const { file, range } = this.spec;
    const rangeBytes = range.end - range.start + 1;
    // Unpaced and small enough to hold: one buffer (a view of the cache), no block-by-block stream.
    if (!policy.enforcer.paced && (file.body !== undefined || rangeBytes <= wholeRangeMaxBytes)) {
      this.meter.written(
        {
          offset: range.start,
          sizeBytes: rangeBytes,
          rateBytesPerSec: plan.rateAt(range.start, rangeBytes),
          nowMs: performance.now(),
        },
        'startup',
        plan.media.rateAt(range.start, rangeBytes),
      );
      const bytes = this.read(range.start, rangeBytes);
      if (Buffer.isBuffer(bytes)) void reply.send(bytes);
      else
        void bytes.then(
          (whole) => reply.send(whole),
          (error: unknown) => reply.send(error as Error),
        );
      return;
    }
    if (this.enforcement.kernel !== undefined && this.handOver(this.enforcement.kernel)) {
      this.writeWhole(this.enforcement.kernel);
      return;
    }
    const sink = this.sendFileSink();
    if (sink instanceof Error) {
      void reply.send(sink);
      return;
    }
    this.body = new PacedBody(
      { read: (offset, sizeBytes) => this.read(offset, sizeBytes) },
      range.start,
      range.end,
      this,
      services.blockTimer,
      undefined,
      sink,
    );
    void reply.send(this.body);
  }

  /**
   * Blocks written with sendfile(2) over plain TCP (TLS encrypts in user space), counted for the
   * socket's stream offsets; undefined when configured off; the error to answer with when the file
   * no longer holds the range.
   */
  private sendFileSink(): BlockSink | Error | undefined {
    const { connection, file, reply, range } = this.spec;
    const socket = connection.socket;
    if (!this.services.sendFile || socket instanceof TLSSocket) return undefined;
    const transfer = openFileSend(this.services.control, socket, file.path, range.end + 1, (operation, error) =>
      this.services.socketError(operation, error),
    );
    if (transfer === undefined || transfer instanceof Error) return transfer;
    return sendFileSink(
      socket,
      transfer,
      () => reply.raw.flushHeaders(),
      (sentBytes, calls) => {
        connection.sentFile(sentBytes);
        this.sendfileCalls = (this.sendfileCalls ?? 0) + calls;
      },
    );
  }

  /**
   * Hands the throttling phase to the kernel, if there is one and it takes it. Offsets are the
   * response's own from its first body byte: the header's few hundred bytes count as startup.
   */
  private handOver(kernel: KernelEnforcement): boolean {
    const { range, plan, connection } = this.spec;
    const throttleOffset = Math.max(range.start, Math.min(plan.startupEndOffset, range.end + 1));
    const pieces = kernelSchedule(plan, throttleOffset, range.end, schedulePieces);
    if (pieces.length === 0 || range.end - range.start + 1 > maxKernelResponseBytes) return false;
    const transport = transportBytes(connection);
    if (transport === undefined) return false;
    const rttUs = this.spec.startReading?.rttUs ?? 0;
    const taken = kernel.handOver({
      baseBytes: transport.baseBytes,
      throttleOffsetBytes: transport.onWire(throttleOffset - range.start),
      pieces: pieces.map((piece) => ({
        endOffsetBytes: transport.onWire(piece.endOffset - range.start),
        rateBytesPerSec: piece.rateBytesPerSec,
      })),
      graceUs: Math.round(Math.max(minimumGoodputWindowMs * 1000, this.services.goodputGraceRtts * rttUs)),
    });
    if (!taken) return false;
    this.kernel = kernel;
    this.kernelFloorBytesPerSec = Math.min(...pieces.map((piece) => piece.rateBytesPerSec));
    const nowMs = performance.now();
    const startupBytes = throttleOffset - range.start;
    this.throttleOffsetBytes = startupBytes;
    if (startupBytes > 0)
      this.meter.written(
        {
          offset: range.start,
          sizeBytes: startupBytes,
          rateBytesPerSec: plan.rateAt(range.start, startupBytes),
          nowMs,
        },
        'startup',
        plan.media.rateAt(range.start, startupBytes),
      );
    for (const piece of pieces) {
      const sizeBytes = piece.endOffset - piece.startOffset;
      this.meter.written(
        { offset: piece.startOffset, sizeBytes, rateBytesPerSec: piece.rateBytesPerSec, nowMs },
        'throttling',
        plan.media.rateAt(piece.startOffset, sizeBytes),
      );
    }
    return true;
  }

  /**
   * The whole range at once: one buffer when it is held and has no startup, else large reads as
   * fast as the socket takes them. The send buffer grows for the phase once its bytes are written
   * (not before: a fixed buffer would cap the startup's window on a long fat path), so a range with
   * a startup goes in blocks even when it is held: one buffer gives no moment to grow it at.
   */
  private writeWhole(kernel: KernelEnforcement): void {
    const { reply, file, range } = this.spec;
    const rangeBytes = range.end - range.start + 1;
    const throttleOffset = range.start + this.throttleOffsetBytes;
    const noStartup = throttleOffset === range.start;
    const sink = this.sendFileSink();
    if (sink instanceof Error) {
      void reply.send(sink);
      return;
    }
    if (sink !== undefined) {
      const phase: SentFilePiece = {
        offset: throttleOffset,
        sizeBytes: range.end + 1 - throttleOffset,
        before: () => kernel.phaseWriting(range.end + 1 - throttleOffset),
      };
      this.body = new SentFileBody(
        sink,
        noStartup
          ? [phase]
          : [{ offset: range.start, sizeBytes: throttleOffset - range.start }, ...(phase.sizeBytes > 0 ? [phase] : [])],
      );
      void reply.send(this.body);
      return;
    }
    if (noStartup) kernel.phaseWriting(rangeBytes);
    if (noStartup && (file.body !== undefined || rangeBytes <= wholeRangeMaxBytes)) {
      const bytes = this.read(range.start, rangeBytes);
      if (Buffer.isBuffer(bytes)) void reply.send(bytes);
      else
        void bytes.then(
          (whole) => reply.send(whole),
          (error: unknown) => reply.send(error as Error),
        );
      return;
    }
    const unpaced: BlockDriver = {
      startupEndOffset: range.end + 1,
      blockBytes: wholeRangeMaxBytes,
      readAheadBlocks: 1,
      rateAt: () => 0,
      startThrottling: () => undefined,
      beforeBlock: () => 0,
      written: (block) => {
        if (block.offset + block.sizeBytes > throttleOffset) kernel.phaseWriting(range.end + 1 - block.offset);
      },
    };
    this.body = new PacedBody(
      { read: (offset, sizeBytes) => this.read(offset, sizeBytes) },
      range.start,
      range.end,
      unpaced,
      this.services.blockTimer,
    );
    void reply.send(this.body);
  }

  private read(offset: number, sizeBytes: number): Buffer | Promise<Buffer> {
    const file = this.spec.file;
    return file.body !== undefined
      ? file.body.subarray(offset, offset + sizeBytes)
      : this.services.readRange(file, { start: offset, end: offset + sizeBytes - 1 });
  }

  /**
   * The response's end, decided here and only here, once: its connection's drain wait settled
   * (`finish` was emitted), or the socket closed before that. The socket's limits are undone and
   * the record is built from the one last reading.
   */
  private finish(last: TcpSnapshot, completed: boolean, drained: boolean): void {
    if (this.ended) return;
    this.record({ end: this.end(last), completed, drained });
  }

  /**
   * Ends the enforcement; returns the response's last reading (a phase in the kernel keeps its own when the socket
   * closed under it).
   */
  private end(last: TcpSnapshot): TcpSnapshot {
    this.ended = true;
    const { policy, connection } = this.spec;
    const socket = connection.socket;
    this.services.countActive(-1);
    if (policy.enforcer.paced) this.services.metrics.flowEnded(policy.name, this.groupLabel);
    if (!socket.destroyed) {
      if (this.kernel !== undefined) this.kernel.end();
      else this.enforcement.end(last.info);
      return last;
    }
    // A closed socket took its options with it (and its clamp entry went with it, its phase kept).
    return this.kernel?.closed() ?? last;
  }

  private record(ending: { end: TcpSnapshot; completed: boolean; drained: boolean }): void {
    const { spec, services } = this;
    const response: ResponseFacts = {
      id: services.nextFlowId(),
      connectionId: spec.connection.id,
      asset: spec.file.asset,
      file: spec.file.name,
      role: spec.media.role,
      rendition: spec.rendition,
      segmentNumber: spec.segmentNumber,
      range: { start: spec.range.start, end: spec.range.end },
      status: spec.reply.statusCode,
      policy: spec.policy.name,
      group: spec.connection.group?.name,
      policyReason: spec.reason,
      client: this.client,
      cmcd: spec.media.cmcd as Record<string, unknown> | undefined,
      congestionControl: spec.connection.congestionControl,
      initialWindow: spec.connection.initialWindow(),
      sendfileCalls: this.sendfileCalls,
      startedAtEpochMs: this.startedAtEpochMs,
    };
    if (this.kernel !== undefined) this.meter.kernelPhaseStarted(this.kernel.phaseStart());
    const report = this.kernel?.report() ?? this.enforcement.report();
    const record = buildFlowRecord(response, this.meter.facts(), report, ending);
    const throttled = record.throttling;
    const { minRttUs } = record;
    const mssBytes = ending.end.info?.mss;
    if (record.completed && record.role === 'segment' && throttled?.goodputBps != null && record.targetRateBps !== null)
      spec.connection.segmentPaced({
        aimBps: record.targetRateBps.mean,
        goodputBps: throttled.goodputBps,
        bytes: throttled.bytes,
        transfer:
          minRttUs === null || mssBytes === undefined
            ? undefined
            : {
                durationMs: throttled.durationMs,
                minRttUs,
                mssBytes,
                initialWindowPackets: initialWindowInUse(response.initialWindow),
              },
      });
    else if (record.completed && record.drained && record.role === 'segment' && throttled === null) {
      const { startup } = record;
      if (minRttUs !== null && mssBytes !== undefined && startup.retransmittedSegments !== null)
        spec.connection.segmentAtFullSpeed({
          bytes: startup.bytes,
          durationMs: startup.durationMs,
          retransmittedSegments: startup.retransmittedSegments,
          minRttUs,
          mssBytes,
          initialWindowPackets: initialWindowInUse(response.initialWindow),
        });
    }
    services.metrics.record(record);
    services.flowLog.add(record);
  }
}
