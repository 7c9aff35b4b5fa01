/**
 * The codecs a stream declares (MPD `@codecs`, HLS `CODECS`) and whether a browser decodes them
 * through Media Source Extensions. Checked before a fixture session, so a browser without H.264 or
 * AAC (Playwright's own Chromium build has neither) fails with one line naming the fix instead of a
 * player error deep in a session record.
 */
import { isMasterPlaylist, parseMasterPlaylist, parseMpd } from '@trickle/origin/manifests';
import type { Page } from 'playwright-core';
import { E2eError } from '../errors.js';

export interface DeclaredCodec {
  readonly kind: 'video' | 'audio';
  /** What MediaSource.isTypeSupported is asked, e.g. `video/mp4; codecs="avc1.64001f"`. */
  readonly type: string;
}

/** The codecs of an MPD or an HLS master playlist's text; none for anything else (a progressive MP4). */
export function declaredCodecs(url: string, text: string): DeclaredCodec[] {
  const path = new URL(url).pathname;
  if (path.endsWith('.mpd')) {
    return parseMpd(text, url)
      .renditions.filter((r) => (r.kind === 'video' || r.kind === 'audio') && r.codecs !== undefined)
      .map((r) => ({ kind: r.kind as 'video' | 'audio', type: `${r.kind}/mp4; codecs="${r.codecs}"` }));
  }
  if (path.endsWith('.m3u8')) {
    if (!isMasterPlaylist(text)) return [];
    const codecs = new Set(
      parseMasterPlaylist(text, 'master.m3u8').flatMap((ref) =>
        (ref.codecs ?? '')
          .split(',')
          .map((codec) => codec.trim())
          .filter((codec) => codec !== ''),
      ),
    );
    // CODECS lists a variant's video and audio together; an audio codec is one of the mp4a/ac-3/ec-3/opus/flac family.
    return [...codecs].map((codec) => {
      const kind = /^(mp4a|ac-3|ec-3|opus|flac)/i.test(codec) ? 'audio' : 'video';
      return { kind, type: `${kind}/mp4; codecs="${codec}"` };
    });
  }
  return [];
}

/**
 * Throws `E2E_ERR_CODECS` unless the page's browser decodes at least one declared video codec and
 * one audio codec (when audio is declared): a player picks among renditions, so one is enough.
 */
export async function assertDecodable(
  page: Page,
  url: string,
  declared: readonly DeclaredCodec[],
  browserName: string,
): Promise<void> {
  if (declared.length === 0) return;
  const supported = await page.evaluate(
    (types) => types.map((type) => MediaSource.isTypeSupported(type)),
    declared.map((codec) => codec.type),
  );
  for (const kind of ['video', 'audio'] as const) {
    const ofKind = declared
      .map((codec, i) => ({ ...codec, supported: supported[i] }))
      .filter((codec) => codec.kind === kind);
    if (ofKind.length === 0 || ofKind.some((codec) => codec.supported)) continue;
    const names = [...new Set(ofKind.map((codec) => /codecs="([^"]+)"/.exec(codec.type)![1]))].join(', ');
    throw new E2eError(
      'E2E_ERR_CODECS',
      `${browserName} cannot decode the ${kind} of ${url} (${names}: ` +
        `MediaSource.isTypeSupported is false); Playwright's own Chromium has no H.264 or ` +
        `AAC: use Google Chrome (use: { channel: 'chrome' }) or Debian's Chromium ` +
        `(qoeBrowser: 'debian', apt-get install chromium)`,
    );
  }
}
