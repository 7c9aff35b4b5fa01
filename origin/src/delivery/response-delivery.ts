/**
 * One media response under its policy: the one place for a response's state. It drives the body
 * block by block (the BlockDriver of the paced body): startup blocks at full speed, then each
 * throttled block after the flow meter has read the socket and the enforcer has decided what to
 * wait for and set. The enforcer's limits stay on the socket until the last byte is acknowledged;
 * then (or when the client leaves) they are undone and the flow record is built from the meter,
 * the enforcer's report and the response's facts.
 */
import type { Socket } from 'node:net';
import type { FastifyReply } from 'fastify';
import type { SocketControl, TcpInfo } from '@trickle/native';
import type { ByteRange } from '../http/range.js';
import { wholeRangeMaxBytes, type MediaFile } from '../media/library.js';
import type { Block, Enforcement, Enforcer } from './enforcers/enforcer.js';
import { FlowMeter } from './flow-meter.js';
import { buildFlowRecord, type InitialWindowRecord, type ResponseFacts, type TcpSnapshot } from './flow-record.js';
import type { FlowLog } from './flow-log.js';
import type { DeliveryMetrics } from './metrics.js';
import { PacedBody, type BlockDriver } from './paced-body.js';
import type { MediaResponse, RatePlan } from './rates/rate-rule.js';

/** What a response needs from the engine that runs it. */
export interface ResponseServices {
  readonly control: SocketControl;
  readonly metrics: DeliveryMetrics;
  readonly flowLog: FlowLog;
  readonly goodputGraceRtts: number;
  readRange(file: MediaFile, range: ByteRange): Buffer | Promise<Buffer>;
  /** TCP_INFO now; a failure is logged once, counted, and gives undefined. */
  tcpInfo(socket: Socket): TcpInfo | undefined;
  socketError(operation: string, error: unknown): void;
  /** Polls until every byte is acknowledged (or the drain timeout, the next request, the close), then calls `done`. */
  awaitDrain(socket: Socket, done: (end: TcpSnapshot, drained: boolean) => void): void;
  /** The connection's initial window and what became of it, read back from the clamp backend. */
  initialWindow(socket: Socket): InitialWindowRecord | undefined;
  nextFlowId(): number;
  /** Responses being written (for /healthz and shutdown). */
  countActive(delta: 1 | -1): void;
}

export interface ResponseSpec {
  readonly socket: Socket;
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
  readonly connection: { readonly id: number; readonly group: string | undefined; readonly congestionControl: string | undefined };
  /** Where the connection's previous reading can stand for this response's start (see the engine). */
  readonly startReading: TcpInfo | undefined;
}

export class ResponseDelivery implements BlockDriver {
  private readonly meter: FlowMeter;
  private readonly enforcement: Enforcement;
  private readonly groupLabel: string;
  private readonly client: { readonly address: string | undefined; readonly port: number | undefined };
  private readonly startedAtEpochMs = Date.now();
  private ended = false;

  constructor(
    private readonly services: ResponseServices,
    private readonly spec: ResponseSpec,
  ) {
    const { socket, policy } = spec;
    this.enforcement = policy.enforcer.start({ socket, control: services.control, socketError: (operation, error) => services.socketError(operation, error) });
    this.meter = new FlowMeter(() => services.tcpInfo(socket), { atMs: performance.now(), info: spec.startReading }, { goodputGraceRtts: services.goodputGraceRtts, limitsInSocket: this.enforcement.limitsInSocket });
    this.groupLabel = spec.connection.group ?? policy.name;
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
    return this.enforcement.beforeBlock(block, this.meter.observe(block.nowMs));
  }
  written(block: Block, phase: 'startup' | 'throttling'): void {
    if (phase === 'throttling') this.enforcement.afterBlock(block);
    this.meter.written(block, phase, this.spec.plan.media.rateAt(block.offset, block.sizeBytes));
  }

  /** Sets the headers, sends the body and closes the record when the response is over. */
  run(): void {
    const { reply, socket, policy, plan, connection } = this.spec;
    const services = this.services;
    services.countActive(1);
    if (policy.enforcer.paced) services.metrics.flowStarted(policy.name, this.groupLabel);
    const detail = this.enforcement.detail;
    // Clients of an A/B experiment learn their connection's group (to attribute their QoE to it).
    const timing = [`policy;desc="${policy.name}${detail === undefined ? '' : ` (${detail})`}"`, plan.headers['server-timing'], connection.group === undefined ? undefined : `ab;desc="${connection.group}"`];
    for (const [name, value] of Object.entries(plan.headers)) if (name !== 'server-timing') reply.header(name, value);
    reply.header('server-timing', timing.filter((entry) => entry !== undefined).join(', '));

    const raw = reply.raw;
    // The enforcer's socket limits stay until the last bytes are acknowledged, not just handed to
    // the kernel: up to a block still waits in the socket at 'finish' and must leave paced too.
    raw.once('finish', () => {
      services.awaitDrain(socket, (end, drained) => {
        this.end(end.info);
        this.record({ end, completed: true, drained });
      });
    });
    const onClose = () => {
      if (raw.writableFinished) return;
      const end: TcpSnapshot = socket.destroyed ? (this.meter.facts().lastReading ?? { atMs: performance.now(), info: undefined }) : { atMs: performance.now(), info: this.meter.read(performance.now()) };
      this.end(end.info);
      this.record({ end, completed: false, drained: false });
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
      this.meter.written({ offset: range.start, sizeBytes: rangeBytes, rateBytesPerSec: plan.rateAt(range.start, rangeBytes), nowMs: performance.now() }, 'startup', plan.media.rateAt(range.start, rangeBytes));
      const bytes = this.read(range.start, rangeBytes);
      if (Buffer.isBuffer(bytes)) void reply.send(bytes);
      else void bytes.then((whole) => reply.send(whole), (error: unknown) => reply.send(error as Error));
      return;
    }
    void reply.send(new PacedBody({ read: (offset, sizeBytes) => this.read(offset, sizeBytes) }, range.start, range.end, this));
  }

  private read(offset: number, sizeBytes: number): Buffer | Promise<Buffer> {
    const file = this.spec.file;
    return file.body !== undefined ? file.body.subarray(offset, offset + sizeBytes) : this.services.readRange(file, { start: offset, end: offset + sizeBytes - 1 });
  }

  private end(reading: TcpInfo | undefined): void {
    if (this.ended) return;
    this.ended = true;
    const { policy, socket } = this.spec;
    this.services.countActive(-1);
    if (policy.enforcer.paced) this.services.metrics.flowEnded(policy.name, this.groupLabel);
    // A closed socket took its options with it (and its clamp entry goes at the socket's 'close').
    if (!socket.destroyed) this.enforcement.end(reading);
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
      group: spec.connection.group,
      policyReason: spec.reason,
      client: this.client,
      cmcd: spec.media.cmcd as Record<string, unknown> | undefined,
      congestionControl: spec.connection.congestionControl,
      initialWindow: services.initialWindow(spec.socket),
      startedAtEpochMs: this.startedAtEpochMs,
    };
    const record = buildFlowRecord(response, this.meter.facts(), this.enforcement.report(), ending);
    services.metrics.record(record);
    services.flowLog.add(record);
  }
}
