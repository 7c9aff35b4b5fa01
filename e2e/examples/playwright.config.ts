/**
 * Runnable example of the QoE fixture (`npx playwright test -c e2e/examples`): Playwright starts a
 * Trickle origin on the demo media as its web server, and the spec plays it in Debian Chromium.
 * In your own repository, point QOE_URL at your manifest and drop the webServer block.
 */
import { defineConfig } from '@playwright/test';

const media = process.env.TRICKLE_TEST_MEDIA ?? '../../media';

export default defineConfig({
  testDir: '.',
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  webServer: process.env.QOE_URL === undefined
    ? { command: `node ../../bin/trickle.js serve --media ${media} --host 127.0.0.1 --port 8093 --log-level warn`, url: 'http://127.0.0.1:8093/healthz', reuseExistingServer: false, timeout: 60_000 }
    : undefined,
});
