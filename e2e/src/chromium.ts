/**
 * Launching Debian's Chromium through playwright-core (Playwright's own browser download is not
 * available on these machines). Flags from the platform notes: no background networking (the
 * machine's network is closed), autoplay without a gesture, a fresh profile per launch.
 */
import { createHash, X509Certificate } from 'node:crypto';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BrowserContext } from 'playwright-core';
import { E2eError } from './errors.js';

export const defaultChromiumPath = process.env.TRICKLE_CHROMIUM ?? '/usr/bin/chromium';

/**
 * What the instrumented player page needs of any Chromium it runs in (the fixture adds them to the user's launch
 * options).
 */
export const playerPageArgs: readonly string[] = [
  '--autoplay-policy=no-user-gesture-required',
  // The harness's player page is routed (it has no address) and the media's origin is often a
  // private or loopback one: Local Network Access would block every media request, which no real
  // CDN user meets.
  '--disable-features=LocalNetworkAccessChecks,BlockInsecurePrivateNetworkRequests,PrivateNetworkAccessSendPreflights',
];

export const chromiumArgs: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  ...playerPageArgs,
];

export interface LaunchedChromium {
  readonly context: BrowserContext;
  close(): Promise<void>;
}

export interface LaunchOptions {
  readonly executablePath?: string;
  readonly headless?: boolean;
  /**
   * A network namespace to run the browser in (the lab's player side), so every byte crosses the emulated link. Needs
   * root.
   */
  readonly namespace?: string;
  /**
   * PEM files of certificates (a test CA) whose keys Chromium trusts in a served chain, by their
   * SPKI hashes (--ignore-certificate-errors-spki-list): HTTPS tests without a system trust store.
   */
  readonly trustCertificates?: readonly string[];
}

/** Base64 SHA-256 of each certificate's SubjectPublicKeyInfo, as Chromium's SPKI list wants. */
async function spkiHashes(files: readonly string[]): Promise<string[]> {
  const hashes: string[] = [];
  for (const file of files) {
    const pem = await readFile(file, 'utf8').catch((error: unknown) => {
      throw new E2eError(
        'E2E_ERR_BROWSER_LAUNCH',
        `cannot read the certificate to trust ${file}: ${(error as Error).message}`,
      );
    });
    for (const block of pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []) {
      const spki = new X509Certificate(block).publicKey.export({ type: 'spki', format: 'der' });
      hashes.push(createHash('sha256').update(spki).digest('base64'));
    }
  }
  return hashes;
}

/**
 * A one-line launcher that enters the namespace and execs Chromium: Playwright talks to the browser
 * over inherited pipes (fds 3 and 4), which survive `ip netns exec`.
 */
async function namespaceLauncher(dir: string, namespace: string, executablePath: string): Promise<string> {
  if (!/^[A-Za-z0-9_.-]+$/.test(namespace))
    throw new E2eError('E2E_ERR_BROWSER_LAUNCH', `not a network namespace name: "${namespace}"`);
  const launcher = join(dir, 'chromium-in-netns');
  await writeFile(
    launcher,
    `#!/bin/sh\nexec ip netns exec '${namespace}' '${executablePath.replaceAll("'", "'\\''")}' "$@"\n`,
  );
  await chmod(launcher, 0o755);
  return launcher;
}

export async function launchChromium(options: LaunchOptions = {}): Promise<LaunchedChromium> {
  const executablePath = options.executablePath ?? defaultChromiumPath;
  const workDir = await mkdtemp(join(tmpdir(), 'trickle-chromium-'));
  const profileDir = join(workDir, 'profile');
  let context: BrowserContext;
  try {
    const launcher =
      options.namespace === undefined
        ? executablePath
        : await namespaceLauncher(workDir, options.namespace, executablePath);
    // Loaded here, not at the top: every `trickle` command imports this package, few launch a browser.
    const { chromium } = await import('playwright-core');
    const trusted = await spkiHashes(options.trustCertificates ?? []);
    const trustArgs = trusted.length === 0 ? [] : [`--ignore-certificate-errors-spki-list=${trusted.join(',')}`];
    context = await chromium.launchPersistentContext(profileDir, {
      executablePath: launcher,
      headless: options.headless ?? true,
      args: [...chromiumArgs, ...trustArgs],
    });
  } catch (error) {
    await rm(workDir, { recursive: true, force: true });
    if (error instanceof E2eError) throw error;
    throw new E2eError(
      'E2E_ERR_BROWSER_LAUNCH',
      `cannot start Chromium at ${executablePath} (Debian: apt-get install chromium; or ` +
        `set TRICKLE_CHROMIUM): ${(error as Error).message.split('\n')[0]}`,
      { cause: error },
    );
  }
  return {
    context,
    async close() {
      await context.close().catch(() => undefined);
      await rm(workDir, { recursive: true, force: true });
    },
  };
}
