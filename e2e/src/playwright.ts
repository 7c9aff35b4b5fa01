/**
 * A Playwright Test fixture for QoE tests in your own repository (`@trickle/e2e/playwright`):
 *
 *   import { test, expect } from '@trickle/e2e/playwright';
 *   test('no stalls on dsl', async ({ qoeSession }) => {
 *     const s = await qoeSession.play(url, { player: 'dashjs', seconds: 60 });
 *     expect(s.rebuffers).toHaveLength(0);
 *   });
 *
 * Each `play` is one session in a fresh browser context (no cache or connection shared with
 * another session) with the instrumented player page, returning the session record (startup,
 * rebuffers, stalls, video freezes, bitrate timeline, switches, dropped frames, errors). The browser
 * is chosen by the `qoeBrowser` option:
 *  - `playwright` (default): launched as Playwright's own `browser` fixture launches it, from your
 *    config's `launchOptions`, `channel` and `headless`; contexts get your `contextOptions`, and
 *    your `trace` and `video` settings record them;
 *  - `chrome`: Google Chrome (`channel: 'chrome'`), with your `launchOptions` and `headless`;
 *  - `debian`: Debian's Chromium (TRICKLE_CHROMIUM, default /usr/bin/chromium), the same.
 * The page's own needs are added to the launch arguments (autoplay without a gesture; no Local
 * Network Access checks, which would block a routed page's requests to a private origin).
 * Before playing, the manifest's codecs are checked with MediaSource.isTypeSupported: Playwright's
 * own Chromium build decodes neither H.264 nor AAC, and says so in one line with the fix. Set
 * `qoeNamespace` to play from a lab's player namespace (root): the browser is then Debian's Chromium
 * started inside it. The test's timeout grows by each session's length, and every record is
 * attached to the test's report. `starvedStalls(record)` is a record's stalls the delivery made (the
 * player starved of media), leaving out those of a machine too busy to decode or append in time.
 */
import { test as base, expect, type Browser, type BrowserContext, type LaunchOptions } from '@playwright/test';
import { defaultChromiumPath, playerPageArgs } from './chromium.js';
import { E2eError } from './errors.js';
import { assertDecodable, declaredCodecs } from './qoe/codecs.js';
import { playInContext, playSession, type SessionOptions } from './qoe/session.js';
import type { SessionRecord } from './qoe/session-record.js';

export type PlayOptions = Omit<SessionOptions, 'url' | 'namespace' | 'executablePath'>;

export interface QoeSession {
  play(url: string, options?: PlayOptions): Promise<SessionRecord>;
  /** The sessions played so far in this test. */
  readonly sessions: readonly SessionRecord[];
}

export type QoeBrowser = 'playwright' | 'chrome' | 'debian';

export interface QoeOptions {
  /** Which browser plays (see above). */
  qoeBrowser: QoeBrowser;
  /** A network namespace to run the browser in, e.g. a lab's player side (`trickle lab up` prints it). */
  qoeNamespace: string | undefined;
}

/** Setting up and tearing down a browser, beyond the session itself. */
const sessionOverheadMs = 30_000;

interface Player {
  readonly browser: Browser;
  readonly name: string;
  close(): Promise<void>;
}

export const test = base.extend<QoeOptions & { qoeSession: QoeSession }>({
  qoeBrowser: ['playwright', { option: true }],
  qoeNamespace: [undefined, { option: true }],
  // The browser is launched as Playwright's own `browser` fixture launches it, but only when a
  // session needs it (a lab session starts its own inside the namespace).
  qoeSession: async (
    { qoeBrowser, qoeNamespace, playwright, browserName, channel, launchOptions, headless, contextOptions },
    use,
    testInfo,
  ) => {
    const sessions: SessionRecord[] = [];
    let player: Player | undefined;
    const choosePlayer = async (): Promise<Player> => {
      if (qoeBrowser !== 'playwright' && browserName !== 'chromium')
        throw new E2eError(
          'E2E_ERR_OPTIONS',
          `qoeBrowser '${qoeBrowser}' is a Chromium; this project's browserName is ${browserName}`,
        );
      const base: LaunchOptions = {
        ...launchOptions,
        headless,
        args: [...(launchOptions.args ?? []), ...playerPageArgs],
      };
      const chosen: LaunchOptions =
        qoeBrowser === 'playwright'
          ? { ...base, ...(channel === undefined ? {} : { channel }) }
          : qoeBrowser === 'chrome'
            ? { ...base, channel: 'chrome' }
            : { ...base, executablePath: defaultChromiumPath };
      const launched = await playwright[browserName].launch(chosen).catch((error: unknown) => {
        const fix =
          qoeBrowser === 'chrome'
            ? 'install Google Chrome (npx playwright install chrome)'
            : qoeBrowser === 'debian'
              ? `apt-get install chromium, or set TRICKLE_CHROMIUM (tried ${defaultChromiumPath})`
              : "npx playwright install, or set launchOptions.executablePath, or qoeBrowser: 'debian'";
        throw new E2eError(
          'E2E_ERR_BROWSER_LAUNCH',
          `qoeBrowser '${qoeBrowser}' did not start: ${fix}: ${(error as Error).message.split('\n')[0]}`,
          { cause: error },
        );
      });
      const label =
        qoeBrowser === 'chrome'
          ? 'Google Chrome'
          : qoeBrowser === 'debian'
            ? "Debian's Chromium"
            : `${browserName}${channel === undefined ? '' : ` (${channel})`}`;
      return { browser: launched, name: `${label} ${launched.version()}`, close: () => launched.close() };
    };
    await use({
      sessions,
      async play(url, options = {}) {
        testInfo.setTimeout(
          testInfo.timeout +
            (options.timeoutMs ?? (options.seconds === undefined ? 600_000 : options.seconds * 1000 + 60_000)) +
            sessionOverheadMs,
        );
        let record: SessionRecord;
        if (qoeNamespace !== undefined) {
          record = await playSession(sessions.length, { ...options, url, namespace: qoeNamespace });
        } else {
          player ??= await choosePlayer();
          const context: BrowserContext = await player.browser.newContext(contextOptions);
          try {
            // A manifest this process cannot fetch (auth, a network only the browser reaches) is not checked.
            const manifest = await fetch(url, { signal: AbortSignal.timeout(5000) }).then(
              (response) => (response.ok ? response.text() : undefined),
              () => undefined,
            );
            if (manifest !== undefined) {
              const probe = await context.newPage();
              await assertDecodable(probe, url, declaredCodecs(url, manifest), player.name).finally(() =>
                probe.close(),
              );
            }
            record = await playInContext(context, sessions.length, { ...options, url });
          } finally {
            await context.close();
          }
        }
        sessions.push(record);
        return record;
      },
    });
    await player?.close();
    for (const record of sessions)
      await testInfo.attach(`qoe-session-${record.index}.json`, {
        body: JSON.stringify(record, null, 2),
        contentType: 'application/json',
      });
  },
});

export { expect };
export { starvedStalls } from './qoe/play-to-end.js';
export type { SessionRecord };
