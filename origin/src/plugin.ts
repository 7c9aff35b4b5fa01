/**
 * The origin as a fastify plugin: `app.register(trickleOrigin, { media: '/srv/media' })` inside any
 * fastify app, or through `buildApp()`. Routes: /media/<asset>/<file>, /api/assets,
 * /api/assets/<asset>, /player/, /healthz, /readyz, and /metrics and /api/flows (see ops-routes.ts).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import cors from '@fastify/cors';
import { clampBackends, createSocketControl, type ClampBackend, type SocketControl } from '@trickle/native';
import type { FastifyBaseLogger, FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { resolveConfig, type OriginConfig, type OriginConfigInput } from './config/config.js';
import { OriginError, errorBody, isOriginError, statusOf } from './errors.js';
import { sendFile, type SendFileOptions } from './http/send-file.js';
import { MediaLibrary } from './media/library.js';
import { summarizeIndex } from './media/media-index.js';
import { registerPlayerRoutes, type PlayerFiles } from './player/routes.js';
import { DeliveryEngine } from './delivery/delivery-engine.js';
import { FlowLog } from './delivery/flow-log.js';
import { DeliveryMetrics } from './delivery/metrics.js';
import { registerOpsRoutes, type IndexingOutcome, type OpsParts } from './ops-routes.js';

/** The origin's delivery parts, for the app that embeds it (stats, tests, shutdown checks). */
export interface OriginHandles {
  readonly engine: DeliveryEngine;
  readonly metrics: DeliveryMetrics;
  readonly flows: FlowLog;
  readonly clamp: ClampBackend;
  /** What the operator's routes read (for an admin listener beside the app). */
  readonly ops: OpsParts;
  /**
   * Settles when the first indexing pass over the library is over (it runs in the background once the app is ready).
   */
  readonly indexed: Promise<IndexingOutcome>;
}

export interface TrickleOriginOptions {
  /** A validated config (from loadConfig) or raw values validated here. */
  readonly config?: OriginConfig | OriginConfigInput;
  /** Share one library between several registrations, or inject one in tests. */
  readonly library?: MediaLibrary;
  /**
   * How delivery policies reach sockets. startOrigin() passes one with the clamp it attached
   * (before listen); without it, sockets are read and paced natively but trickle has no clamp
   * backend (`none`, and flow records say so).
   */
  readonly socketControl?: SocketControl;
  /** Receives the delivery parts once they exist (the plugin's own decorations stay encapsulated). */
  readonly onHandles?: (handles: OriginHandles) => void;
}

function isFrozenConfig(config: TrickleOriginOptions['config']): config is OriginConfig {
  return config !== undefined && Object.isFrozen(config);
}

/** The methods the origin answers. */
const readMethods = ['GET', 'HEAD', 'OPTIONS'];

