/**
 * A Playwright Test fixture for QoE tests in your own repository (`@trickle/e2e/playwright`):
 *
 *   import { test, expect } from '@trickle/e2e/playwright';
 *   test('no stalls on dsl', async ({ qoeSession }) => {
 *     const s = await qoeSession.play(url, { player: 'dashjs', seconds: 60 });
 *     expect(s.rebuffers).toHaveLength(0);
 *   });
 *
 * Each `play` is one session of the e2e harness: a fresh Debian Chromium (TRICKLE_CHROMIUM, default
 * /usr/bin/chromium) with the instrumented player page, returning the session record (startup,
 * rebuffers, stalls, video freezes, bitrate timeline, switches, dropped frames, errors). Set the
 * `qoeNamespace` option to play from a lab's player namespace (root). The test's timeout grows by
 * each session's length, and every record is attached to the test's report.
 */
import { test as base, expect } from '@playwright/test';
import { playSession, type SessionOptions } from './qoe/session.js';
import type { SessionRecord } from './qoe/session-record.js';

export type PlayOptions = Omit<SessionOptions, 'url' | 'namespace' | 'executablePath'>;

export interface QoeSession {
  play(url: string, options?: PlayOptions): Promise<SessionRecord>;
  /** The sessions played so far in this test. */
  readonly sessions: readonly SessionRecord[];
}

export interface QoeOptions {
  /** A network namespace to run the browser in, e.g. a lab's player side (`trickle lab up` prints it). */
  qoeNamespace: string | undefined;
}

/** Setting up and tearing down a browser, beyond the session itself. */
const sessionOverheadMs = 30_000;

export const test = base.extend<QoeOptions & { qoeSession: QoeSession }>({
  qoeNamespace: [undefined, { option: true }],
  qoeSession: async ({ qoeNamespace }, use, testInfo) => {
    const sessions: SessionRecord[] = [];
    await use({
      sessions,
      async play(url, options = {}) {
        testInfo.setTimeout(testInfo.timeout + (options.timeoutMs ?? (options.seconds === undefined ? 600_000 : options.seconds * 1000 + 60_000)) + sessionOverheadMs);
        const record = await playSession(sessions.length, { ...options, url, namespace: qoeNamespace });
        sessions.push(record);
        return record;
      },
    });
    for (const record of sessions) await testInfo.attach(`qoe-session-${record.index}.json`, { body: JSON.stringify(record, null, 2), contentType: 'application/json' });
  },
});

export { expect };
export type { SessionRecord };
