/** Runs the origin: listen, report where, and drain on SIGTERM/SIGINT within the grace period. */
import { access } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import type https from 'node:https';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import type { FastifyInstance } from 'fastify';
import { attachClamp, clampBackends, createSocketControl } from '@trickle/native';
import { buildApp } from './app.js';
import { deliveryNeedsClamp, deliveryWantsInitialWindow } from './delivery/delivery-engine.js';
import type { OriginConfig } from './config/config.js';
import Fastify from 'fastify';
import { OriginError, errorBody } from './errors.js';
import { registerOpsRoutes, type IndexingOutcome } from './ops-routes.js';
import { opsOnPublicListener } from './plugin.js';
import { loadTlsMaterial, serverTlsOptions } from './tls.js';

export interface RunningOrigin {
  readonly app: FastifyInstance;
  readonly url: string;
  /** The admin listener's address, when config has one. */
  readonly adminUrl: string | undefined;
  /** Settles when the first pass over the library has indexed every asset (requests are served meanwhile). */
  readonly indexed: Promise<IndexingOutcome>;
  close(): Promise<void>;
  /**
   * Re-reads the TLS certificate and key (what SIGHUP does): new connections get the new pair,
   * open ones keep theirs. A pair that fails to load is logged and the old one stays.
   */
  reloadTls(): Promise<boolean>;
}

/** When the demo is expected but absent, say exactly how to create it. */
export async function checkDemoMedia(mediaRoot: string): Promise<void> {
  try {
    await access(join(mediaRoot, 'demo', 'manifest.mpd'));
  } catch {
    throw new OriginError(
      'ORIGIN_ERR_DEMO_MISSING',
      `no demo media in ${join(mediaRoot, 'demo')}. Create it with:\n  npx trickle media ` +
        `demo --out ${join(mediaRoot, 'demo')}\nor serve your own with --media <dir> (one ` +
        `subdirectory per asset; package a file with "npx trickle package <input> --out ` +
        `<dir>/<asset>").`,
    );
  }
}

