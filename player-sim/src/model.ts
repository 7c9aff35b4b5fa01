/**
 * Model mode: sessions on simulated time over bandwidth traces, with a server delivery model in
 * the loop. Deterministic: the same inputs and seed give the same results, bit for bit.
 */
import type { AbrRule } from './abr/abr-rule.js';
import { abrRules } from './abr/registry.js';
import type { Content } from './content.js';
import type { DeliveryModel } from './delivery/delivery-model.js';
import { deliveryModels } from './delivery/registry.js';
import { SimError } from './errors.js';
import { TraceNetwork } from './network.js';
import {
  defaultSessionSettings,
  runSession,
  type Clock,
  type Fetcher,
  type FetchRequest,
  type SessionResult,
  type SessionSettings,
} from './session.js';
import { seededRandom, type Trace } from './traces.js';

/** Simulated time: sleeping and downloading only move the clock. */
export class VirtualClock implements Clock {
  private timeMs = 0;
  nowMs(): number {
    return this.timeMs;
  }
  advance(ms: number): void {
    this.timeMs += ms;
  }
  async sleep(ms: number): Promise<void> {
    this.timeMs += Math.max(0, ms);
  }
}

export class ModelFetcher implements Fetcher {
  /** The declared bitrates as the origin's ABR-aware rule reads them: video rungs with the audio added. */
  private readonly ladderBps: readonly number[];

  constructor(
    private readonly content: Content,
    private readonly network: TraceNetwork,
    private readonly delivery: DeliveryModel,
    private readonly clock: VirtualClock,
    /** Whether the simulated player sends CMCD. */
    private readonly cmcd = false,
  ) {
    const audio = content.renditions[0]?.segments.filter((s) => s.audio !== undefined) ?? [];
    const audioSec = audio.reduce((sum, s) => sum + s.durationSec, 0);
    const audioBps = audioSec > 0 ? (8 * audio.reduce((sum, s) => sum + s.audio!.sizeBytes, 0)) / audioSec : 0;
    this.ladderBps = content.renditions.map((r) => r.bitrateBps + audioBps);
  }

  async fetch(request: FetchRequest): Promise<{ bytes: number }> {
    const segment = this.content.renditions[request.renditionIndex]!.segments[request.segmentIndex]!;
    const bytes = segment.sizeBytes + (segment.audio?.sizeBytes ?? 0);
    const transfer = this.delivery.transfer({
      nowMs: this.clock.nowMs(),
      segmentNumber: request.segmentIndex + 1,
      mediaStartSec: request.mediaStartSec,
      durationSec: segment.durationSec,
      segmentBitrateBps: (bytes * 8) / segment.durationSec,
      ladderBps: this.ladderBps,
      renditionBps: this.ladderBps[request.renditionIndex]!,
      bufferSec: request.bufferSec,
      maxBufferSec: request.maxBufferSec,
      cmcd: this.cmcd,
      startedUp: request.startedUp,
      idleMs: request.idleMs,
      rttMs: this.network.rttMs,
      firstRequest: request.firstRequest,
    });
    this.clock.advance(this.network.transferMs(this.clock.nowMs(), bytes, transfer));
    return { bytes };
  }
}

export interface ModelRunOptions {
  readonly content: Content;
  readonly traces: readonly Trace[];
  /** An ABR rule's registry name, or a factory (a rule with parameters of its own, as a sweep makes). */
  readonly abr: string | (() => AbrRule);
  readonly policy: string;
  readonly sessions: number;
  readonly seed: number;
  readonly rttMs?: number;
  /** Start every session at this point of its trace instead of a seeded random one. */
  readonly traceOffsetMs?: number;
  /** The simulated players send CMCD (their buffer and startup state), which ABR-aware policies read. */
  readonly cmcd?: boolean;
  readonly settings?: Partial<SessionSettings>;
  readonly onProgress?: (done: number, total: number) => void;
}

export function lookupRule(name: string): () => AbrRule {
  const factory = abrRules[name];
  if (factory === undefined)
    throw new SimError('SIM_ERR_CONFIG', `no ABR rule "${name}"; known: ${Object.keys(abrRules).join(', ')}`);
  return factory;
}

export function lookupDelivery(name: string): () => DeliveryModel {
  const factory = deliveryModels[name];
  if (factory === undefined)
    throw new SimError(
      'SIM_ERR_CONFIG',
      `no delivery policy "${name}"; known: ${Object.keys(deliveryModels).join(', ')}`,
    );
  return factory;
}

/** Session i uses trace i mod n from a seeded random offset. */
export async function runModel(options: ModelRunOptions): Promise<SessionResult[]> {
  if (options.traces.length === 0) throw new SimError('SIM_ERR_CONFIG', 'model mode needs at least one trace');
  if (!Number.isInteger(options.sessions) || options.sessions < 1)
    throw new SimError('SIM_ERR_CONFIG', 'sessions must be a positive integer');
  const rule = typeof options.abr === 'string' ? lookupRule(options.abr) : options.abr;
  const delivery = lookupDelivery(options.policy);
  const settings: SessionSettings = { ...defaultSessionSettings, ...options.settings };
  const random = seededRandom(options.seed);
  const results: SessionResult[] = [];
  for (let i = 0; i < options.sessions; i++) {
    const trace = options.traces[i % options.traces.length]!;
    const randomOffsetMs = Math.floor(random() * trace.durationMs);
    const offsetMs = options.traceOffsetMs ?? randomOffsetMs;
    const clock = new VirtualClock();
    const firstDelayMs = trace.points[0]?.delayMs;
    const network = new TraceNetwork(
      trace,
      options.rttMs ?? (firstDelayMs !== undefined ? 2 * firstDelayMs : 40),
      offsetMs,
    );
    results.push(
      await runSession(
        options.content,
        rule(),
        new ModelFetcher(options.content, network, delivery(), clock, options.cmcd === true),
        clock,
        settings,
      ),
    );
    options.onProgress?.(i + 1, options.sessions);
  }
  return results;
}
