/**
 * Live mode: simulated players fetching real segments over HTTP (undici) from a running origin,
 * on real time, many in one process; optionally sending CMCD like dash.js (bl, br, d, su, rtp, sid).
 */
import { randomUUID } from 'node:crypto';
import { Agent, type Dispatcher, request } from 'undici';
import type { ByteSpan } from '@trickle/origin/manifests';
import type { Content } from './content.js';
import { SimError } from './errors.js';
import { lookupRule } from './model.js';
import {
  defaultSessionSettings,
  runSession,
  type Clock,
  type Fetcher,
  type FetchRequest,
  type SessionResult,
  type SessionSettings,
} from './session.js';

export const realClock: Clock = {
  nowMs: () => performance.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms))),
};

/** CMCD as a query value (CTA-5004 keys, sorted, comma-separated). */
export function cmcdQuery(fields: {
  bufferMs: number;
  bitrateKbps: number;
  durationMs: number;
  startup: boolean;
  requestedThroughputKbps?: number | undefined;
  sessionId: string;
}): string {
  const parts = [
    `bl=${Math.round(fields.bufferMs / 100) * 100}`,
    `br=${Math.round(fields.bitrateKbps)}`,
    `d=${Math.round(fields.durationMs)}`,
    ...(fields.requestedThroughputKbps === undefined
      ? []
      : [`rtp=${Math.round(fields.requestedThroughputKbps / 100) * 100}`]),
    `sid="${fields.sessionId}"`,
    ...(fields.startup ? ['su'] : []),
  ];
  return parts.sort().join(',');
}

export interface HttpFetcherOptions {
  /** Send CMCD with every request, as dash.js does. */
  readonly cmcd?: boolean | undefined;
  /** Told the time to first byte (response headers) of every request, in ms. */
  readonly onTimeToFirstByte?: ((ms: number) => void) | undefined;
  /** Told every response's headers (e.g. Server-Timing naming the connection's A/B group). */
  readonly onResponseHeaders?: ((headers: Record<string, string | string[] | undefined>) => void) | undefined;
  /** Connect from this local address (a viewer of a population lab, on its own access link). */
  readonly localAddress?: string | undefined;
}

export class HttpFetcher implements Fetcher {
  private readonly sessionId = randomUUID();

  constructor(
    private readonly content: Content,
    private readonly dispatcher: Agent,
    private readonly options: HttpFetcherOptions = {},
  ) {}

  private async get(url: string, range: ByteSpan | undefined, query: string | undefined): Promise<number> {
    const target =
      query === undefined ? url : `${url}${url.includes('?') ? '&' : '?'}CMCD=${encodeURIComponent(query)}`;
    let response: Dispatcher.ResponseData;
    const sentMs = performance.now();
    try {
      response = await request(target, {
        dispatcher: this.dispatcher,
        ...(range === undefined
          ? {}
          : { headers: { range: `bytes=${range.offset}-${range.offset + range.sizeBytes - 1}` } }),
      });
      this.options.onTimeToFirstByte?.(performance.now() - sentMs);
      this.options.onResponseHeaders?.(response.headers);
    } catch (error) {
      throw new SimError('SIM_ERR_FETCH', `GET ${url}: ${(error as Error).message}`, { cause: error });
    }
    let bytes = 0;
    for await (const chunk of response.body) bytes += (chunk as Buffer).length;
    if (response.statusCode !== (range === undefined ? 200 : 206))
      throw new SimError(
        'SIM_ERR_FETCH',
        `GET ${url}${range === undefined ? '' : ` (bytes ${range.offset}+${range.sizeBytes})`} ` +
          `answered ${response.statusCode}`,
      );
    return bytes;
  }

  async fetch(request: FetchRequest): Promise<{ bytes: number }> {
    const rendition = this.content.renditions[request.renditionIndex]!;
    const segment = rendition.segments[request.segmentIndex]!;
    const query =
      this.options.cmcd === true
        ? cmcdQuery({
            bufferMs: request.bufferSec * 1000,
            bitrateKbps: rendition.bitrateBps / 1000,
            durationMs: segment.durationSec * 1000,
            startup: !request.startedUp,
            requestedThroughputKbps:
              (this.content.renditions[Math.min(request.renditionIndex + 1, this.content.renditions.length - 1)]!
                .bitrateBps *
                1.5) /
              1000,
            sessionId: this.sessionId,
          })
        : undefined;
    const [video, audio] = await Promise.all([
      this.get(segment.url, segment.range, query),
      segment.audio === undefined ? Promise.resolve(0) : this.get(segment.audio.url, segment.audio.range, query),
    ]);
    return { bytes: video + audio };
  }
}

export interface LiveRunOptions {
  readonly content: Content;
  readonly abr: string;
  readonly sessions: number;
  readonly concurrency: number;
  readonly cmcd?: boolean;
  readonly settings?: Partial<SessionSettings>;
  readonly onProgress?: (done: number, total: number) => void;
  readonly onTimeToFirstByte?: (ms: number) => void;
}

/**
 * One live session on real time: its own connection, kept alive across its segments as a
 * browser's would be (the buffer's idle gaps are far shorter than the keep-alive), closed at the end.
 */
export async function playLiveSession(
  content: Content,
  abr: string,
  settings: Partial<SessionSettings>,
  fetcherOptions: HttpFetcherOptions = {},
): Promise<SessionResult> {
  const rule = lookupRule(abr);
  const agent = new Agent({
    connections: 1,
    keepAliveTimeout: 60_000,
    ...(fetcherOptions.localAddress === undefined ? {} : { localAddress: fetcherOptions.localAddress }),
  });
  try {
    return await runSession(content, rule(), new HttpFetcher(content, agent, fetcherOptions), realClock, {
      ...defaultSessionSettings,
      ...settings,
    });
  } finally {
    await agent.close();
  }
}

export async function runLive(options: LiveRunOptions): Promise<SessionResult[]> {
  const results: SessionResult[] = [];
  let next = 0;
  const worker = async () => {
    while (next < options.sessions) {
      next++;
      results.push(
        await playLiveSession(options.content, options.abr, options.settings ?? {}, {
          cmcd: options.cmcd,
          onTimeToFirstByte: options.onTimeToFirstByte,
        }),
      );
      options.onProgress?.(results.length, options.sessions);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency, options.sessions)) }, worker));
  return results;
}
