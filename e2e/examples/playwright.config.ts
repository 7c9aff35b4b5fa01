/**
 * Runnable example of the QoE fixture (`npx playwright test -c e2e/examples`): Playwright starts a
 * Trickle origin on the demo media as its web server (origin.mjs), and the spec plays it. The
 * fixture launches the browser from this config as Playwright's own `browser` fixture would
 * (`launchOptions`, `channel`, `headless`), and records `trace` and `video` as configured.
 * In your own repository, point QOE_URL at your manifest and drop the webServer block.
 *  - Playwright's own Chromium has no H.264/AAC: use `channel: 'chrome'` (Google Chrome), or
 *    Debian's Chromium as here (`launchOptions.executablePath`, or `qoeBrowser: 'debian'`).
 *  - QOE_NAMESPACE plays from a lab's player namespace (root; `trickle lab up` prints it).
 */
import { defineConfig } from '@playwright/test';
import type { QoeOptions } from '@trickle/e2e/playwright';

export default defineConfig<QoeOptions>({
  testDir: '.',
  timeout: 60_000,
  workers: 1,
  reporter: [['list']],
  use: {
    launchOptions: { executablePath: process.env.TRICKLE_CHROMIUM ?? '/usr/bin/chromium' },
    qoeNamespace: process.env.QOE_NAMESPACE,
    trace: 'retain-on-failure',
  },
  webServer:
    process.env.QOE_URL === undefined
      ? {
          command: 'node origin.mjs',
          url: 'http://127.0.0.1:8093/healthz',
          reuseExistingServer: false,
          timeout: 60_000,
        }
      : undefined,
});
