/**
 * The delivery engine: per media request (a segment, or a range of a progressive file) it chooses
 * the policy before any header is written (`select`), then (`deliver`) describes the response from
 * the media index, asks the policy's rate rule for a plan, and runs the response under the
 * policy's enforcer (response-delivery.ts). It keeps what outlives a response: per connection the
 * A/B group, transport settings and the reading that can start the next response; per viewer the
 * runs of segments that ABR-aware rules read when the player sends no CMCD.
 */
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { SocketControl, TcpInfo } from '@trickle/native';
import type { ByteRange } from '../http/range.js';
import type { MediaFile } from '../media/library.js';
import {
  rangeKey,
  segmentsInRange,
  type AssetIndex,
  type RenditionIndex,
  type SegmentEntry,
} from '../media/media-index.js';
import { BlockTimer } from './block-timer.js';
import { policyCatalogue, policyNames, type PolicyName } from './catalogue.js';
import { readCmcd } from './cmcd.js';
import type { AbGroupConfig, DeliveryConfig } from './delivery-config.js';
import type { Enforcer } from './enforcers/enforcer.js';
import { enforcers } from './enforcers/registry.js';
import type { InitialWindowRecord, TcpSnapshot } from './flow-record.js';
import type { FlowLog } from './flow-log.js';
import type { DeliveryMetrics } from './metrics.js';
import { PolicySelector, type Selection, type SelectionResult } from './policy-selection.js';
import { vbrBlocksOf } from './rate-plan.js';
import type { MediaResponse, RateRule } from './rates/rate-rule.js';
import { rateRules } from './rates/registry.js';
import {
  bytesWrittenTo,
  nothingInFlight,
  ResponseDelivery,
  streamBytesTaken,
  type DrainOutcome,
  type ResponseServices,
} from './response-delivery.js';
import { ViewerRuns } from './viewer-runs.js';

export interface DeliveryEngineOptions {
  readonly delivery: DeliveryConfig;
  /** After the last byte is written, how long to wait for it to be acknowledged before the record is closed. */
  readonly drainTimeoutMs: number;
  readonly control: SocketControl;
  readonly log: FastifyBaseLogger;
  readonly metrics: DeliveryMetrics;
  readonly flowLog: FlowLog;
  /** Pages of these origins may read the Server-Timing entries (Timing-Allow-Origin); default "*". */
  readonly timingAllowOrigin?: string;
  readRange(file: MediaFile, range: ByteRange): Buffer | Promise<Buffer>;
}

/** A policy of the catalogue, made from the config: its rate rule and its enforcer. */
export interface Policy {
  readonly name: PolicyName;
  readonly rate: RateRule;
  readonly enforcer: Enforcer;
}

export function buildPolicies(delivery: DeliveryConfig): Readonly<Record<PolicyName, Policy>> {
  return Object.fromEntries(
    policyNames.map((name) => {
      const pair = policyCatalogue[name];
      return [name, { name, rate: rateRules[pair.rate](delivery), enforcer: enforcers[pair.enforcer](delivery) }];
    }),
  ) as Record<PolicyName, Policy>;
}

/** Whether initial windows are configured (TCP_BPF_IW, set by the clamp's BPF program). */
export function deliveryWantsInitialWindow(delivery: DeliveryConfig): boolean {
  return (
    delivery.transport.initialWindowPackets !== undefined ||
    (delivery.ab ?? []).some((g) => g.initialWindowPackets !== undefined)
  );
}

/**
 * Whether a delivery config can use the cwnd clamp's BPF program (a policy whose enforcer clamps, or initial windows).
 */
export function deliveryNeedsClamp(delivery: DeliveryConfig): boolean {
  const named = [delivery.policy, ...delivery.rules.map((r) => r.policy), ...(delivery.ab ?? []).map((g) => g.policy)];
  const policies = delivery.allowPolicyOverride ? policyNames : named;
  return (
    deliveryWantsInitialWindow(delivery) ||
    policies.some((name) => enforcers[policyCatalogue[name].enforcer](delivery).usesClamp)
  );
}

