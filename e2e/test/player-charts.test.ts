/**
 * The /player/ page's live charts in real Chromium, as someone watching the demo sees them: per
 * segment the rate it arrived at against its own bitrate and the rate the origin aimed at, the
 * buffer, the bitrate played, and the cwnd cap the kernel applied (as root the origin attaches the
 * BPF clamp, so the cap is the kernel's). A screenshot is kept in e2e/test-results/player-charts.png.
 */
import assert from 'node:assert/strict';
import { mkdir, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { attachClamp, createSocketControl, teardownClamp, type AttachedClamp } from '@trickle/native';
import { buildApp, loadConfig } from '@trickle/origin';
import { launchChromium, type LaunchedChromium } from '../src/chromium.js';
import { skipUnless, testMediaRoot } from './helpers/requirements.js';

const skip = skipUnless('the player page charts', { chromium: true });
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const pinDir = '/run/trickle/bpf-test-charts';
const cgroup = 'trickle-test-charts';
const screenshot = resolve(import.meta.dirname, '..', '..', 'test-results', 'player-charts.png');

interface ChartsState {
  updates: number;
  responses: number;
  records: number;
  clampPoints: number;
}

describe('/player/ live charts in Chromium', { skip }, () => {
  let app: FastifyInstance;
  let url: string;
  let chromium: LaunchedChromium;
  let clamp: AttachedClamp | undefined;

  before(async () => {
    // Root: the kernel's clamp (this test process joins the clamp's cgroup before listening).
    if (root) clamp = await attachClamp({ prefer: 'bpf', cgroupPath: cgroup, pinDir, join: true });
    const config = await loadConfig({ flags: { media: testMediaRoot(), port: 0, delivery: { startupSec: 4 } } });
    app = await buildApp({
      config,
      logger: false,
      ...(clamp === undefined ? {} : { socketControl: createSocketControl(clamp) }),
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    chromium = await launchChromium();
  });

  after(async () => {
    await chromium?.close();
    await app?.close();
    if (clamp !== undefined) await teardownClamp({ pinDir });
  });

  it("draws each segment's rates, the buffer, the bitrate played and the applied clamp, live", async () => {
    const page = await chromium.context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    await page.setViewportSize({ width: 1440, height: 1500 });
    await page.goto(`${url}/player/?asset=demo&player=dashjs`);
    await page.waitForFunction(
      () => {
        const charts = (window as unknown as { trickleCharts?: ChartsState }).trickleCharts;
        return (
          (window.document.getElementById('video') as HTMLVideoElement).currentTime >= 12 &&
          charts !== undefined &&
          charts.records >= 5 &&
          charts.updates >= 3
        );
      },
      undefined,
      { timeout: 60_000 },
    );
    const state = await page.evaluate(() => (window as unknown as { trickleCharts: ChartsState }).trickleCharts);
    const marks = async (selector: string) => page.locator(selector).count();
    assert.ok((await marks('#chart-rates svg .mark-symbol path')) >= state.records, `rates: ${JSON.stringify(state)}`);
    const legend = await page.locator('#chart-rates svg .role-legend-label text').allTextContents();
    assert.deepEqual(legend, ['arrived at (download rate)', "segment's own bitrate", 'rate the origin aimed at']);
    assert.ok((await marks('#chart-buffer svg .mark-area path')) > 0, 'buffer drawn');
    assert.ok((await marks('#chart-rendition svg .mark-symbol path')) > 0, 'bitrate played drawn');
    // Counted after the state was read: the charts may have been refreshed since, with more points.
    assert.ok(
      state.clampPoints > 0 && (await marks('#chart-clamp svg .mark-symbol path')) >= state.clampPoints,
      `clamp: ${JSON.stringify(state)}`,
    );
    if (clamp !== undefined)
      assert.deepEqual(await page.locator('#chart-clamp svg .role-legend-label text').allTextContents(), ['bpf']);
    assert.equal(await page.locator('#charts-note').textContent(), '');
    assert.deepEqual(errors, []);
    await mkdir(join(screenshot, '..'), { recursive: true });
    await page.screenshot({ path: screenshot, fullPage: true });
    assert.ok((await stat(screenshot)).size > 80_000, 'a screenshot with the charts in it');
    await page.close();
  });
});
