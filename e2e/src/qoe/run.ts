/**
 * `trickle e2e`: K browser sessions against a URL or an asset, optionally across the lab's
 * emulated link, bounded by this machine's cores and memory; per-session records and QoE figures
 * written to a directory (JSON and an HTML summary).
 *
 * - `url`: the player plays it as given. Without a link the browser runs on this host's network;
 *   with a link it runs on the lab's player side, so the URL must be on the origin side.
 * - `asset`: the harness starts an origin (the same `startOrigin` as `trickle serve`) on the
 *   lab's origin side and plays the asset's manifest (DASH for dash.js, HLS for hls.js, the
 *   progressive MP4 for a plain <video>). The lab is required; without `link` it is `lan-1gbit`.
 */
import type { ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { availableParallelism, freemem } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { E2eError } from '../errors.js';
import { labDown, labUp, type Lab } from '../lab/lab.js';
import type { LinkSpec } from '../lab/link-spec.js';
import { profileLink } from '../lab/profiles.js';
import { linkKindOf } from './asset-path.js';
import type { PageQuery } from './player-page.js';
import { playSession, type SessionOptions } from './session.js';
import { aggregateSessions, type E2eRunResult, type PlayerKind, type SessionRecord } from './session-record.js';
import { writeSummaryHtml, type RunDescription } from './summary-html.js';

/** What the player page is asked for (see PageQuery) except the URL, which the run derives for `asset`. */
export interface E2eRunOptions extends Omit<PageQuery, 'url' | 'player'> {
  readonly url?: string | undefined;
  readonly asset?: string | undefined;
  /** The origin's media directory for `asset` (default ./media). */
  readonly media?: string | undefined;
  readonly player: PlayerKind;
  /** A lab profile name or a link specification. */
  readonly link?: string | LinkSpec | undefined;
  readonly sessions: number;
  readonly seconds?: number | undefined;
  readonly concurrency?: number | undefined;
  /** Harness retries per session (browser or page failures only). Default 2. */
  readonly retries?: number | undefined;
  readonly out?: string | undefined;
  /** The lab's name (default `e2e`); one run per name at a time. */
  readonly labName?: string | undefined;
  readonly onSession?: ((record: SessionRecord, done: number, total: number) => void) | undefined;
  readonly onRetry?: ((index: number, error: Error) => void) | undefined;
}

/** Software decoding in Chromium takes most of a core per session and a few hundred MB. */
const bytesPerSession = 500 * 1024 * 1024;
export const originPort = 8080;

export function defaultConcurrency(sessions: number): number {
  return Math.max(1, Math.min(sessions, availableParallelism(), Math.floor(freemem() / bytesPerSession)));
}

function validate(options: E2eRunOptions): void {
  if ((options.url === undefined) === (options.asset === undefined))
    throw new E2eError('E2E_ERR_OPTIONS', 'give exactly one of --url <mpd|m3u8|mp4> or --asset <name>');
  if (!Number.isInteger(options.sessions) || options.sessions < 1)
    throw new E2eError('E2E_ERR_OPTIONS', `--sessions must be a positive integer, not ${options.sessions}`);
  if (options.seconds !== undefined && !(options.seconds > 0))
    throw new E2eError('E2E_ERR_OPTIONS', `--seconds must be positive, not ${options.seconds}`);
  if (options.safetyFactor !== undefined && !(options.safetyFactor > 0 && options.safetyFactor <= 1))
    throw new E2eError('E2E_ERR_OPTIONS', `--safety-factor must be in (0, 1], not ${options.safetyFactor}`);
  if (options.startSec !== undefined && !(options.startSec >= 0))
    throw new E2eError('E2E_ERR_OPTIONS', `--start must be seconds >= 0, not ${options.startSec}`);
  if (options.concurrency !== undefined && (!Number.isInteger(options.concurrency) || options.concurrency < 1))
    throw new E2eError('E2E_ERR_OPTIONS', `--concurrency must be a positive integer, not ${options.concurrency}`);
  if (options.url !== undefined) {
    try {
      const parsed = new URL(options.url);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      throw new E2eError(
        'E2E_ERR_OPTIONS',
        `--url must be an http(s) URL of an MPD, M3U8 or MP4, not "${options.url}"`,
      );
    }
  }
}

/**
 * Starts an origin (`startOrigin`, as `trickle serve`) on the lab's origin side with `flags` as its
 * config's flag layer (host and port are the lab's); resolves once it answers /healthz from the player side.
 */
export async function startLabOrigin(lab: Lab, flags: Record<string, unknown>): Promise<ChildProcess> {
  const origin = lab.spawn(
    'origin',
    [
      process.execPath,
      fileURLToPath(new URL('./origin-main.js', import.meta.url)),
      JSON.stringify({ ...flags, host: lab.address('origin'), port: originPort, publicOps: true }),
    ],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const exited = new Promise<never>((_resolve, reject) =>
    origin.once('exit', (code) =>
      reject(new E2eError('E2E_ERR_LAB', `the origin in the lab exited with ${code} before it was ready`)),
    ),
  );
  await Promise.race([
    lab.waitForHttp(`http://${lab.address('origin')}:${originPort}/healthz`, { attempts: 30 }),
    exited,
  ]);
  return origin;
}

/**
 * Where the origin in the lab serves `asset` to `player`, from its catalog (the manifests it found, whatever they are
 * named).
 */
const linkNames = { dash: 'MPD', hls: 'HLS playlist', progressive: 'progressive MP4' } as const;

async function assetUrl(lab: Lab, base: string, asset: string, player: PlayerKind): Promise<string> {
  const { assets } = JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/assets`])) as {
    assets: {
      name: string;
      status: string;
      links: { dash: string | null; hls: string | null; progressive: string | null };
    }[];
  };
  const entry = assets.find((a) => a.name === asset);
  if (entry === undefined)
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `no asset "${asset}" in the media folder (it has: ${assets.map((a) => a.name).join(', ') || 'none'})`,
    );
  const kind = linkKindOf(player);
  const link = entry.links[kind];
  if (link === null)
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `asset "${asset}" has no ${linkNames[kind]} for ${player} (status ${entry.status})`,
    );
  return `${base}/${link}`;
}

export async function runE2e(options: E2eRunOptions): Promise<E2eRunResult> {
  validate(options);
  const needsLab = options.link !== undefined || options.asset !== undefined;
  const link = options.link ?? (needsLab ? 'lan-1gbit' : undefined);
  const linkName = link === undefined ? null : typeof link === 'string' ? link : 'custom';
  const spec = link === undefined ? undefined : typeof link === 'string' ? profileLink(link) : link;
  const labName = options.labName ?? 'e2e';
  let lab: Lab | undefined;
  let origin: ChildProcess | undefined;
  try {
    if (spec !== undefined) {
      await labDown(labName);
      lab = await labUp(labName, spec);
    }
    if (options.asset !== undefined) {
      origin = await startLabOrigin(lab!, {
        media: resolve(options.media ?? 'media'),
        logLevel: 'warn',
        delivery: { ...(options.policy === undefined ? {} : { policy: options.policy }) },
      });
    }
    const url =
      options.url ??
      (await assetUrl(lab!, `http://${lab!.address('origin')}:${originPort}`, options.asset!, options.player));
    const concurrency = options.concurrency ?? defaultConcurrency(options.sessions);
    const sessionOptions: SessionOptions = {
      url,
      player: options.player,
      seconds: options.seconds,
      namespace: lab?.namespace('player'),
      // An asset run's policy is the origin's default; a URL run asks for it per request.
      policy: options.asset === undefined ? options.policy : undefined,
      cmcd: options.cmcd,
      abr: options.abr,
      safetyFactor: options.safetyFactor,
      bufferSeconds: options.bufferSeconds,
      startSec: options.startSec,
      seek: options.seek,
    };
    const retries = options.retries ?? 2;
    const records: SessionRecord[] = new Array(options.sessions);
    let next = 0;
    let done = 0;
    const worker = async () => {
      while (next < options.sessions) {
        const index = next++;
        for (let attempt = 1; ; attempt++) {
          try {
            records[index] = await playSession(index, sessionOptions, attempt);
            break;
          } catch (error) {
            const harnessFailure =
              error instanceof E2eError &&
              (error.code === 'E2E_ERR_HARNESS' || error.code === 'E2E_ERR_BROWSER_LAUNCH');
            if (!harnessFailure || attempt > retries) throw error;
            options.onRetry?.(index, error);
          }
        }
        done++;
        options.onSession?.(records[index]!, done, options.sessions);
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, options.sessions) }, worker));
    const result: E2eRunResult = {
      aggregates: aggregateSessions(records),
      sessions: records,
      url,
      link: linkName,
      concurrency,
    };
    if (options.out !== undefined) await writeRun(options.out, options, result);
    return result;
  } finally {
    origin?.kill('SIGTERM');
    if (lab !== undefined) await labDown(labName);
  }
}

async function writeRun(out: string, options: E2eRunOptions, result: E2eRunResult): Promise<void> {
  await mkdir(join(out, 'sessions'), { recursive: true });
  for (const record of result.sessions)
    await writeFile(
      join(out, 'sessions', `${String(record.index).padStart(3, '0')}.json`),
      `${JSON.stringify(record, null, 2)}\n`,
    );
  const run: RunDescription & Record<string, unknown> = {
    date: new Date().toISOString(),
    url: result.url,
    player: options.player,
    policy: options.policy ?? null,
    link: result.link,
    sessions: options.sessions,
    seconds: options.seconds ?? null,
    concurrency: result.concurrency,
    cmcd: options.cmcd === true,
    abr: options.abr ?? 'dynamic',
    safetyFactor: options.safetyFactor ?? null,
    bufferSeconds: options.bufferSeconds ?? null,
  };
  await writeFile(join(out, 'summary.json'), `${JSON.stringify({ run, aggregates: result.aggregates }, null, 2)}\n`);
  await writeSummaryHtml(join(out, 'index.html'), run, result);
}
