/**
 * One session of the origin's player page in a browser context, played to its end (or its first
 * error), with every media body the browser got checked byte for byte against its file: a pacing
 * origin must not change a byte, and a decode error then says whether the bytes or the decoder
 * were at fault. On an error the media requests in order and the page's events are printed.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { BrowserContext } from 'playwright-core';

export interface PlayedSession {
  startupMs: number | null;
  rebuffers: {
    startMs: number;
    durationMs: number | null;
    confirmedByWatchdog: boolean;
    bufferAheadSec: number | null;
  }[];
  stalls: unknown[];
  /** Time advanced but no frame was decoded for 500 ms or more: the decoder starved of CPU, not of media. */
  videoFreezes: { startMs: number; durationMs: number | null }[];
  ended: boolean;
  errors: string[];
  switches: unknown[];
  /** Media bodies that differ from their file, and how many were checked. */
  corrupt: string[];
  bodiesChecked: number;
}

/** Below this much media ahead, a confirmed stall is the delivery's: the player had nothing to play. */
const starvedBelowSec = 0.5;

/**
 * A starved stall that begins during a video freeze or this soon after its end follows the machine:
 * the page's own code (the player's requests and appends) starved of CPU with its decoder.
 */
const afterFreezeMs = 2_000;

type Rebuffer = Readonly<PlayedSession['rebuffers'][number]>;

/** What judging a session's stalls reads: a played session's, or a Playwright session record's. */
interface StallEvidence<T extends Rebuffer> {
  readonly rebuffers: readonly T[];
  readonly videoFreezes: readonly Readonly<PlayedSession['videoFreezes'][number]>[];
}

/** A confirmed stall the delivery made: starved of media, and not right after a video freeze. */
const deliveryMade = (session: Pick<StallEvidence<Rebuffer>, 'videoFreezes'>, rebuffer: Rebuffer) =>
  (rebuffer.bufferAheadSec ?? 0) < starvedBelowSec &&
  !session.videoFreezes.some(
    (freeze) =>
      rebuffer.startMs >= freeze.startMs &&
      (freeze.durationMs === null || rebuffer.startMs <= freeze.startMs + freeze.durationMs + afterFreezeMs),
  );

/**
 * The session's stalls the delivery made: rebuffers the watchdog confirmed with less than half a
 * second buffered ahead, not following a video freeze. One with more ahead is the decoder's or
 * renderer's, and one right after a freeze the machine's (a CPU starved by the tests beside it):
 * those `machineStalls` returns, for the caller to print rather than blame on pacing.
 */
export function starvedStalls<T extends Rebuffer>(session: StallEvidence<T>): T[] {
  return session.rebuffers.filter((rebuffer) => rebuffer.confirmedByWatchdog && deliveryMade(session, rebuffer));
}

/** Confirmed stalls the machine made: with media buffered ahead, or starved right after a video freeze. */
export function machineStalls<T extends Rebuffer>(session: StallEvidence<T>): T[] {
  return session.rebuffers.filter((rebuffer) => rebuffer.confirmedByWatchdog && !deliveryMade(session, rebuffer));
}

async function checkBody(
  assetDir: string,
  asset: string,
  url: string,
  status: number,
  contentRange: string | undefined,
  body: Buffer,
  aliases: ReadonlyMap<string, string>,
): Promise<string | undefined> {
  const name = decodeURIComponent(new URL(url).pathname.slice(`/media/${asset}/`.length));
  const file = await readFile(join(assetDir, aliases.get(name) ?? name));
  const range = /^bytes (\d+)-(\d+)\//.exec(contentRange ?? '');
  const expected = status === 206 && range !== null ? file.subarray(Number(range[1]), Number(range[2]) + 1) : file;
  const digest = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  return digest(body) === digest(expected)
    ? undefined
    : `${name}: ${body.length} B received differ from the file's ${expected.length} B ` +
        `(sha256 ${digest(body)} vs ${digest(expected)})`;
}