export const trickleOrigin: FastifyPluginAsync<TrickleOriginOptions> = async (app: FastifyInstance, options) => {
  const config = isFrozenConfig(options.config)
    ? options.config
    : resolveConfig([{ label: 'plugin options', values: { ...(options.config ?? {}) } }]);
  const library =
    options.library ??
    new MediaLibrary({
      root: config.media,
      cacheMaxBytes: config.cache.maxBytes,
      cacheMaxFileBytes: config.cache.maxFileBytes,
      revalidateMs: config.cache.revalidateMs,
      onIndexError: (asset, error) =>
        app.log.error(
          { asset, err: error, code: (error as OriginError).code, file: (error as OriginError).details?.file },
          `asset "${asset}" cannot be indexed: ${error.message}`,
        ),
    });
  await library.open();

  await app.register(cors, {
    origin: config.corsAllowOrigin === '*' ? '*' : config.corsAllowOrigin,
    methods: readMethods,
    allowedHeaders: [
      'Range',
      'If-Range',
      'If-None-Match',
      'If-Modified-Since',
      'If-Match',
      'If-Unmodified-Since',
      'CMCD-Request',
      'CMCD-Object',
      'CMCD-Status',
      'CMCD-Session',
      'Content-Type',
    ],
    // Joined once: the plugin joins an array on every response.
    exposedHeaders: [
      'Content-Range',
      'Content-Length',
      'Accept-Ranges',
      'Server-Timing',
      'ETag',
      'Last-Modified',
      'CMSD-Dynamic',
      'CMSD-Static',
    ].join(', '),
    maxAge: 600,
  });

  app.setErrorHandler((error: Error & { statusCode?: number; code?: string }, request, reply) => {
    if (isOriginError(error)) {
      const status = statusOf(error.code);
      if (status >= 500) request.log.error({ err: error }, error.message);
      if (status === 503) reply.header('retry-after', '1');
      return reply.code(status).send(errorBody(error.code, error.message));
    }
    const status = error.statusCode !== undefined && error.statusCode >= 400 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error }, 'unhandled error');
    return reply
      .code(status)
      .send(errorBody(error.code ?? 'ORIGIN_ERR_INTERNAL', status >= 500 ? 'internal error' : error.message));
  });
  app.setNotFoundHandler((request, reply) => {
    // A read-only origin: every other method is not allowed anywhere (not "not found").
    if (!readMethods.includes(request.method)) {
      return reply
        .code(statusOf('ORIGIN_ERR_METHOD_NOT_ALLOWED'))
        .header('allow', readMethods.join(', '))
        .send(
          errorBody(
            'ORIGIN_ERR_METHOD_NOT_ALLOWED',
            `${request.method} is not allowed: the origin answers ${readMethods.join(', ')}`,
          ),
        );
    }
    return reply
      .code(statusOf('ORIGIN_ERR_NOT_FOUND'))
      .send(errorBody('ORIGIN_ERR_NOT_FOUND', `no route for ${request.method} ${request.url.split('?')[0]}`));
  });

  const socketControl =
    options.socketControl ??
    createSocketControl(
      clampBackends.none({
        native: undefined,
        fallbackReason: 'no clamp attached to this app (startOrigin attaches one before listen)',
      }),
    );
  const metrics = new DeliveryMetrics();
  const flows = new FlowLog(config.flows.keep, config.flows.log, (error) =>
    app.log.error({ err: error }, `flow log ${config.flows.log}: ${error.message}`),
  );
  const engine = new DeliveryEngine({
    delivery: config.delivery,
    drainTimeoutMs: config.flows.drainTimeoutMs,
    control: socketControl,
    log: app.log,
    metrics,
    flowLog: flows,
    timingAllowOrigin:
      typeof config.corsAllowOrigin === 'string' ? config.corsAllowOrigin : config.corsAllowOrigin.join(', '),
    readRange: (file, range) => library.readRange(file, range),
  });
  app.addHook('onClose', async () => flows.close());

  const sendOptions: SendFileOptions = {
    maxRanges: config.maxRanges,
    cacheControl: config.cacheControl,
    readRange: (file, range) => library.readRange(file, range),
    onShortRead: (file, error) => {
      library.forget(file.asset, file.name);
      app.log.error({ file: file.path, err: error }, error.message);
    },
  };

  app.route({
    method: ['GET', 'HEAD'],
    url: '/media/:asset/*',
    exposeHeadRoute: false,
    handler: async (request: FastifyRequest<{ Params: { asset: string; '*': string } }>, reply: FastifyReply) => {
      const file = await library.getFile(request.params.asset, request.params['*']);
      if (file === undefined) {
        return reply
          .code(statusOf('ORIGIN_ERR_FILE_NOT_FOUND'))
          .send(errorBody('ORIGIN_ERR_FILE_NOT_FOUND', 'no such media file'));
      }
      const role = file.role;
      if (role !== 'segment' && role !== 'progressive') return sendFile(request, reply, file, sendOptions);
      // The policy is chosen before any header is written: a bad ?policy= is an error, not a cacheable segment.
      const selection = engine.select(request, file.asset, role);
      if ('error' in selection) {
        return reply
          .code(statusOf('ORIGIN_ERR_BAD_POLICY'))
          .header('cache-control', 'no-store')
          .send(errorBody('ORIGIN_ERR_BAD_POLICY', selection.error));
      }
      // An indexed asset's state is a lookup: read here, so that the delivery hook runs without an await.
      const state = await library.indexState(file.asset);
      if (state?.status !== 'ready') return sendFile(request, reply, file, sendOptions);
      const index = state.index;
      return sendFile(request, reply, file, {
        ...sendOptions,
        deliver: (req, rep, media, range) => engine.deliver(req, rep, media, range, index, selection),
      });
    },
  });

  app.get('/api/assets', async () => {
    const assets = await library.listAssets();
    return {
      assets: await Promise.all(
        assets.map(async (asset) => {
          const state = await library.indexState(asset.name);
          const base = `media/${asset.name}/`;
          const index = state?.status === 'ready' ? state.index : undefined;
          const link = (file: string | undefined) => (file === undefined ? null : base + file);
          const plainRenditions =
            index?.renditions.filter((r) => !r.pacing.paced && r.pacing.code !== undefined).length ?? 0;
          return {
            name: asset.name,
            // partial: served, but some renditions (or manifests) only plain: `issues` says which and why.
            status:
              index === undefined ? 'broken' : index.issues.length > 0 || plainRenditions > 0 ? 'partial' : 'ready',
            ...(state?.status === 'broken'
              ? {
                  error: {
                    code: (state.error as OriginError).code ?? 'ORIGIN_ERR_CORRUPT_MEDIA',
                    message: state.error.message,
                  },
                }
              : {}),
            ...(index !== undefined && index.issues.length > 0 ? { issues: index.issues } : {}),
            durationSec: index?.durationSec ?? null,
            renditionCount: index?.renditions.length ?? null,
            pacedRenditionCount: index?.renditions.filter((r) => r.pacing.paced).length ?? null,
            links: {
              dash: link(index?.mpdFiles[0] ?? asset.files.mpdFiles[0]),
              hls: link(index?.hlsEntryFiles[0] ?? asset.files.playlistFiles[0]),
              progressive: link(index?.progressive?.file),
              index: `api/assets/${asset.name}`,
            },
          };
        }),
      ),
    };
  });

  app.get(
    '/api/assets/:asset',
    async (request: FastifyRequest<{ Params: { asset: string }; Querystring: { segments?: string } }>, reply) => {
      const state = await library.indexState(request.params.asset);
      if (state === undefined)
        throw new OriginError('ORIGIN_ERR_ASSET_NOT_FOUND', `no asset named "${request.params.asset}"`);
      if (state.status === 'broken') {
        const error = state.error as OriginError;
        return reply
          .code(statusOf(error.code ?? 'ORIGIN_ERR_CORRUPT_MEDIA'))
          .send(
            errorBody(error.code ?? 'ORIGIN_ERR_CORRUPT_MEDIA', error.message, { file: error.details?.file ?? null }),
          );
      }
      return summarizeIndex(state.index, { includeSegments: request.query.segments !== '0' });
    },
  );

  // A callback hook: an async one costs every response a promise and a microtask turn.
  app.addHook('onResponse', (request, reply, done) => {
    metrics.httpResponse(request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000);
    done();
  });

  let indexing: IndexingOutcome | undefined;
  let indexingDone!: (outcome: IndexingOutcome) => void;
  const indexed = new Promise<IndexingOutcome>((resolve) => (indexingDone = resolve));
  const ops: OpsParts = { config, library, engine, metrics, flows, socketControl, indexing: () => indexing };
  // With an admin listener, metrics and flow records (client addresses) are served only there.
  registerOpsRoutes(app, ops, opsOnPublicListener(config) ? 'all' : 'probes');
  options.onHandles?.({ engine, metrics, flows, clamp: socketControl.clamp, ops, indexed });

  await registerPlayerRoutes(app, playerFiles());

  if (options.library === undefined) app.addHook('onClose', async () => library.close());

  // Index every asset once the server is ready, in the background (a few at a time, so requests keep
  // being answered while a large library is read; an asset asked for first is indexed on demand).
  app.addHook('onReady', async () => {
    void indexLibrary(library, app.log).then((outcome) => {
      indexing = outcome;
      indexingDone(outcome);
    });
  });
};

