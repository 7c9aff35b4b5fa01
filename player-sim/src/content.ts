/**
 * What a player sees of the media: video renditions (ascending bitrate) and, per segment, its
 * duration, its size and where to fetch it (audio bytes, when present, ride along with each
 * video segment, as a player fetches both before it can play that period).
 */
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as HLS from 'hls-parser';
import { request } from 'undici';
import { SimError } from './errors.js';
import { parseMpd } from '@trickle/origin/mpd';

export interface ContentSegment {
  readonly durationSec: number;
  readonly sizeBytes: number;
  readonly url: string;
  /** Audio segment fetched alongside, if the content has audio. */
  readonly audio?: { readonly sizeBytes: number; readonly url: string } | undefined;
}

export interface Rendition {
  readonly id: string;
  /** What the manifest declares (what an ABR rule compares with its estimate), bits/s. */
  readonly bitrateBps: number;
  readonly heightPx: number | undefined;
  readonly segments: readonly ContentSegment[];
}

export interface Content {
  readonly source: string;
  readonly renditions: readonly Rendition[];
  readonly durationSec: number;
}

function fail(message: string, cause?: unknown): never {
  throw new SimError('SIM_ERR_MANIFEST', message, cause === undefined ? undefined : { cause });
}

function isUrl(value: string): boolean {
  return /^https?:\/\//.test(value);
}

async function readText(location: string): Promise<string> {
  if (isUrl(location)) {
    const response = await request(location).catch((error: unknown) => fail(`cannot fetch ${location}: ${(error as Error).message}`, error));
    if (response.statusCode !== 200) fail(`GET ${location} answered ${response.statusCode}`);
    return response.body.text();
  }
  return readFile(location.startsWith('file:') ? fileURLToPath(location) : location, 'utf8').catch((error: unknown) => fail(`cannot read ${location}: ${(error as Error).message}`, error));
}

/** The origin's media index (`/api/assets/<asset>`): exact per-segment sizes without a request each. */
interface OriginIndex {
  asset: string;
  renditions: { id: string; kind: string; height: number | null; declaredBandwidthBps: number | null; averageBitrateBps: number; segments?: { file: string; sizeBytes: number; durationSec: number }[] }[];
}

function fromOriginIndex(index: OriginIndex, mediaBase: string, source: string): Content {
  const audio = index.renditions.find((r) => r.kind === 'audio');
  const video = index.renditions.filter((r) => r.kind === 'video');
  if (video.length === 0 || video.some((r) => r.segments === undefined)) fail(`${source}: the index has no video segments (ask without ?segments=0)`);
  const renditions = video
    .map((r) => ({
      id: r.id,
      bitrateBps: r.declaredBandwidthBps ?? r.averageBitrateBps,
      heightPx: r.height ?? undefined,
      segments: r.segments!.map((s, i) => {
        const a = audio?.segments?.[i];
        return { durationSec: s.durationSec, sizeBytes: s.sizeBytes, url: mediaBase + s.file, audio: a === undefined ? undefined : { sizeBytes: a.sizeBytes, url: mediaBase + a.file } };
      }),
    }))
    .sort((a, b) => a.bitrateBps - b.bitrateBps);
  return { source, renditions, durationSec: renditions[0]!.segments.reduce((sum, s) => sum + s.durationSec, 0) };
}

/** Size of a segment: stat for local files, the origin's index or a HEAD request for URLs. */
async function sizeOf(url: string): Promise<number> {
  if (!isUrl(url)) return (await stat(url).catch((error: unknown) => fail(`segment ${url} is missing`, error))).size;
  const response = await request(url, { method: 'HEAD' }).catch((error: unknown) => fail(`HEAD ${url}: ${(error as Error).message}`, error));
  const length = Number(response.headers['content-length']);
  await response.body.dump();
  if (!Number.isFinite(length)) fail(`HEAD ${url} gave no Content-Length`);
  return length;
}

function resolve(base: string, relative: string): string {
  if (isUrl(relative)) return relative;
  return isUrl(base) ? new URL(relative, base).href : join(dirname(base), relative);
}

/** The MPD's representations, through the repository's one MPD reader (the origin's). */
function readMpd(location: string, text: string): ReturnType<typeof parseMpd>['renditions'] {
  try {
    return parseMpd(text, location).renditions;
  } catch (error) {
    throw new SimError('SIM_ERR_MANIFEST', (error as Error).message, { cause: error });
  }
}

