/**
 * The delivery engine: for each media response (a segment, or a range of a progressive file) it
 * picks the policy, builds the plan from the media index, drives the body through the policy
 * block by block, and closes a flow record once the last byte is acknowledged. Each response gets
 * its own plan (keep-alive included); whatever a response set on its socket is undone when it
 * ends, and a client abort stops everything at once.
 */
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { SocketControl, TcpInfo } from '@trickle/native';
import type { AbGroupConfig, OriginConfig, PolicyName } from '../config/config.js';
import type { ByteRange } from '../http/range.js';
import { wholeRangeMaxBytes, type MediaFile } from '../media/library.js';
import type { AssetIndex } from '../media/media-index.js';
import { readCmcd } from './cmcd-rate.js';
import { buildFlowRecord, type FlowFacts, type InitialWindowRecord, type TcpSnapshot } from './flow-record.js';
import type { FlowLog } from './flow-log.js';
import { progressivePlan, segmentPlan } from './media-plan.js';
import type { DeliveryMetrics } from './metrics.js';
import { PacedBody } from './paced-body.js';
import type { DeliveryPolicy, MediaResponse, PolicyDelivery, PolicyEnv, UnsentStartup } from './policies/delivery-policy.js';
import { deliveryPolicies } from './policies/registry.js';
import { PolicySelector } from './policy-selection.js';
import { RateStats, RunningStats } from './running-stats.js';

export interface DeliveryEngineOptions {
  readonly config: OriginConfig;
  readonly control: SocketControl;
  readonly log: FastifyBaseLogger;
  readonly metrics: DeliveryMetrics;
  readonly flowLog: FlowLog;
  readRange(file: MediaFile, range: ByteRange): Buffer | Promise<Buffer>;
}

interface ConnectionState {
  readonly id: number;
  readonly group: AbGroupConfig | undefined;
  readonly congestionControl: string | undefined;
  /** The initial window asked for this connection, and what became of it (settled once applied or failed). */
  initialWindow: InitialWindowRecord | undefined;
  /** Closes the previous response's record early when the next request arrives or the socket closes. */
  settlePrevious: (() => void) | undefined;
  /**
   * The reading that found the previous response fully acknowledged, and the socket's byte count
   * then: while nothing more was written, TCP_INFO's counters cannot have moved, so it is also the
   * next response's start (one TCP_INFO read per keep-alive response instead of two).
   */
  idleReading: { readonly info: TcpInfo; readonly bytesWritten: number } | undefined;
}

/** Poll interval bounds while waiting for the last bytes to be acknowledged. */
const drainPollMinMs = 1;
const drainPollMaxMs = 50;

export class DeliveryEngine {
  private readonly policies: Readonly<Record<PolicyName, DeliveryPolicy>>;
  private readonly selector: PolicySelector;
  private readonly connections = new WeakMap<Socket, ConnectionState>();
  private nextConnectionId = 1;
  private nextFlowId = 1;
  private activeResponses = 0;
  private draining = 0;
  /** One warning per (operation, code): a missing capability should not flood the log. */
  private readonly warned = new Set<string>();

  constructor(private readonly options: DeliveryEngineOptions) {
    const delivery = options.config.delivery;
    this.policies = Object.fromEntries(Object.entries(deliveryPolicies).map(([name, make]) => [name, make(delivery)])) as Record<PolicyName, DeliveryPolicy>;
    this.selector = new PolicySelector(delivery);
  }

  /** Responses being written, and finished ones waiting for their last acknowledgements. */
  stats(): { activeResponses: number; drainingResponses: number } {
    return { activeResponses: this.activeResponses, drainingResponses: this.draining };
  }