/** Whether a host name or address is this machine's loopback. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/**
 * Whether /metrics and /api/flows (viewers' addresses) are on the public listener: not with an admin
 * listener (they are there), and not on an address others reach unless config says so (publicOps).
 */
export function opsOnPublicListener(config: Pick<OriginConfig, 'admin' | 'host' | 'publicOps'>): boolean {
  return config.admin === undefined && (isLoopbackHost(config.host) || config.publicOps);
}

/** Indexes every asset of the library, `concurrency` at a time, and says what it found. */
export async function indexLibrary(
  library: MediaLibrary,
  log: FastifyBaseLogger,
  concurrency = 4,
): Promise<IndexingOutcome> {
  const startedMs = performance.now();
  const assets = await library.listAssets().catch((error: unknown) => {
    log.error({ err: error }, `the media root ${library.root} cannot be listed: ${(error as Error).message}`);
    return [];
  });
  if (assets.length === 0) log.warn({ media: library.root }, `no assets found under ${library.root}`);
  let readyAssets = 0;
  let partialAssets = 0;
  const brokenAssets: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < assets.length) {
      const asset = assets[next++]!;
      const state = await library.indexState(asset.name);
      if (state?.status === 'ready') {
        readyAssets++;
        if (state.index.issues.length > 0) {
          partialAssets++;
          log.warn(
            { asset: asset.name, issues: state.index.issues },
            `asset "${asset.name}" is served, partly plain: ${state.index.issues.join('; ')}`,
          );
        }
        if (assets.length <= 100)
          log.info(
            { asset: asset.name, renditions: state.index.renditions.length, durationSec: state.index.durationSec },
            `indexed asset "${asset.name}"`,
          );
      } else brokenAssets.push(asset.name);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, assets.length) }, worker));
  const seconds = (performance.now() - startedMs) / 1000;
  log.info(
    { ready: readyAssets, partial: partialAssets, broken: brokenAssets.length, seconds },
    `indexed ${assets.length} assets in ${seconds.toFixed(1)} s: ${readyAssets} served ` +
      `(${partialAssets} partly plain), ${brokenAssets.length} broken`,
  );
  return { readyAssets, brokenAssets: brokenAssets.sort() };
}

