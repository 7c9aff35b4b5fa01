/**
 * The delivery engine: per media request (a segment, or a range of a progressive file) it chooses
 * the policy before any header is written (`select`), then (`deliver`) describes the response from
 * the media index, asks the policy's rate rule for a plan, and runs the response under the
 * policy's enforcer (response-delivery.ts): select -> describe -> plan -> hand over. It keeps what
 * outlives a response: a `Connection` per socket (connection.ts: its A/B group, transport settings,
 * byte count, drain wait and the reading that can start its next response) and, per viewer, the
 * runs of segments that ABR-aware rules read when the player sends no CMCD.
 */
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify';
import type { SocketControl } from '@trickle/native';
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
import { Connection, type ConnectionPort } from './connection.js';
import type { DeliveryConfig } from './delivery-config.js';
import type { Enforcer } from './enforcers/enforcer.js';
import { enforcers } from './enforcers/registry.js';
import type { FlowLog } from './flow-log.js';
import type { DeliveryMetrics } from './metrics.js';
import { PolicySelector, type Selection, type SelectionResult } from './policy-selection.js';
import { vbrBlocksOf } from './rate-plan.js';
import type { MediaResponse, RateRule } from './rates/rate-rule.js';
import { rateRules } from './rates/registry.js';
import { ResponseDelivery, type ResponseServices } from './response-delivery.js';
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

export class DeliveryEngine {
  readonly policies: Readonly<Record<PolicyName, Policy>>;
  private readonly selector: PolicySelector;
  private readonly runs = new ViewerRuns();
  private readonly connections = new WeakMap<Socket, Connection>();
  private readonly services: ResponseServices;
  private readonly connectionPort: ConnectionPort;
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
      socketError: (operation, error) => this.socketError(operation, error),
      nextFlowId: () => this.flowIds++,
      countActive: (delta) => {
        this.activeResponses += delta;
      },
    };
    this.connectionPort = {
      control: options.control,
      drainTimeoutMs: options.drainTimeoutMs,
      socketError: (operation, error) => this.socketError(operation, error),
      countDraining: (delta) => {
        this.draining += delta;
      },
      pathHold: options.delivery.abr.pathHold,
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
    const startReading = connection.beginResponse();
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
    const plan = policy.rate.plan({ response: media, viewer, path: connection.pathHold, nowMs });
    new ResponseDelivery(this.services, {
      connection,
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
          videoTopBps: ladder.videoTopBps,
        },
      },
      rendition: rendition.id,
    };
  }

  private connection(socket: Socket): Connection {
    let connection = this.connections.get(socket);
    if (connection === undefined) {
      connection = new Connection(
        socket,
        this.nextConnectionId++,
        this.selector.assignGroup(),
        this.options.delivery.transport,
        this.connectionPort,
      );
      this.connections.set(socket, connection);
    }
    return connection;
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