/** DASH through the MPD's SegmentTemplate (Timeline or duration) or SegmentList. */
async function fromMpd(location: string, text: string): Promise<Content> {
  const parsed = readMpd(location, text);
  const audio = parsed.find((r) => r.kind === 'audio');
  const sizes = async (files: readonly string[]) => {
    const out: number[] = [];
    for (const file of files) out.push(await sizeOf(resolve(location, file)));
    return out;
  };
  const audioSizes = audio === undefined ? [] : await sizes(audio.segments.map((s) => s.file));
  const renditions: Rendition[] = [];
  for (const r of parsed.filter((p) => p.kind === 'video')) {
    const videoSizes = await sizes(r.segments.map((s) => s.file));
    renditions.push({
      id: r.id,
      bitrateBps: r.declaredBandwidthBps ?? 0,
      heightPx: r.height,
      segments: r.segments.map((s, i) => ({
        durationSec: s.manifestDurationSec,
        sizeBytes: videoSizes[i]!,
        url: resolve(location, s.file),
        audio: audio?.segments[i] === undefined ? undefined : { sizeBytes: audioSizes[i]!, url: resolve(location, audio.segments[i]!.file) },
      })),
    });
  }
  if (renditions.length === 0) fail(`${location}: no video representations`);
  renditions.sort((a, b) => a.bitrateBps - b.bitrateBps);
  return { source: location, renditions, durationSec: renditions[0]!.segments.reduce((sum, s) => sum + s.durationSec, 0) };
}

async function fromHls(location: string, text: string): Promise<Content> {
  let master: HLS.types.MasterPlaylist;
  try {
    const parsed = HLS.parse(text);
    if (!parsed.isMasterPlaylist) fail(`${location}: give the master playlist`);
    master = parsed as HLS.types.MasterPlaylist;
  } catch (error) {
    if (error instanceof SimError) throw error;
    fail(`${location}: not an HLS playlist: ${(error as Error).message}`, error);
  }
  const mediaSegments = async (uri: string) => {
    const playlistUrl = resolve(location, uri);
    const media = HLS.parse(await readText(playlistUrl)) as HLS.types.MediaPlaylist;
    const out: { url: string; durationSec: number; sizeBytes: number }[] = [];
    for (const segment of media.segments) {
      const url = resolve(playlistUrl, segment.uri);
      out.push({ url, durationSec: segment.duration, sizeBytes: await sizeOf(url) });
    }
    return out;
  };
  const audioUri = master.variants.flatMap((v) => v.audio).find((a) => a.uri !== undefined)?.uri;
  const audio = audioUri === undefined ? [] : await mediaSegments(audioUri);
  const renditions: Rendition[] = [];
  for (const variant of master.variants.filter((v) => !v.isIFrameOnly)) {
    const segments = await mediaSegments(variant.uri);
    renditions.push({
      id: variant.uri,
      bitrateBps: variant.averageBandwidth ?? variant.bandwidth,
      heightPx: variant.resolution?.height,
      segments: segments.map((s, i) => ({ ...s, audio: audio[i] === undefined ? undefined : { sizeBytes: audio[i]!.sizeBytes, url: audio[i]!.url } })),
    });
  }
  if (renditions.length === 0) fail(`${location}: no variants`);
  renditions.sort((a, b) => a.bitrateBps - b.bitrateBps);
  return { source: location, renditions, durationSec: renditions[0]!.segments.reduce((sum, s) => sum + s.durationSec, 0) };
}

/**
 * Loads content from an MPD or HLS master (file or URL), or from a Trickle origin's media index
 * URL (`.../api/assets/<asset>`). A manifest URL on a Trickle origin uses that origin's index.
 */
export async function loadContent(location: string): Promise<Content> {
  if (isUrl(location)) {
    const url = new URL(location);
    const assetMatch = /^(.*)\/media\/([^/]+)\/[^/]+$/.exec(url.pathname);
    const indexMatch = /^(.*)\/api\/assets\/([^/]+)$/.exec(url.pathname);
    const match = indexMatch ?? assetMatch;
    if (match !== null) {
      const [, prefix, asset] = match;
      const indexUrl = `${url.origin}${prefix}/api/assets/${asset}`;
      const response = await request(indexUrl).catch(() => undefined);
      if (response !== undefined && response.statusCode === 200) {
        const index = (await response.body.json()) as OriginIndex;
        return fromOriginIndex(index, `${url.origin}${prefix}/media/${asset}/`, location);
      }
      await response?.body.dump();
      if (indexMatch !== null) fail(`${indexUrl} did not answer with a media index`);
    }
  }
  const text = await readText(location);
  if (text.includes('<MPD')) return fromMpd(location, text);
  if (text.startsWith('#EXTM3U')) return fromHls(location, text);
  return fail(`${location} is neither a DASH MPD nor an HLS playlist`);
}

/** Content repeated until it lasts at least `durationSec` (for long sessions on short clips). */
export function loopContent(content: Content, durationSec: number): Content {
  if (content.durationSec >= durationSec) return content;
  const repeats = Math.ceil(durationSec / content.durationSec);
  return {
    source: `${content.source} (x${repeats})`,
    durationSec: content.durationSec * repeats,
    renditions: content.renditions.map((r) => ({ ...r, segments: Array.from({ length: repeats }, () => r.segments).flat() })),
  };
}