  /**
   * Sends `range` of a media file under its policy. Returns false when the file is not a media
   * response the engine paces (the caller sends it plainly). A reply is thenable, so it is never
   * returned from here.
   */
  deliver(request: FastifyRequest, reply: FastifyReply, file: MediaFile, range: ByteRange, index: AssetIndex): boolean {
    const media = this.describe(request, file, range, index);
    if (media === undefined) return false;
    const socket = request.raw.socket;
    const connection = this.connection(socket);
    connection.settlePrevious?.();

    const override = (request.query as Record<string, unknown> | undefined)?.policy;
    const selection = this.selector.select({ asset: file.asset, role: media.response.role, override: typeof override === 'string' ? override : undefined, group: connection.group });
    if ('error' in selection) {
      void reply.code(400).type('application/json; charset=utf-8').send({ error: { code: 'ORIGIN_ERR_BAD_POLICY', message: selection.error } });
      return true;
    }
    const policy = this.policies[selection.policy];
    const groupLabel = connection.group?.name ?? selection.policy;
    /** The policy's latest TCP_INFO reading for the block being considered (taken before its write, as the engine's would be). */
    let policyInfo: TcpInfo | undefined;
    /** The response's latest reading: the end of a response whose client closed the socket (nothing can be read then). */
    let lastReading: TcpSnapshot | undefined;
    const readTcpInfo = (): TcpInfo | undefined => {
      const info = this.tcpInfo(socket);
      if (info !== undefined) lastReading = { atMs: performance.now(), info };
      return info;
    };
    const env: PolicyEnv = {
      socket,
      control: this.options.control,
      tcpInfo: () => (policyInfo = readTcpInfo()),
      socketError: (operation, error) => this.socketError(operation, error),
    };
    const delivery = policy.start(media.response, env);

    const startedAtEpochMs = Date.now();
    // Read now: a socket the client closed no longer knows its peer when the record is built.
    const client = { address: socket.remoteAddress, port: socket.remotePort };
    const idle = connection.idleReading;
    connection.idleReading = undefined;
    const start: TcpSnapshot = { atMs: performance.now(), info: idle !== undefined && idle.bytesWritten === socket.bytesWritten ? idle.info : this.tcpInfo(socket) };
    let throttlingStart: TcpSnapshot | undefined;
    let startupBytes = 0;
    let throttledBytes = 0;
    let startupBacklogBytes = 0;
    const targets = new RateStats();
    const throttledTargets = new RateStats();
    const cwnds = new RunningStats();

    this.activeResponses++;
    if (policy.paced) this.options.metrics.flowStarted(policy.name, groupLabel);
    let ended = false;
    const endResponse = () => {
      if (ended) return;
      ended = true;
      this.activeResponses--;
      if (policy.paced) this.options.metrics.flowEnded(policy.name, groupLabel);
      // A closed socket took its options with it (and its clamp entry goes at the socket's 'close').
      if (!socket.destroyed) delivery.end();
    };

    const finalize = (completed: boolean, end: TcpSnapshot, drained: boolean) => {
      const facts: FlowFacts = {
        id: this.nextFlowId++,
        connectionId: connection.id,
        asset: file.asset,
        file: file.name,
        role: media.response.role,
        rendition: media.rendition,
        segmentNumber: media.segmentNumber,
        range: { start: range.start, end: range.end },
        status: reply.statusCode,
        policy: policy.name,
        group: connection.group?.name,
        policyReason: `${selection.reason}; ${delivery.plan.reason}`,
        client,
        cmcd: media.response.cmcd as Record<string, unknown> | undefined,
        congestionControl: connection.congestionControl,
        initialWindow: this.initialWindowOf(socket, connection),
        startedAtEpochMs,
        start,
        throttlingStart,
        end,
        startupBytes,
        throttledBytes,
        startupBacklogBytes,
        completed,
        drained,
        // The target of a response that throttled is that of its throttled blocks; otherwise the media rate it carried.
        targetRateBps: throttledTargets.size > 0 ? throttledTargets.summary() : targets.summary(),
        throttledTargetMeanBps: throttledTargets.summary()?.mean,
        cwndPackets: cwnds.summary(),
        report: delivery.report(),
      };
      const record = buildFlowRecord(facts);
      this.options.metrics.record(record);
      this.options.flowLog.add(record);
    };

    for (const [name, value] of Object.entries(delivery.headers)) reply.header(name, value);
    // Clients of an A/B experiment learn their connection's group (to attribute their QoE to it).
    if (connection.group !== undefined) {
      const groupTiming = `ab;desc="${connection.group.name}"`;
      const policyTiming = delivery.headers['server-timing'];
      reply.header('server-timing', policyTiming === undefined ? groupTiming : `${policyTiming}, ${groupTiming}`);
    }

    const raw = reply.raw;
    // The policy's socket limits stay until the last bytes are acknowledged, not just handed to the
    // kernel: up to a block still waits in the socket at 'finish' and must leave paced too.
    raw.once('finish', () => {
      this.awaitDrain(socket, connection, (end, drained) => {
        endResponse();
        finalize(true, end, drained);
      });
    });
    const onClose = () => {
      if (raw.writableFinished) return;
      endResponse();
      const end = socket.destroyed ? (lastReading ?? { atMs: performance.now(), info: undefined }) : { atMs: performance.now(), info: readTcpInfo() };
      finalize(false, end, false);
    };
    // The client may have gone while the file was being read: its 'close' has already been emitted.
    if (socket.destroyed || raw.destroyed) {
      onClose();
      return true;
    }
    raw.once('close', onClose);

    const read = (offset: number, sizeBytes: number): Buffer | Promise<Buffer> =>
      file.body !== undefined ? file.body.subarray(offset, offset + sizeBytes) : this.options.readRange(file, { start: offset, end: offset + sizeBytes - 1 });
    const rangeBytes = range.end - range.start + 1;
    // Unpaced and small enough to hold: one buffer (a view of the cache), no block-by-block stream.
    if (!policy.paced && (file.body !== undefined || rangeBytes <= wholeRangeMaxBytes)) {
      startupBytes = rangeBytes;
      targets.add(media.response.mediaPlan.rateAt(range.start, rangeBytes) * 8, rangeBytes);
      const bytes = read(range.start, rangeBytes);
      if (Buffer.isBuffer(bytes)) void reply.send(bytes);
      else void bytes.then((whole) => reply.send(whole), (error: unknown) => reply.send(error as Error));
      return true;
    }
    const body = new PacedBody(
      { read },
      range.start,
      range.end,
      delivery,
      {
        onThrottlingStart: (nowMs, offset) => {
          const info = readTcpInfo();
          const ackedSinceStart = info?.bytesAcked !== undefined && start.info?.bytesAcked !== undefined ? info.bytesAcked - start.info.bytesAcked : 0;
          const unsentBytes = Math.min(startupBytes, info?.notsentBytes ?? 0);
          const unsent: UnsentStartup = { sizeBytes: unsentBytes, rateBytesPerSec: unsentBytes > 0 ? delivery.plan.rateAt(offset - unsentBytes, unsentBytes) : 0 };
          // Under a limit in the socket, startup bytes still unsent leave at the throttled pace: throttled goodput, at their own R.
          const throttledUnsentBytes = delivery.limitsInSocket ? unsentBytes : 0;
          if (throttledUnsentBytes > 0) throttledTargets.add(unsent.rateBytesPerSec * 8, throttledUnsentBytes);
          startupBacklogBytes = Math.max(0, startupBytes - ackedSinceStart - throttledUnsentBytes);
          throttlingStart = { atMs: nowMs, info };
          delivery.startThrottling(nowMs, info, unsent);
        },
        onBlock: (block, phase) => {
          if (phase === 'startup') {
            startupBytes += block.sizeBytes;
            targets.add(block.rateBytesPerSec * 8, block.sizeBytes);
          }
          else {
            throttledBytes += block.sizeBytes;
            throttledTargets.add(block.rateBytesPerSec * 8, block.sizeBytes);
            const cwnd = (policyInfo ?? readTcpInfo())?.cwnd;
            policyInfo = undefined;
            if (cwnd !== undefined) cwnds.add(cwnd);
          }
        },
      },
    );
    void reply.send(body);
    return true;
  }

