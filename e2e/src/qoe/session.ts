/**
 * One QoE session: a fresh Chromium (own profile, so no cache or connection is shared with another
 * session), optionally inside a network namespace (the lab's player side), the instrumented player
 * page on the media URL, played at 1x until the media ends, the duration is reached, or the player
 * fails. Only a harness failure (the browser or page died, the page never came up) throws
 * `E2E_ERR_HARNESS`; everything the player does, including errors and never starting, is a result.
 */
import type { BrowserContext } from 'playwright-core';
import { E2eError } from '../errors.js';
import { launchChromium } from '../chromium.js';
import { playerPageUrl, routePlayerPage, type PageQuery } from './player-page.js';
import { sessionRecord, type PlayerEvent, type PlayerSnapshot, type SessionRecord } from './session-record.js';

export interface SessionOptions extends PageQuery {
  /** Session length in seconds of wall time from the player's start; absent: to the end of the media. */
  readonly seconds?: number | undefined;
  /** A network namespace to run the browser in (root). */
  readonly namespace?: string | undefined;
  readonly executablePath?: string | undefined;
  /** A session that has not ended after this long ends as `timeout` (default: seconds + 60 s, or 10 min). */
  readonly timeoutMs?: number | undefined;
  /** Called with each player event as the page reports it (progress, live views). */
  readonly onEvent?: ((event: PlayerEvent) => void) | undefined;
}

const pageUpTimeoutMs = 20_000;
const pollMs = 250;

interface PageState {
  readonly snapshot: PlayerSnapshot | null;
  readonly sinceStartMs: number;
}

export async function playSession(index: number, options: SessionOptions, attempts = 1): Promise<SessionRecord> {
  const chromium = await launchChromium({ executablePath: options.executablePath, namespace: options.namespace });
  try {
    return await playInContext(chromium.context, index, options, attempts);
  } finally {
    await chromium.close();
  }
}

/**
 * One session in a browser context the caller owns and closes (a Playwright Test fixture's, with
 * the user's launch options, trace and video): one page with the instrumented player.
 */
export async function playInContext(
  context: BrowserContext,
  index: number,
  options: Omit<SessionOptions, 'namespace' | 'executablePath'>,
  attempts = 1,
): Promise<SessionRecord> {
  await routePlayerPage(context);
  const page = await context.newPage();
  try {
    let crashed: string | undefined;
    page.on('crash', () => (crashed = 'the page crashed'));
    context.on('close', () => (crashed ??= 'the browser closed'));
    const pageErrors: string[] = [];
    page.on('pageerror', (error) => pageErrors.push(`page error: ${error.message}`));
    if (options.onEvent !== undefined) {
      const onEvent = options.onEvent;
      await page.exposeFunction('trickleEmit', (event: PlayerEvent) => onEvent(event));
    }
    try {
      await page.goto(playerPageUrl(options), { timeout: pageUpTimeoutMs });
    } catch (error) {
      throw new E2eError(
        'E2E_ERR_HARNESS',
        `the player page did not load: ${(error as Error).message.split('\n')[0]}`,
        { cause: error },
      );
    }
    const timeoutMs = options.timeoutMs ?? (options.seconds === undefined ? 600_000 : options.seconds * 1000 + 60_000);
    const read = (): Promise<PageState> =>
      page.evaluate(() => {
        const snapshot = (window as unknown as { trickle?: PlayerSnapshot & { loadedAtMs: number } }).trickle;
        return {
          snapshot: snapshot === undefined ? null : JSON.parse(JSON.stringify(snapshot)),
          sinceStartMs: snapshot === undefined ? 0 : performance.now() - snapshot.loadedAtMs,
        };
      });
    const loadedAt = Date.now();
    let state: PageState;
    let endReason: SessionRecord['endReason'];
    for (;;) {
      if (crashed !== undefined) throw new E2eError('E2E_ERR_HARNESS', `session ${index}: ${crashed}`);
      try {
        state = await read();
      } catch (error) {
        throw new E2eError(
          'E2E_ERR_HARNESS',
          `session ${index}: cannot read the player page: ${(error as Error).message.split('\n')[0]}`,
          { cause: error },
        );
      }
      const snapshot = state.snapshot;
      if (snapshot === null) {
        if (Date.now() - loadedAt > pageUpTimeoutMs)
          throw new E2eError(
            'E2E_ERR_HARNESS',
            `session ${index}: the player page never started a ` +
              `player${pageErrors.length > 0 ? ` (${pageErrors.join('; ')})` : ''}`,
          );
      } else if (snapshot.errors.length > 0) {
        endReason = 'error';
        break;
      } else if (snapshot.ended) {
        endReason = 'ended';
        break;
      } else if (options.seconds !== undefined && state.sinceStartMs >= options.seconds * 1000) {
        endReason = 'duration';
        break;
      } else if (state.sinceStartMs >= timeoutMs) {
        endReason = 'timeout';
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, pollMs));
    }
    const events =
      (await page.evaluate(() => (window as unknown as { trickleEvents: PlayerEvent[] }).trickleEvents)) ?? [];
    const snapshot = { ...state.snapshot!, errors: [...state.snapshot!.errors, ...pageErrors] };
    // An ended session ends at its end, not at the poll that saw it (up to pollMs and the parked second later).
    const endMs = endReason === 'ended' ? (state.snapshot!.endedAtMs ?? state.sinceStartMs) : state.sinceStartMs;
    return sessionRecord({ index, snapshot, events, sessionMs: Math.round(endMs), endReason, attempts });
  } finally {
    await page.close().catch(() => undefined);
  }
}