/** net.core.somaxconn, the kernel's cap on a listen backlog (undefined where it cannot be read: not Linux). */
function somaxconn(): number | undefined {
  try {
    const value = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8').trim());
    return Number.isInteger(value) && value > 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * V8's allocation-site pretenuring, off for the origin's process. V8 had learned to allocate some
 * object literals of the request path straight in the old generation (a response's spec, plan,
 * TCP_INFO readings: V8 does so for literals whose objects mostly outlive a minor collection).
 * Dead there at once, they still held what they point at (reply, request, socket buffers) through
 * every minor collection until the next major one, and that got promoted in turn: about 7 kB per
 * range response with it, 2 kB (the kept flow records) without; a scavenge took 4-6 ms instead of
 * 2-3 (bench/results/origin-vs-nginx.md, 2026-12-07). Set at boot, it measured as the command-line
 * flag does.
 */
function stopPretenuring(): void {
  setFlagsFromString('--no-allocation-site-pretenuring');
}

export async function startOrigin(
  config: OriginConfig,
  options: { handleSignals?: boolean } = {},
): Promise<RunningOrigin> {
  stopPretenuring();
  // The clamp must be attached, and this process in its cgroup, before listen().
  const needsClamp = deliveryNeedsClamp(config.delivery);
  const clamp = needsClamp
    ? await attachClamp({
        prefer: config.delivery.clamp.backend,
        cgroupPath: config.delivery.clamp.cgroup,
        pinDir: config.delivery.clamp.pinDir,
        join: true,
      })
    : clampBackends.none({ native: undefined, fallbackReason: 'no configured policy uses the clamp' });
  const tlsFiles = config.tls;
  const tls =
    tlsFiles === undefined
      ? undefined
      : await loadTlsMaterial(tlsFiles).catch(async (error: unknown) => {
          await clamp.close();
          throw error;
        });
  const app = await buildApp({
    config,
    socketControl: createSocketControl(clamp),
    ...(tls === undefined ? {} : { tls }),
  });
  if (tls !== undefined)
    app.log.info(
      { certificate: tls.summary },
      `TLS: ${tls.summary.subject}, valid to ${tls.summary.validTo} (HTTP/1.1 only)`,
    );
  if (clamp.fallbackReason !== undefined && needsClamp)
    app.log.warn(
      { backend: clamp.backend, reason: clamp.fallbackReason },
      `trickle clamp backend: ${clamp.backend} (${clamp.fallbackReason})`,
    );
  else app.log.info({ backend: clamp.backend }, `trickle clamp backend: ${clamp.backend}`);
  if (deliveryWantsInitialWindow(config.delivery) && clamp.backend !== 'bpf')
    app.log.warn(
      { backend: clamp.backend },
      `initial windows are configured but need the bpf clamp backend (this one ` +
        `is ${clamp.backend}): connections keep the kernel's, and flow records say ` +
        `"unsupported"`,
    );
  app.addHook('onClose', async () => clamp.close());
  const address = await app.listen({ port: config.port, host: config.host, backlog: config.listenBacklog });
  const backlogCap = somaxconn();
  if (backlogCap !== undefined && backlogCap < config.listenBacklog)
    app.log.warn(
      { listenBacklog: config.listenBacklog, somaxconn: backlogCap },
      `listen backlog ${config.listenBacklog} is capped at ${backlogCap} by net.core.somaxconn: viewers ` +
        `arriving at once beyond it wait for SYN retries (sysctl -w net.core.somaxconn=${config.listenBacklog})`,
    );
  const admin =
    config.admin === undefined
      ? undefined
      : await startAdmin(app, config.admin).catch(async (error: unknown) => {
          await app.close();
          throw error;
        });
  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      const timer = setTimeout(() => {
        app.log.warn({ graceMs: config.shutdownGraceMs }, 'grace period over: closing remaining connections');
        app.server.closeAllConnections();
      }, config.shutdownGraceMs);
      timer.unref();
      await admin?.server.close();
      await app.close();
      clearTimeout(timer);
    })();
    return closing;
  };
  const reloadTls = async (): Promise<boolean> => {
    if (tlsFiles === undefined) return false;
    try {
      const material = await loadTlsMaterial(tlsFiles);
      (app.server as unknown as https.Server).setSecureContext(serverTlsOptions(material));
      app.log.info(
        { certificate: material.summary },
        `TLS certificate reloaded: ${material.summary.subject}, valid to ${material.summary.validTo}`,
      );
      return true;
    } catch (error) {
      app.log.error({ err: error }, `TLS reload failed, the previous certificate stays: ${(error as Error).message}`);
      return false;
    }
  };
  if (options.handleSignals === true) {
    if (tlsFiles !== undefined) process.on('SIGHUP', () => void reloadTls());
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
  app.log.info(
    { url: address, media: config.media },
    `Trickle origin listening on ${address} (player: ${address}/player/)`,
  );
  if (admin !== undefined)
    app.log.info({ url: admin.url }, `admin listener on ${admin.url} (/metrics, /api/flows, /healthz, /readyz)`);
  else if (!opsOnPublicListener(config)) {
    app.log.warn(
      { host: config.host },
      `/metrics and /api/flows (viewers' addresses) are not served on ${address}, which ` +
        `others can reach: give an admin listener for them (--admin-port <port>, on ` +
        `127.0.0.1 unless --admin-host), or --public-ops for a lab or a demo`,
    );
  }
  return { app, url: address, adminUrl: admin?.url, indexed: app.trickle.indexed, close, reloadTls };
}

/** The admin listener: the operator's routes on their own port. */
async function startAdmin(
  app: FastifyInstance,
  admin: NonNullable<OriginConfig['admin']>,
): Promise<{ server: FastifyInstance; url: string }> {
  const server = Fastify({ loggerInstance: app.log.child({ listener: 'admin' }) });
  server.setNotFoundHandler((request, reply) =>
    reply
      .code(404)
      .send(errorBody('ORIGIN_ERR_NOT_FOUND', `no admin route for ${request.method} ${request.url.split('?')[0]}`)),
  );
  registerOpsRoutes(server, app.trickle.ops, 'all');
  return { server, url: await server.listen({ port: admin.port, host: admin.host }) };
}