interface ConnectionState {
  readonly id: number;
  readonly group: AbGroupConfig | undefined;
  readonly congestionControl: string | undefined;
  /** The initial window asked for this connection, and what became of it (settled once applied or failed). */
  initialWindow: InitialWindowRecord | undefined;
  /** Ends the previous response's wait: the next request came, the client half-closed, or the socket closed. */
  settlePrevious: ((cause: 'next-request' | 'end' | 'close') => void) | undefined;
  /** The client closed its side (FIN) or reset the connection. */
  peerLeft: boolean;
  /**
   * The client's FIN came with every byte in the kernel acknowledged and none unsent, before the
   * response's 'finish' (read when the FIN came). With the response ended (every byte handed
   * over) and the FIN clean, the client had it all: TLS completes writes after the bytes left.
   */
  peerEndedWithAll: { readonly atMs: number; readonly info: TcpInfo } | undefined;
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
/** A response the kernel paces is polled at most this far apart while its rest leaves. */
const pacedDrainPollMaxMs = 1000;

export class DeliveryEngine {
  readonly policies: Readonly<Record<PolicyName, Policy>>;
  private readonly selector: PolicySelector;
  private readonly runs = new ViewerRuns();
  private readonly connections = new WeakMap<Socket, ConnectionState>();
  private readonly services: ResponseServices;
  private nextConnectionId = 1;
  private flowIds = 1;
  private activeResponses = 0;
  private draining = 0;
  /** One warning per (operation, code): a missing capability should not flood the log. */
  private readonly warned = new Set<string>();

  constructor(private readonly options: DeliveryEngineOptions) {
    this.policies = buildPolicies(options.delivery);
    this.selector = new PolicySelector(options.delivery);
    this.services = {
      control: options.control,
      metrics: options.metrics,
      flowLog: options.flowLog,
      goodputGraceRtts: options.delivery.goodputGraceRtts,
      sendFile: options.delivery.sendFile,
      blockTimer: new BlockTimer(),
      timingAllowOrigin: options.timingAllowOrigin ?? '*',
      readRange: options.readRange,
      tcpInfo: (socket) => this.tcpInfo(socket),
      socketError: (operation, error) => this.socketError(operation, error),
      awaitDrain: (socket, done, paceFloorBytesPerSec) => this.awaitDrain(socket, done, paceFloorBytesPerSec),
      initialWindow: (socket) => this.initialWindowOf(socket),
      peerEndedWithAll: (socket) => this.connections.get(socket)?.peerEndedWithAll,
      nextFlowId: () => this.flowIds++,
      countActive: (delta) => {
        this.activeResponses += delta;
      },
    };
  }

  /** Responses being written, and finished ones waiting for their last acknowledgements. */
  stats(): { activeResponses: number; drainingResponses: number } {
    return { activeResponses: this.activeResponses, drainingResponses: this.draining };
  }

  /**
   * The policy of a media request (a segment or a progressive file), chosen before any header is
   * written: `?policy=` (when allowed; an unknown one is an error), the connection's A/B group
   * (drawn at its first media request), a rule, the default.
   */
  select(request: FastifyRequest, asset: string, role: 'segment' | 'progressive'): SelectionResult {
    const connection = this.connection(request.raw.socket);
    const override = (request.query as Record<string, unknown> | undefined)?.policy;
    return this.selector.select({
      asset,
      role,
      override: typeof override === 'string' ? override : undefined,
      group: connection.group,
    });
  }

  /**
   * Sends `range` of a media file under the selected policy. Returns false when the file is not a
   * media response of the index (the caller sends it plainly). A reply is thenable, so it is never
   * returned from here.
   */
  deliver(
    request: FastifyRequest,
    reply: FastifyReply,
    file: MediaFile,
    range: ByteRange,
    index: AssetIndex,
    selection: Selection,
  ): boolean {
    const described = this.describe(request, file, range, index);
    if (described === undefined) return false;
    const socket = request.raw.socket;
    const connection = this.connection(socket);
    connection.settlePrevious?.('next-request');
    const policy = this.policies[selection.policy];
    const media = described.response;
    const nowMs = performance.now();
    const segment = media.segment;
    const viewer =
      segment === undefined
        ? undefined
        : this.runs.join(
            `${media.cmcd?.sid ?? socket.remoteAddress}|${media.asset}|${segment.kind}`,
            { number: segment.number, startSec: segment.presentationSec, durationSec: segment.durationSec },
            nowMs,
          );
    const plan = policy.rate.plan({ response: media, viewer, nowMs });
    const idle = connection.idleReading;
    connection.idleReading = undefined;
    const startReading =
      idle !== undefined && idle.bytesWritten === bytesWrittenTo(socket) ? idle.info : this.tcpInfo(socket);
    new ResponseDelivery(this.services, {
      socket,
      reply,
      file,
      range,
      media,
      rendition: described.rendition,
      segmentNumber: segment?.number,
      policy,
      plan,
      reason: `${selection.reason}; ${plan.reason}`,
      selectionSource: selection.source,
      connection: { id: connection.id, group: connection.group?.name, congestionControl: connection.congestionControl },
      startReading,
    }).run();
    return true;
  }

