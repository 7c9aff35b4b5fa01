/** Runs the origin: listen, report where, and drain on SIGTERM/SIGINT within the grace period. */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import type { OriginConfig } from './config/config.js';
import { OriginError } from './errors.js';

export interface RunningOrigin {
  readonly app: FastifyInstance;
  readonly url: string;
  close(): Promise<void>;
}

/** When the demo is expected but absent, say exactly how to create it. */
export async function checkDemoMedia(mediaRoot: string): Promise<void> {
  try {
    await access(join(mediaRoot, 'demo', 'manifest.mpd'));
  } catch {
    throw new OriginError(
      'ORIGIN_ERR_DEMO_MISSING',
      `no demo media in ${join(mediaRoot, 'demo')}. Create it with:\n  npx trickle media demo --out ${join(mediaRoot, 'demo')}\nor serve your own with --media <dir> (one subdirectory per asset; package a file with "npx trickle package <input> --out <dir>/<asset>").`,
    );
  }
}

export async function startOrigin(config: OriginConfig, options: { handleSignals?: boolean } = {}): Promise<RunningOrigin> {
  const app = await buildApp({ config });
  const address = await app.listen({ port: config.port, host: config.host });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const timer = setTimeout(() => {
        app.log.warn({ graceMs: config.shutdownGraceMs }, 'grace period over: closing remaining connections');
        app.server.closeAllConnections();
      }, config.shutdownGraceMs);
      timer.unref();
      await app.close();
      clearTimeout(timer);
    })();
    return closing;
  };
  if (options.handleSignals === true) {
    const onSignal = (signal: NodeJS.Signals) => {
      app.log.info({ signal }, `${signal}: draining in-flight responses`);
      close().then(
        () => process.exit(0),
        (error: unknown) => {
          app.log.error({ err: error }, 'error while closing');
          process.exit(1);
        },
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }
  app.log.info({ url: address, media: config.media }, `Trickle origin listening on ${address} (player: ${address}/player/)`);
  return { app, url: address, close };
}