/**
 * Plays `${base}/player/?asset=${asset}&${query}`; `assetDir` holds the asset's files (`aliases`: the
 * names the origin serves from another file, as its index says).
 */
export async function playToEnd(
  context: BrowserContext,
  base: string,
  asset: string,
  assetDir: string,
  query: string,
  aliases: ReadonlyMap<string, string> = new Map(),
): Promise<PlayedSession> {
  const page = await context.newPage();
  const pageErrors: string[] = [];
  const bodyChecks: Promise<string | undefined>[] = [];
  const requests: string[] = [];
  const startedMs = Date.now();
  const isMedia = (url: string) => new URL(url).pathname.startsWith(`/media/${asset}/`);
  const name = (url: string) => basename(new URL(url).pathname);
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('request', (request) => {
    if (isMedia(request.url())) requests.push(`${Date.now() - startedMs} ms ${name(request.url())}`);
  });
  page.on('requestfinished', (request) => {
    if (isMedia(request.url())) requests.push(`${Date.now() - startedMs} ms ${name(request.url())} done`);
  });
  page.on('requestfailed', (request) =>
    requests.push(`${Date.now() - startedMs} ms ${name(request.url())} failed: ${request.failure()?.errorText}`),
  );
  page.on('response', (response) => {
    if (
      !isMedia(response.url()) ||
      !/\.(m4s|mp4|ts|m4a|cmfv|cmfa)$/.test(new URL(response.url()).pathname) ||
      response.status() >= 300
    )
      return;
    // An abandoned request has no body to check.
    bodyChecks.push(
      response.body().then(
        (body) =>
          checkBody(
            assetDir,
            asset,
            response.url(),
            response.status(),
            response.headers()['content-range'],
            body,
            aliases,
          ),
        () => undefined,
      ),
    );
  });
  try {
    await page.goto(`${base}/player/?asset=${asset}&${query}`);
    // A session that neither ends nor fails in time is this session's error, with its story, not
    // a timeout that cancels every other session's test.
    const ended = await page
      .waitForFunction(
        () => {
          const snapshot = (window as unknown as { trickle?: { ended: boolean; errors: string[] } }).trickle;
          return snapshot !== undefined && (snapshot.ended || snapshot.errors.length > 0);
        },
        undefined,
        { timeout: 90_000, polling: 500 },
      )
      .then(
        () => true,
        () => false,
      );
    const snapshot = await page.evaluate(
      () =>
        (
          window as unknown as {
            trickle: Omit<PlayedSession, 'corrupt' | 'bodiesChecked'> & { playedSeconds?: number };
          }
        ).trickle,
    );
    const corrupt = (
      await Promise.all(
        bodyChecks.map((check) =>
          Promise.race([check, new Promise<undefined>((done) => setTimeout(() => done(undefined), 5_000))]),
        ),
      )
    ).filter((problem) => problem !== undefined);
    const errors = [
      ...snapshot.errors,
      ...pageErrors,
      ...(ended ? [] : [`did not end within 90 s (played to ${snapshot.playedSeconds ?? '?'} s)`]),
    ];
    // A confirmed stall is a QoE outcome, not an error, but its story says whether the link, the
    // pacing or the player made it.
    if (errors.length > 0 || snapshot.rebuffers.some((rebuffer) => rebuffer.confirmedByWatchdog)) {
      const events = await page.evaluate(() => (window as unknown as { trickleEvents: unknown[] }).trickleEvents);
      console.log(
        `# ${query}: ${errors.join('; ') || `rebuffers ${JSON.stringify(snapshot.rebuffers)}`}\n# media requests: ${requests.join(' | ')}\n# ` +
          `page events: ${JSON.stringify(events)}`,
      );
    }
    return { ...snapshot, errors, corrupt, bodiesChecked: bodyChecks.length };
  } finally {
    await page.close();
  }
}
