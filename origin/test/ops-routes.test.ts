/**
 * The operator's routes: /readyz says ready only with an asset indexed and the clamp backend config
 * demands (and why not otherwise); /healthz shows no paths; an admin listener takes /metrics and
 * /api/flows off the public port; a listener others reach serves them only when config says so.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config/config.js';
import { isLoopbackHost, opsOnPublicListener } from '../src/plugin.js';
import { startOrigin, type RunningOrigin } from '../src/server.js';
import { copyDemo } from './helpers/media.js';

async function readyz(
  media: string,
  flags: Record<string, unknown>,
): Promise<{
  status: number;
  body: { status: string; reasons: string[]; assets: { ready: number; broken: string[] } | null };
}> {
  const app = await buildApp({
    config: await loadConfig({ flags: { media, logLevel: 'silent', ...flags } }),
    logger: false,
  });
  try {
    await app.ready();
    const early = await app.inject({ url: '/readyz' });
    // Indexing runs in the background: until it is over the origin says so.
    if (early.statusCode !== 200)
      assert.ok(
        early.json<{ reasons: string[] }>().reasons.some((r) => r.startsWith('the media index is being built')),
        early.body,
      );
    await app.trickle.indexed;
    const response = await app.inject({ url: '/readyz' });
    return { status: response.statusCode, body: response.json() };
  } finally {
    await app.close();
  }
}

describe('operator routes', () => {
  let media: string;
  let empty: string;

  before(async () => {
    media = await copyDemo();
    empty = await mkdtemp(join(tmpdir(), 'trickle-empty-'));
  });

  after(async () => {
    await rm(media, { recursive: true, force: true });
    await rm(empty, { recursive: true, force: true });
  });

  it('/readyz: ready with an indexed asset and the clamp backend config demands', async () => {
    const ready = await readyz(media, { delivery: { clamp: { backend: 'none' } } });
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.reasons, []);
    assert.deepEqual(ready.body.assets, { ready: 1, broken: [] });
  });

  it('/readyz: 503 with the reasons when no asset is ready or the clamp fell back', async () => {
    const noAssets = await readyz(empty, { delivery: { clamp: { backend: 'none' } } });
    assert.equal(noAssets.status, 503);
    assert.deepEqual(noAssets.body.reasons, ['no assets in the media root']);
    // buildApp alone attaches no clamp: trickle wants bpf and has none.
    const fellBack = await readyz(media, {});
    assert.equal(fellBack.status, 503);
    assert.match(fellBack.body.reasons.join('; '), /the clamp backend is none, config demands bpf/);
  });

  it('/healthz answers without the media path', async () => {
    const app = await buildApp({ config: await loadConfig({ flags: { media, logLevel: 'silent' } }), logger: false });
    const response = await app.inject({ url: '/healthz' });
    await app.close();
    assert.equal(response.statusCode, 200);
    assert.equal(response.json<{ status: string }>().status, 'ok');
    assert.ok(!response.body.includes(media), 'no path in /healthz');
  });

  describe('with an admin listener', () => {
    let origin: RunningOrigin;

    before(async () => {
      const config = await loadConfig({
        flags: { media, port: 0, logLevel: 'silent', admin: { port: 0 }, delivery: { clamp: { backend: 'none' } } },
      });
      origin = await startOrigin(config);
      await origin.indexed;
    });

    after(async () => origin?.close());

    it('serves /metrics and /api/flows there only; the probes on both', async () => {
      assert.ok(origin.adminUrl !== undefined && origin.adminUrl !== origin.url);
      for (const path of ['/metrics', '/api/flows']) {
        assert.equal((await fetch(`${origin.adminUrl}${path}`)).status, 200, `admin ${path}`);
        const publicResponse = await fetch(`${origin.url}${path}`);
        assert.equal(publicResponse.status, 404, `public ${path}`);
        assert.equal(((await publicResponse.json()) as { error: { code: string } }).error.code, 'ORIGIN_ERR_NOT_FOUND');
      }
      for (const base of [origin.url, origin.adminUrl]) {
        assert.equal((await fetch(`${base}/healthz`)).status, 200);
        assert.equal((await fetch(`${base}/readyz`)).status, 200);
      }
      // Responses on the public port are counted in the admin's metrics.
      await (await fetch(`${origin.url}/media/demo/manifest.mpd`)).arrayBuffer();
      assert.match(
        await (await fetch(`${origin.adminUrl}/metrics`)).text(),
        /trickle_http_request_duration_seconds_count\{[^}]*route="\/media\/:asset\/\*"/,
      );
    });
  });

  describe('on an address others reach, without an admin listener', () => {
    it('knows loopback from the rest', () => {
      for (const host of ['127.0.0.1', '127.8.0.3', '::1', 'localhost']) assert.equal(isLoopbackHost(host), true, host);
      for (const host of ['0.0.0.0', '::', '10.73.0.1', 'origin.example', '128.0.0.1'])
        assert.equal(isLoopbackHost(host), false, host);
      assert.equal(opsOnPublicListener({ host: '0.0.0.0', publicOps: false, admin: undefined }), false);
      assert.equal(opsOnPublicListener({ host: '0.0.0.0', publicOps: true, admin: undefined }), true);
      assert.equal(opsOnPublicListener({ host: '127.0.0.1', publicOps: false, admin: undefined }), true);
      assert.equal(
        opsOnPublicListener({ host: '127.0.0.1', publicOps: true, admin: { port: 9464, host: '127.0.0.1' } }),
        false,
      );
    });

    for (const publicOps of [false, true]) {
      it(
        publicOps
          ? 'serves /metrics and /api/flows with publicOps (a lab, a demo)'
          : "serves only the probes: viewers' addresses stay private by default",
        async () => {
          const config = await loadConfig({
            flags: {
              media,
              host: '0.0.0.0',
              port: 0,
              publicOps,
              logLevel: 'silent',
              delivery: { clamp: { backend: 'none' } },
            },
          });
          const origin = await startOrigin(config);
          try {
            await origin.indexed;
            const base = origin.url.replace('0.0.0.0', '127.0.0.1');
            for (const path of ['/metrics', '/api/flows'])
              assert.equal((await fetch(`${base}${path}`)).status, publicOps ? 200 : 404, path);
            assert.equal((await fetch(`${base}/healthz`)).status, 200);
            assert.equal((await fetch(`${base}/media/demo/manifest.mpd`)).status, 200);
          } finally {
            await origin.close();
          }
        },
      );
    }
  });
});
