/**
 * The origin's /player/ page, served to the browser by Playwright's request routing from an
 * address of its own, so the harness can play any URL (the user's CDN, an origin in the lab) with
 * the same instrumented page and no web server beside it. The media requests themselves are not
 * routed: they go over the real network (and the lab's link) to the media URL.
 */
import type { BrowserContext } from 'playwright-core';
import { playerFiles, playerPageFiles } from '@trickle/origin';
import { E2eError } from '../errors.js';
import type { PlayerKind } from './session-record.js';

/** `.localhost` is a secure context that never leaves the browser; nothing listens there. */
export const playerPageOrigin = 'http://player.trickle.localhost';

export interface PageQuery {
  readonly url: string;
  readonly player?: PlayerKind | undefined;
  /**
   * Added to every media request as `?policy=` (the origin needs --allow-policy-override). For an
   * `asset` run of the harness it is the started origin's default policy instead.
   */
  readonly policy?: string | undefined;
  readonly cmcd?: boolean | undefined;
  readonly abr?: 'throughput' | 'bola' | 'dynamic' | undefined;
  /**
   * The share of its throughput estimate the player may spend (dash.js bandwidthSafetyFactor, hls.js
   * abrBandWidthUpFactor, Shaka bandwidthUpgradeTarget).
   */
  readonly safetyFactor?: number | undefined;
  readonly bufferSeconds?: number | undefined;
  /** Where playback begins, media seconds (a viewer who resumes or follows a link into the middle). */
  readonly startSec?: number | undefined;
  /**
   * Once playback reaches `atSec`, jump to `toSec` (a seek test: progressive MP4 Range requests, a new startup phase).
   */
  readonly seek?: { readonly atSec: number; readonly toSec: number } | undefined;
}

export function playerPageUrl(query: PageQuery): string {
  // No live charts: a measured session's browser does nothing the viewer's would not.
  const params = new URLSearchParams({ src: query.url, charts: '0' });
  if (query.player !== undefined) params.set('player', query.player);
  if (query.policy !== undefined) params.set('policy', query.policy);
  if (query.cmcd === true) params.set('cmcd', '1');
  if (query.abr !== undefined) params.set('abr', query.abr);
  if (query.safetyFactor !== undefined) params.set('safetyFactor', String(query.safetyFactor));
  if (query.bufferSeconds !== undefined) params.set('bufferSeconds', String(query.bufferSeconds));
  if (query.startSec !== undefined && query.startSec > 0) params.set('start', String(query.startSec));
  if (query.seek !== undefined) params.set('seek', `${query.seek.atSec}:${query.seek.toSec}`);
  return `${playerPageOrigin}/player/?${params.toString()}`;
}

export async function routePlayerPage(context: BrowserContext): Promise<void> {
  const paths = playerFiles();
  if (paths.dashjs === undefined || paths.hlsjs === undefined || paths.shaka === undefined)
    throw new E2eError(
      'E2E_ERR_HARNESS',
      'the browser harness plays with dash.js, hls.js and Shaka Player: install them (npm install dashjs hls.js shaka-player)',
    );
  // The origin's own table of the page's files: what /player/ serves, the harness serves.
  const files = await playerPageFiles(paths);
  await context.route(`${playerPageOrigin}/**`, async (route) => {
    const path = new URL(route.request().url()).pathname;
    const file = files.get(path.replace(/^\/player\//, ''));
    if (file === undefined || 'missing' in file)
      return route.fulfill({ status: 404, contentType: 'text/plain', body: `no player file ${path}` });
    return route.fulfill({ status: 200, contentType: file.type, body: file.body });
  });
}
