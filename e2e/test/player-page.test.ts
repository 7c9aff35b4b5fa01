/**
 * The origin's /player/ page in real (Debian) Chromium: dash.js, hls.js and a plain <video> each
 * start playing the demo and keep playing; the plain <video> survives a seek (Range requests).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { buildApp, loadConfig } from '@trickle/origin';
import { launchChromium, type LaunchedChromium } from '../src/chromium.js';
import { skipUnless } from './helpers/requirements.js';

const mediaRoot = process.env.TRICKLE_TEST_MEDIA;
const skip = skipUnless('the player page tests', { chromium: true, media: true });

interface Snapshot {
  startupMs: number | null;
  rebuffers: unknown[];
  errors: string[];
}

describe('/player/ in Chromium', { skip }, () => {
  let app: FastifyInstance;
  let url: string;
  let chromium: LaunchedChromium;
  const ranges: string[] = [];

  before(async () => {
    app = await buildApp({ config: await loadConfig({ flags: { media: mediaRoot, port: 0 } }), logger: false });
    app.addHook('onRequest', async (request) => {
      if (request.headers.range !== undefined && request.url.endsWith('progressive.mp4')) ranges.push(request.headers.range);
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    chromium = await launchChromium();
  });

  after(async () => {
    await chromium?.close();
    await app?.close();
  });

  async function playFor(player: string, seconds: number) {
    const page = await chromium.context.newPage();
    const consoleErrors: string[] = [];
    page.on('pageerror', (error) => consoleErrors.push(error.message));
    await page.goto(`${url}/player/?asset=demo&player=${player}`);
    await page.waitForFunction(() => (window as unknown as { trickle?: Snapshot }).trickle?.startupMs != null, undefined, { timeout: 20_000 });
    await page.waitForFunction((s) => (window.document.getElementById('video') as HTMLVideoElement).currentTime >= s, seconds, { timeout: 30_000 });
    const snapshot = await page.evaluate(() => (window as unknown as { trickle: Snapshot }).trickle);
    return { page, snapshot, consoleErrors };
  }

  for (const player of ['dashjs', 'hlsjs']) {
    it(`${player} starts and plays the demo`, async () => {
      const { page, snapshot, consoleErrors } = await playFor(player, 4);
      assert.deepEqual(snapshot.errors, []);
      assert.deepEqual(consoleErrors, []);
      assert.ok(snapshot.startupMs! > 0 && snapshot.startupMs! < 10_000, `startup ${snapshot.startupMs} ms`);
      const frames = await page.evaluate(() => (window.document.getElementById('video') as HTMLVideoElement).getVideoPlaybackQuality().totalVideoFrames);
      assert.ok(frames > 60, `${frames} frames decoded`);
      await page.close();
    });
  }

  it('a plain <video> plays progressive.mp4 and continues after a seek', async () => {
    const { page, snapshot } = await playFor('native', 2);
    assert.deepEqual(snapshot.errors, []);
    await page.evaluate(() => {
      (window.document.getElementById('video') as HTMLVideoElement).currentTime = 15;
    });
    await page.waitForFunction(() => (window.document.getElementById('video') as HTMLVideoElement).currentTime >= 16.5, undefined, { timeout: 20_000 });
    assert.ok(ranges.length > 0, 'the browser fetched the MP4 with Range requests');
    await page.close();
  });
});