  /** The media facts of a response, or undefined when the file is not an indexed segment or progressive file. */
  private describe(
    request: FastifyRequest,
    file: MediaFile,
    range: ByteRange,
    index: AssetIndex,
  ): { response: MediaResponse; rendition: string | undefined } | undefined {
    const queryAt = request.url.indexOf('?');
    const cmcd = readCmcd(queryAt < 0 ? undefined : request.url.slice(queryAt + 1), request.headers);
    const base = { asset: file.asset, file: file.name, rangeStart: range.start, rangeEnd: range.end, cmcd };
    if (file.role === 'segment') {
      // An I-frame playlist's range: trick play, wanted at once.
      if (
        index.trickPlayRanges.size > 0 &&
        index.trickPlayRanges.has(rangeKey(file.name, { offset: range.start, sizeBytes: range.end - range.start + 1 }))
      )
        return undefined;
      const whole = index.segmentByFile.get(file.name);
      if (whole !== undefined) return this.segmentResponse(base, index, whole.rendition, whole.segment);
      const segmented = index.segmentedFiles.get(file.name);
      if (segmented === undefined) return undefined;
      // A range of a file that holds many segments: the segment it lies in, or (across several)
      // the file's segments as VBR blocks, each at its own rate; bytes before the first (init, sidx) go plainly.
      const covered = segmentsInRange(segmented, range.start, range.end);
      if (covered.length === 0) return undefined;
      if (covered.length === 1) return this.segmentResponse(base, index, segmented.rendition, covered[0]!);
      return {
        response: {
          ...base,
          role: 'progressive',
          progressive: {
            blocks: vbrBlocksOf(segmented.byteTime, this.options.delivery.rateWindowSec, segmented.sizeBytes),
          },
        },
        rendition: segmented.rendition.id,
      };
    }
    const progressive = index.progressive;
    if (file.role === 'progressive' && progressive?.file === file.name) {
      return {
        response: {
          ...base,
          role: 'progressive',
          progressive: {
            blocks: vbrBlocksOf(progressive.byteTime, this.options.delivery.rateWindowSec, progressive.sizeBytes),
          },
        },
        rendition: undefined,
      };
    }
    return undefined;
  }

  private segmentResponse(
    base: Omit<MediaResponse, 'role'>,
    index: AssetIndex,
    rendition: RenditionIndex,
    segment: SegmentEntry,
  ): { response: MediaResponse; rendition: string } | undefined {
    const ladder = index.abrLadders.get(rendition.id);
    if (ladder === undefined) return undefined;
    return {
      response: {
        ...base,
        role: 'segment',
        segment: {
          number: segment.number,
          renditionId: rendition.id,
          kind: rendition.kind,
          presentationSec: rendition.periodStartSec + segment.startSec - (rendition.segments[0]?.startSec ?? 0),
          durationSec: segment.durationSec,
          sizeBytes: segment.sizeBytes,
          bitrateBps: segment.bitrateBps,
          ladderBps: ladder.ladderBps,
          renditionBps: ladder.renditionBps,
        },
      },
      rendition: rendition.id,
    };
  }

