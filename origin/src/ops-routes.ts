/**
 * The operator's routes: /healthz (the process answers), /readyz (it should get traffic: the media
 * index is built with an asset ready, and the clamp backend is the one config demands), /metrics
 * and /api/flows (client addresses). With `admin` configured the last two live only on the admin
 * listener, away from viewers; the probes are on both.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { SocketControl } from '@trickle/native';
import type { OriginConfig } from './config/config.js';
import { errorBody, statusOf } from './errors.js';
import type { MediaLibrary } from './media/library.js';
import { deliveryNeedsClamp, type DeliveryEngine } from './delivery/delivery-engine.js';
import type { FlowLog } from './delivery/flow-log.js';
import type { DeliveryMetrics } from './delivery/metrics.js';

/** What the first indexing pass found (set once the server is ready). */
export interface IndexingOutcome {
  readonly readyAssets: number;
  readonly brokenAssets: readonly string[];
}

export interface OpsParts {
  readonly config: OriginConfig;
  readonly library: MediaLibrary;
  readonly engine: DeliveryEngine;
  readonly metrics: DeliveryMetrics;
  readonly flows: FlowLog;
  readonly socketControl: SocketControl;
  /** Undefined until the first indexing pass is over. */
  indexing(): IndexingOutcome | undefined;
}

/** Why the origin should not get traffic yet (empty: ready). */
export function notReadyReasons(parts: OpsParts): string[] {
  const reasons: string[] = [];
  const indexing = parts.indexing();
  if (indexing === undefined) reasons.push('the media index is being built');
  else if (indexing.readyAssets === 0)
    reasons.push(
      indexing.brokenAssets.length === 0
        ? 'no assets in the media root'
        : `no asset is ready (broken: ${indexing.brokenAssets.join(', ')})`,
    );
  const clamp = parts.socketControl.clamp;
  const wanted = parts.config.delivery.clamp.backend;
  if (deliveryNeedsClamp(parts.config.delivery) && clamp.backend !== wanted)
    reasons.push(
      `the clamp backend is ${clamp.backend}, config ` +
        `demands ${wanted}${clamp.fallbackReason === undefined ? '' : ` (${clamp.fallbackReason})`}`,
    );
  return reasons;
}

export function registerOpsRoutes(app: FastifyInstance, parts: OpsParts, routes: 'probes' | 'all'): void {
  const { library, engine, socketControl } = parts;
  app.get('/healthz', async () => ({
    status: 'ok',
    cache: library.cacheStats(),
    delivery: {
      ...engine.stats(),
      clamp: { ...socketControl.clamp.stats(), fallbackReason: socketControl.clamp.fallbackReason ?? null },
    },
  }));

  app.get('/readyz', async (_request, reply) => {
    const reasons = notReadyReasons(parts);
    const indexing = parts.indexing();
    const body = {
      status: reasons.length === 0 ? 'ready' : 'not ready',
      reasons,
      assets: indexing === undefined ? null : { ready: indexing.readyAssets, broken: indexing.brokenAssets },
      clamp: socketControl.clamp.backend,
    };
    return reply
      .code(reasons.length === 0 ? 200 : 503)
      .header('cache-control', 'no-store')
      .send(body);
  });

  if (routes === 'probes') return;

  app.get('/metrics', async (_request, reply) => {
    const text = await parts.metrics.registry.metrics();
    return reply.type(parts.metrics.registry.contentType).send(text);
  });

  app.get('/api/flows', async (request: FastifyRequest<{ Querystring: { since?: string; limit?: string } }>, reply) => {
    const since = parseSince(request.query.since);
    const limit = request.query.limit === undefined ? 1000 : Number(request.query.limit);
    if (since === undefined || !Number.isInteger(limit) || limit < 1 || limit > 100_000) {
      return reply
        .code(statusOf('ORIGIN_ERR_BAD_QUERY'))
        .send(
          errorBody(
            'ORIGIN_ERR_BAD_QUERY',
            'since must be epoch milliseconds or an ISO date; limit an integer from 1 to 100000',
          ),
        );
    }
    return {
      flows: parts.flows.since(since, limit),
      clamp: { backend: socketControl.clamp.backend, fallbackReason: socketControl.clamp.fallbackReason ?? null },
    };
  });
}

function parseSince(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return 0;
  if (/^\d+$/.test(value)) return Number(value);
  const parsed = Date.parse(value);
  return Number.isNaN(parsed) ? undefined : parsed;
}
