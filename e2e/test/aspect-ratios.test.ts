/**
 * `trickle package` of 16:9, 4:3, 9:16 and 1:1 sources (real ffmpeg) keeps each one's shape: the
 * default ladder's `<N>p` rungs are N pixels on the short side, so a 720x1280 phone video tops out
 * at 720x1280, not 406x720; dash.js and hls.js in Chromium play every one at the source's aspect.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { buildApp, loadConfig, packageInput, type Rung } from '@trickle/origin';
import { launchChromium, type LaunchedChromium } from '../src/chromium.js';
import { skipUnless } from './helpers/requirements.js';

const exec = promisify(execFile);
const skip = skipUnless('the aspect-ratio packaging tests', { chromium: true });

const sources = [
  { name: 'wide', width: 1280, height: 720, top: '1280x720' },
  { name: 'four-three', width: 960, height: 720, top: '960x720' },
  { name: 'portrait', width: 720, height: 1280, top: '720x1280' },
  { name: 'square', width: 720, height: 720, top: '720x720' },
] as const;

describe('packaging keeps portrait, square and landscape sources at their short-side rung sizes', { skip }, () => {
  let root: string;
  let app: FastifyInstance;
  let url: string;
  let chromium: LaunchedChromium;
  const ladders = new Map<string, Rung[]>();

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'trickle-aspect-'));
    for (const source of sources) {
      const input = join(root, `${source.name}.mp4`);
      await exec('ffmpeg', [
        '-hide_banner',
        '-loglevel',
        'error',
        '-f',
        'lavfi',
        '-i',
        `testsrc2=s=${source.width}x${source.height}:r=25:d=6`,
        '-f',
        'lavfi',
        '-i',
        'sine=f=300:d=6',
        '-c:v',
        'libx264',
        '-preset',
        'ultrafast',
        '-c:a',
        'aac',
        '-shortest',
        input,
      ]);
      const { rungs } = await packageInput({ input, outDir: join(root, 'media', source.name) });
      ladders.set(source.name, rungs);
      console.log(
        `# ${source.name} ${source.width}x${source.height}: ` +
          `${rungs.map((r) => `${r.width}x${r.height}@${Math.round(r.bitrateBps / 1000)}k`).join(', ')}`,
      );
    }
    app = await buildApp({
      config: await loadConfig({ flags: { media: join(root, 'media'), port: 0 } }),
      logger: false,
    });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    chromium = await launchChromium();
  });

  after(async () => {
    await chromium?.close();
    await app?.close();
    if (root !== undefined) await rm(root, { recursive: true, force: true });
  });

  it('sizes the default ladder by the short side, the source size on top', () => {
    for (const source of sources) {
      const rungs = ladders.get(source.name)!;
      assert.equal(`${rungs.at(-1)!.width}x${rungs.at(-1)!.height}`, source.top, source.name);
      assert.deepEqual(
        rungs.map((r) => Math.min(r.width, r.height)),
        [234, 360, 540, 720],
        `${source.name}: short sides`,
      );
      for (const rung of rungs)
        assert.ok(
          Math.abs(rung.width / rung.height - source.width / source.height) < 0.01,
          `${source.name}: ${rung.width}x${rung.height} keeps the aspect`,
        );
    }
  });

  for (const player of ['dashjs', 'hlsjs']) {
    it(`${player} plays every shape at its aspect ratio`, async () => {
      for (const source of sources) {
        const page = await chromium.context.newPage();
        const errors: string[] = [];
        page.on('pageerror', (error) => errors.push(error.message));
        try {
          await page.goto(`${url}/player/?asset=${source.name}&player=${player}`);
          await page.waitForFunction(
            () => (window.document.getElementById('video') as HTMLVideoElement).currentTime >= 2,
            undefined,
            { timeout: 30_000 },
          );
          const shown = await page.evaluate(() => {
            const video = window.document.getElementById('video') as HTMLVideoElement;
            return { width: video.videoWidth, height: video.videoHeight };
          });
          const rungs = ladders.get(source.name)!;
          assert.ok(
            rungs.some((r) => r.width === shown.width && r.height === shown.height),
            `${player} ${source.name}: plays ${shown.width}x${shown.height}, one of the ladder's sizes`,
          );
          assert.deepEqual(errors, []);
        } finally {
          await page.close();
        }
      }
    });
  }
});