/**
 * The /player/ page's files: page and script live in the origin package (static/ and the compiled
 * dist/player/), the libraries in node_modules. Public so that a harness can serve the same page.
 */
export function playerFiles(): PlayerFiles {
  const packageRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
  const require = createRequire(import.meta.url);
  return {
    indexHtml: join(packageRoot, 'static', 'player', 'index.html'),
    playerJs: join(packageRoot, 'dist', 'player', 'player.js'),
    dashjs: resolveOptional(() => require.resolve('dashjs')),
    hlsjs: resolveOptional(() => join(dirname(require.resolve('hls.js')), 'hls.min.js')),
    shaka: resolveOptional(() => require.resolve('shaka-player')),
    chartsJs: join(packageRoot, 'dist', 'player', 'charts.js'),
    vega: resolveOptional(() => {
      const build = (name: string, file: string) => join(dirname(require.resolve(name)), file);
      return {
        vega: build('vega', 'vega.min.js'),
        vegaLite: build('vega-lite', 'vega-lite.min.js'),
        vegaEmbed: build('vega-embed', 'vega-embed.min.js'),
      };
    }),
  };
}

/** The players are optional dependencies: an origin embedded without them still serves media. */
function resolveOptional<T>(resolvePath: () => T): T | undefined {
  try {
    return resolvePath();
  } catch {
    return undefined;
  }
}
