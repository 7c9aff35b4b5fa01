/**
 * Launching Debian's Chromium through playwright-core (Playwright's own browser download is not
 * available on these machines). Flags from the platform notes: no background networking (the
 * machine's network is closed), autoplay without a gesture, a fresh profile per launch.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { E2eError } from './errors.js';

export const defaultChromiumPath = process.env.TRICKLE_CHROMIUM ?? '/usr/bin/chromium';

export const chromiumArgs: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
  '--disable-dev-shm-usage',
];

export interface LaunchedChromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export async function launchChromium(options: { executablePath?: string; headless?: boolean } = {}): Promise<LaunchedChromium> {
  const executablePath = options.executablePath ?? defaultChromiumPath;
  const profileDir = await mkdtemp(join(tmpdir(), 'trickle-chromium-'));
  let context: BrowserContext;
  try {
    // Loaded here, not at the top: every `trickle` command imports this package, few launch a browser.
    const { chromium } = await import('playwright-core');
    context = await chromium.launchPersistentContext(profileDir, { executablePath, headless: options.headless ?? true, args: [...chromiumArgs] });
  } catch (error) {
    await rm(profileDir, { recursive: true, force: true });
    throw new E2eError('E2E_ERR_BROWSER_LAUNCH', `cannot start Chromium at ${executablePath} (Debian: apt-get install chromium; or set TRICKLE_CHROMIUM): ${(error as Error).message.split('\n')[0]}`, { cause: error });
  }
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(profileDir, { recursive: true, force: true });
    },
  };
}