  /** The media facts of a response, or undefined when the file is not an indexed segment or progressive file. */
  private describe(request: FastifyRequest, file: MediaFile, range: ByteRange, index: AssetIndex): { response: MediaResponse; rendition: string | undefined; segmentNumber: number | undefined } | undefined {
    const planOptions = this.options.config.delivery;
    const cmcd = readCmcd(request.url.includes('?') ? request.url.slice(request.url.indexOf('?') + 1) : undefined, request.headers);
    const base = { asset: file.asset, file: file.name, rangeStart: range.start, rangeEnd: range.end, cmcd };
    if (file.role === 'segment') {
      const entry = index.segmentByFile.get(file.name);
      if (entry === undefined) return undefined;
      const { rendition, segment } = entry;
      const renditionBitratesBps = index.renditions
        .filter((r) => r.kind === rendition.kind)
        .map((r) => r.declaredBandwidthBps ?? r.averageBitrateBps)
        .sort((a, b) => a - b);
      return {
        response: { ...base, role: 'segment', mediaPlan: segmentPlan(rendition, segment, range.start, range.end, planOptions), segment: { bitrateBps: segment.bitrateBps, renditionBitratesBps, kind: rendition.kind } },
        rendition: rendition.id,
        segmentNumber: segment.number,
      };
    }
    if (file.role === 'progressive' && index.progressive?.file === file.name) {
      return { response: { ...base, role: 'progressive', mediaPlan: progressivePlan(index.progressive, range.start, range.end, planOptions) }, rendition: undefined, segmentNumber: undefined };
    }
    return undefined;
  }

