/** Runs the origin: listen, report where, and drain on SIGTERM/SIGINT within the grace period. */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { attachClamp, clampBackends, createSocketControl } from '@trickle/native';
import { buildApp } from './app.js';
import { deliveryNeedsClamp, deliveryWantsInitialWindow } from './delivery/delivery-engine.js';
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
  // The clamp must be attached, and this process in its cgroup, before listen().
  const needsClamp = deliveryNeedsClamp(config.delivery);
  const clamp = needsClamp
    ? await attachClamp({ prefer: config.delivery.clamp.backend, cgroupPath: config.delivery.clamp.cgroup, pinDir: config.delivery.clamp.pinDir, join: true })
    : clampBackends.none({ native: undefined, fallbackReason: 'no configured policy uses the clamp' });
  const app = await buildApp({ config, socketControl: createSocketControl(clamp) });
  if (clamp.fallbackReason !== undefined && needsClamp) app.log.warn({ backend: clamp.backend, reason: clamp.fallbackReason }, `trickle clamp backend: ${clamp.backend} (${clamp.fallbackReason})`);
  else app.log.info({ backend: clamp.backend }, `trickle clamp backend: ${clamp.backend}`);
  if (deliveryWantsInitialWindow(config.delivery) && clamp.backend !== 'bpf') app.log.warn({ backend: clamp.backend }, `initial windows are configured but need the bpf clamp backend (this one is ${clamp.backend}): connections keep the kernel's, and flow records say "unsupported"`);
  app.addHook('onClose', async () => clamp.close());
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
