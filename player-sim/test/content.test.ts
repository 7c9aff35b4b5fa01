/** Loading content from the demo fixture's MPD and HLS files, and from a live origin's index. */
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp, loadConfig } from '@trickle/origin';
import { aggregate, constantTrace, loadContent, loopContent, runLive, runModel, type Content } from '../src/index.js';
import { testMediaRoot } from './helpers/media.js';

const mediaRoot = testMediaRoot();

function checkDemo(content: Content): void {
  assert.deepEqual(
    content.renditions.map((r) => r.heightPx),
    [234, 360, 540, 720],
  );
  assert.ok(Math.abs(content.durationSec - 24) < 0.1, `duration ${content.durationSec}`);
  for (const rendition of content.renditions) {
    assert.equal(rendition.segments.length, 12);
    assert.ok(rendition.segments.every((s) => s.sizeBytes > 0 && s.audio !== undefined && s.audio.sizeBytes > 0));
  }
}

describe('content', () => {
  let app: FastifyInstance;
  let url: string;

  before(async () => {
    app = await buildApp({ config: await loadConfig({ flags: { media: mediaRoot, port: 0 } }), logger: false });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  after(() => app.close());

  it('reads a local MPD with real segment sizes', async () => {
    const content = await loadContent(join(mediaRoot, 'demo', 'manifest.mpd'));
    checkDemo(content);
    const first = content.renditions[3]!.segments[0]!;
    assert.equal(first.sizeBytes, (await stat(first.url)).size);
  });

  it('reads a local HLS master with real segment sizes', async () => {
    const content = await loadContent(join(mediaRoot, 'demo', 'master.m3u8'));
    checkDemo(content);
  });

  it('reads a manifest URL on a Trickle origin through its media index', async () => {
    const content = await loadContent(`${url}/media/demo/manifest.mpd`);
    checkDemo(content);
    assert.ok(content.renditions[0]!.segments[0]!.url.startsWith(`${url}/media/demo/chunk-`));
    const local = await loadContent(join(mediaRoot, 'demo', 'manifest.mpd'));
    assert.deepEqual(
      content.renditions.map((r) => r.segments.map((s) => s.sizeBytes)),
      local.renditions.map((r) => r.segments.map((s) => s.sizeBytes)),
    );
  });

  it('rejects what is not a manifest', async () => {
    await assert.rejects(
      loadContent(join(mediaRoot, 'demo', 'init-0.m4s')),
      (e: unknown) => (e as { code?: string }).code === 'SIM_ERR_MANIFEST',
    );
    await assert.rejects(
      loadContent(`${url}/api/assets/nope`),
      (e: unknown) => (e as { code?: string }).code === 'SIM_ERR_MANIFEST',
    );
  });

  it('live mode: players fetch real segments from the origin; a fast local link gives 0% rebuffering', async () => {
    const content = await loadContent(`${url}/media/demo/manifest.mpd`);
    const results = await runLive({
      content,
      abr: 'throughput',
      sessions: 4,
      concurrency: 4,
      cmcd: true,
      settings: { sessionSeconds: 8, maxBufferSec: 6, startupThresholdSec: 2, resumeThresholdSec: 2 },
    });
    const agg = aggregate(results);
    assert.equal(agg.sessions, 4);
    assert.equal(agg.rebufferChance, 0);
    // Real time: a session ends once its 8 s are up and its fetch in flight returns, never before;
    // how fast players start is the benchmarks' (printed here, not judged), and the upper bound only
    // catches a session that does not end (this VM's host stalls everything for 10-20 ms at times, never seconds).
    console.log(
      `# live mode, 4 sessions on loopback: startup ` +
        `p95 ${agg.startupDelayMs.p95.toFixed(0)} ms, ` +
        `sessions ${results.map((r) => r.sessionSec.toFixed(2)).join(', ')} s`,
    );
    assert.ok(
      results.every((r) => r.bytesDownloaded > 0 && r.sessionSec >= 8 - 1e-3 && r.sessionSec <= 13),
      JSON.stringify(results.map((r) => r.sessionSec)),
    );
  });

  it('model mode on the same content: a fast constant link gives 0% rebuffering too', async () => {
    const content = loopContent(await loadContent(join(mediaRoot, 'demo', 'manifest.mpd')), 600);
    const agg = aggregate(
      await runModel({ content, traces: [constantTrace(50e6)], abr: 'bola', policy: 'trickle', sessions: 10, seed: 1 }),
    );
    assert.equal(agg.rebufferChance, 0);
    assert.ok(agg.meanBitrateBps > 2e6);
  });
});