  private connection(socket: Socket): ConnectionState {
    let state = this.connections.get(socket);
    if (state !== undefined) return state;
    const group = this.selector.assignGroup();
    const transport = this.options.delivery.transport;
    const wanted = group?.congestionControl ?? transport.congestionControl;
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
    const initialWindowPackets = group?.initialWindowPackets ?? transport.initialWindowPackets;
    let initialWindow: InitialWindowRecord | undefined;
    if (initialWindowPackets !== undefined) {
      try {
        this.options.control.clamp.setInitialWindow(socket, initialWindowPackets);
        initialWindow = { packets: initialWindowPackets, status: 'pending' };
      } catch (error) {
        this.socketError('setInitialWindow', error);
        initialWindow = {
          packets: initialWindowPackets,
          status: (error as { code?: unknown }).code === 'NATIVE_ERR_UNSUPPORTED' ? 'unsupported' : 'failed',
        };
      }
    }
    const created: ConnectionState = {
      id: this.nextConnectionId++,
      group,
      congestionControl,
      initialWindow,
      settlePrevious: undefined,
      idleReading: undefined,
      peerLeft: false,
      peerEndedWithAll: undefined,
    };
    state = created;
    this.connections.set(socket, state);
    // A client that got everything closes: its FIN arrives after its last ACKs, and the fd is still open at 'end'.
    socket.once('end', () => {
      created.peerLeft = true;
      // Over TLS a client that had everything can close before the response's 'finish' (its writes
      // complete after encryption), or before its 'close' even reports one.
      if (created.settlePrevious === undefined) {
        const info = this.tcpInfo(socket);
        if (info !== undefined && nothingInFlight(info)) created.peerEndedWithAll = { atMs: performance.now(), info };
      }
      created.settlePrevious?.('end');
    });
    socket.once('close', (hadError: boolean) => {
      if (hadError) created.peerLeft = true;
      // Whatever a response wrote for this socket last (a release keeps a finite clamp) goes with it:
      // the program deletes entries at close, but not one written after the kernel had closed the socket.
      // First: without its entry the program keeps no phase as the kernel's socket closes later, so the
      // response ended below (its drain wait settled) takes every phase that will ever be kept for it.
      this.forgetClamp(socket);
      created.settlePrevious?.('close');
    });
    return state;
  }

  /** The connection's initial window, read back from the BPF program until it has settled. */
  private initialWindowOf(socket: Socket): InitialWindowRecord | undefined {
    const connection = this.connections.get(socket);
    const asked = connection?.initialWindow;
    if (connection === undefined || asked?.status !== 'pending' || socket.destroyed) return asked;
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
   * closes next leaves nothing to read. With a pace floor (the kernel paces the socket's rest at
   * a schedule) the timeout allows the rest its time at that rate, and polls come at about half
   * the time the rest still needs: a few per response, not one per RTT.
   */
  private awaitDrain(
    socket: Socket,
    done: (end: TcpSnapshot, outcome: DrainOutcome) => void,
    paceFloorBytesPerSec?: number,
  ): void {
    const connection = this.connection(socket);
    const finishedMs = performance.now();
    let timeoutMs = this.options.drainTimeoutMs;
    let timer: NodeJS.Timeout | undefined;
    let lastInfo: TcpInfo | undefined;
    let first = true;
    this.draining++;
    const settle = (outcome: DrainOutcome, info: TcpInfo | undefined) => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
      connection.settlePrevious = undefined;
      this.draining--;
      if (outcome === 'drained' && info !== undefined && (info.notsentBytes ?? 0) === 0 && !socket.destroyed)
        connection.idleReading = { info, bytesWritten: bytesWrittenTo(socket) };
      done({ atMs: performance.now(), info }, outcome);
    };
    // Closed by the server itself (Connection: close) the kernel still delivers what the socket holds.
    const closedOutcome = (): DrainOutcome => (connection.peerLeft ? 'client-left' : 'server-closed');
    /**
     * The response's last byte in the TCP stream, read when it was handed over. Acknowledged up to
     * it counts as drained even with bytes in flight after it: a TLS peer's close_notify is answered
     * by the server's own before 'end' is seen.
     */
    let responseEndBytes: number | undefined;
    const acknowledgedAll = (info: TcpInfo) =>
      nothingInFlight(info) ||
      (responseEndBytes !== undefined && info.bytesAcked !== undefined && info.bytesAcked >= responseEndBytes);
    connection.settlePrevious = (cause) => {
      const info = socket.destroyed ? lastInfo : (this.tcpInfo(socket) ?? lastInfo);
      const drained = info !== undefined && acknowledgedAll(info);
      settle(drained ? 'drained' : cause === 'next-request' ? 'next-request' : closedOutcome(), info);
    };
    const poll = () => {
      timer = undefined;
      if (socket.destroyed) return settle(closedOutcome(), lastInfo);
      const info = this.tcpInfo(socket);
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
        restMs > 0
          ? Math.min(pacedDrainPollMaxMs, Math.max(drainPollMaxMs, restMs / 2))
          : Math.min(drainPollMaxMs, Math.max(drainPollMinMs, (info.rttUs ?? 0) / 4000));
      timer = setTimeout(poll, waitMs);
    };
    const peerEnd = connection.peerEndedWithAll;
    if (peerEnd !== undefined) settle('drained', peerEnd.info);
    else poll();
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
    this.options.log.warn(
      { operation, code: codeText, err: error },
      `${operation} failed (${codeText}): the response goes on without it; further ` +
        `failures are only counted (trickle_socket_errors_total)`,
    );
  }
}
