/**
 * buildApp(): the origin as a fastify instance that is not listening yet, so tests can use
 * inject() where sockets do not matter and listen() where they do.
 */
import type https from 'node:https';
import Fastify, {
  LogController,
  type FastifyHttpsOptions,
  type FastifyInstance,
  type FastifyReply,
  type FastifyServerOptions,
} from 'fastify';
import type { SocketControl } from '@trickle/native';
import type { OriginConfig } from './config/config.js';
import type { MediaLibrary } from './media/library.js';
import { errorBody } from './errors.js';
import { trickleOrigin, type OriginHandles } from './plugin.js';
import { serverTlsOptions, type TlsMaterial } from './tls.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** The origin's delivery engine, metrics, flow log and clamp backend (set by buildApp). */
    readonly trickle: OriginHandles;
  }
}

export interface BuildAppOptions {
  readonly config: OriginConfig;
  /** A pino logger or logger options; defaults to JSON logs at config.logLevel on stdout. */
  readonly logger?: FastifyServerOptions['loggerInstance'] | false;
  readonly library?: MediaLibrary;
  /** How delivery policies reach sockets (with the clamp backend startOrigin attached). */
  readonly socketControl?: SocketControl;
  /** Serve HTTPS with this certificate and key (see tls.ts); plain HTTP without. */
  readonly tls?: TlsMaterial;
}

/** The logger levels at which the per-response line below is written. */
const levelsLoggingResponses = new Set(['trace', 'debug', 'info']);

export async function buildApp(options: BuildAppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const serverOptions: FastifyServerOptions = {
    ...(options.logger === undefined
      ? { logger: { level: config.logLevel } }
      : options.logger === false
        ? { logger: false }
        : { loggerInstance: options.logger }),
    // One log line per response (below) instead of fastify's two.
    logController: new LogController({ disableRequestLogging: true }),
    // Malformed percent-encoding and the like: a 400 in the same error shape as every other error.
    frameworkErrors: (error, _request, reply) => {
      void (reply as FastifyReply).code(400).send(errorBody(error.code, error.message));
    },
    // Idle keep-alive connections are closed at shutdown; busy ones drain.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
    keepAliveTimeout: 65_000,
    requestTimeout: 120_000,
  };
  // The HTTPS server's requests carry TLSSockets, which are net.Sockets: the rest is the same.
  const app = (options.tls === undefined
    ? Fastify(serverOptions)
    : Fastify({
        ...(serverOptions as FastifyHttpsOptions<https.Server>),
        https: serverTlsOptions(options.tls),
      })) as unknown as FastifyInstance;

  // A callback hook, not async: a promise per response for a line that is rarely written.
  app.addHook('onResponse', (request, reply, done) => {
    // Built only when it is written: at warn and above this line was a few microseconds of every request.
    if (!levelsLoggingResponses.has(request.log.level)) {
      done();
      return;
    }
    const length = reply.getHeader('content-length');
    request.log.info(
      {
        method: request.method,
        url: request.url,
        status: reply.statusCode,
        bytes: typeof length === 'string' || typeof length === 'number' ? Number(length) : undefined,
        completed: reply.raw.writableFinished,
        durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
        remote: `${request.socket.remoteAddress}:${request.socket.remotePort}`,
      },
      'response',
    );
    done();
  });

  let handles: OriginHandles | undefined;
  await app.register(trickleOrigin, {
    config,
    onHandles: (parts) => (handles = parts),
    ...(options.library === undefined ? {} : { library: options.library }),
    ...(options.socketControl === undefined ? {} : { socketControl: options.socketControl }),
  });
  app.decorate('trickle', handles!);
  return app;
}