  private connection(socket: Socket): ConnectionState {
    let state = this.connections.get(socket);
    if (state !== undefined) return state;
    const group = this.selector.assignGroup();
    const wanted = group?.congestionControl ?? this.options.config.delivery.transport.congestionControl;
    let congestionControl: string | undefined;
    if (wanted !== undefined) {
      try {
        this.options.control.setCongestionControl(socket, wanted);
      } catch (error) {
        this.socketError('setCongestionControl', error);
      }
    }
    try {
      congestionControl = this.options.control.getCongestionControl(socket);
    } catch (error) {
      this.socketError('getCongestionControl', error);
    }
    const initialWindowPackets = group?.initialWindowPackets ?? this.options.config.delivery.transport.initialWindowPackets;
    let initialWindow: InitialWindowRecord | undefined;
    if (initialWindowPackets !== undefined) {
      try {
        this.options.control.clamp.setInitialWindow(socket, initialWindowPackets);
        initialWindow = { packets: initialWindowPackets, status: 'pending' };
      } catch (error) {
        this.socketError('setInitialWindow', error);
        initialWindow = { packets: initialWindowPackets, status: (error as { code?: unknown }).code === 'NATIVE_ERR_UNSUPPORTED' ? 'unsupported' : 'failed' };
      }
    }
    const created: ConnectionState = { id: this.nextConnectionId++, group, congestionControl, initialWindow, settlePrevious: undefined, idleReading: undefined };
    state = created;
    this.connections.set(socket, state);
    // A client that got everything closes: its FIN arrives after its last ACKs, and the fd is still open at 'end'.
    socket.once('end', () => created.settlePrevious?.());
    socket.once('close', () => {
      created.settlePrevious?.();
      // Whatever a response wrote for this socket last (a release keeps a finite clamp) goes with it:
      // the program deletes entries at close, but not one written after the kernel had closed the socket.
      this.forgetClamp(socket);
    });
    return state;
  }

  /** The connection's initial window, read back from the BPF program until it has settled. */
  private initialWindowOf(socket: Socket, connection: ConnectionState): InitialWindowRecord | undefined {
    const asked = connection.initialWindow;
    if (asked?.status !== 'pending' || socket.destroyed) return asked;
    try {
      const state = this.options.control.clamp.state(socket)?.initialWindow;
      if (state !== undefined && state.status !== 'pending') connection.initialWindow = state;
    } catch (error) {
      this.socketError('clamp.state', error);
    }
    return connection.initialWindow;
  }

  /**
   * After the last write: poll TCP_INFO until every byte is acknowledged (or the drain timeout,
   * the next request on the connection, or its close), then hand over the end snapshot. The
   * first poll is at once: a short response may be acknowledged already, and a client that
   * closes next leaves nothing to read.
   */
  private awaitDrain(socket: Socket, connection: ConnectionState, done: (end: TcpSnapshot, drained: boolean) => void): void {
    const finishedMs = performance.now();
    const timeoutMs = this.options.config.flows.drainTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let lastInfo: TcpInfo | undefined;
    this.draining++;
    const settle = (drained: boolean, info: TcpInfo | undefined) => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      connection.settlePrevious = undefined;
      this.draining--;
      if (drained && info !== undefined && (info.notsentBytes ?? 0) === 0 && !socket.destroyed) connection.idleReading = { info, bytesWritten: socket.bytesWritten };
      done({ atMs: performance.now(), info }, drained);
    };
    connection.settlePrevious = () => {
      const info = socket.destroyed ? lastInfo : (this.tcpInfo(socket) ?? lastInfo);
      settle(info !== undefined && info.unacked === 0, info);
    };
    const poll = () => {
      timer = undefined;
      if (socket.destroyed) return settle(false, lastInfo);
      const info = this.tcpInfo(socket);
      if (info === undefined) return settle(false, lastInfo);
      lastInfo = info;
      if (info.unacked === 0 && (info.notsentBytes ?? 0) === 0) return settle(true, info);
      if (performance.now() - finishedMs >= timeoutMs) return settle(false, info);
      const waitMs = Math.min(drainPollMaxMs, Math.max(drainPollMinMs, (info.rttUs ?? 0) / 4000));
      timer = setTimeout(poll, waitMs);
    };
    poll();
  }

  private tcpInfo(socket: Socket): TcpInfo | undefined {
    try {
      return this.options.control.tcpInfo(socket);
    } catch (error) {
      this.socketError('tcpInfo', error);
      return undefined;
    }
  }

  private forgetClamp(socket: Socket): void {
    try {
      this.options.control.clamp.forget(socket);
    } catch (error) {
      this.socketError('clamp.forget', error);
    }
  }

  private socketError(operation: string, error: unknown): void {
    const code = (error as { code?: unknown }).code;
    const codeText = typeof code === 'string' ? code : 'UNKNOWN';
    this.options.metrics.socketError(operation, codeText);
    const key = `${operation}:${codeText}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.log.warn({ operation, code: codeText, err: error }, `${operation} failed (${codeText}): the response goes on without it; further failures are only counted (trickle_socket_errors_total)`);
  }
}
