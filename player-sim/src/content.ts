/**
 * What a player sees of the media: video renditions (ascending bitrate) and, per segment, its
 * duration, its size and where to fetch it, a file or a byte range of one (audio bytes, when
 * present, ride along with each video segment, as a player fetches both before it can play that
 * period). Manifests are read by the origin's readers (`@trickle/origin/manifests`), the
 * repository's one MPD and one playlist parser.
 */
import { readFile, stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import {
  buildAssetIndex,
  isMasterPlaylist,
  loneMediaPlaylistRef,
  parseMasterPlaylist,
  parseMediaPlaylist,
  parseMpd,
  summarizeIndex,
  type AssetFiles,
  type ByteSpan,
  type ManifestRendition,
} from '@trickle/origin/manifests';
import { SimError } from './errors.js';

export interface ContentSegment {
  readonly durationSec: number;
  readonly sizeBytes: number;
  readonly url: string;
  /** The segment's bytes of `url` when it is a range of a larger file (byte-range addressing). */
  readonly range?: ByteSpan | undefined;
  /** Audio segment fetched alongside, if the content has audio. */
  readonly audio?:
    | { readonly sizeBytes: number; readonly url: string; readonly range?: ByteSpan | undefined }
    | undefined;
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
    const response = await request(location).catch((error: unknown) =>
      fail(`cannot fetch ${location}: ${(error as Error).message}`, error),
    );
    if (response.statusCode !== 200) fail(`GET ${location} answered ${response.statusCode}`);
    return response.body.text();
  }
  return readFile(location.startsWith('file:') ? fileURLToPath(location) : location, 'utf8').catch((error: unknown) =>
    fail(`cannot read ${location}: ${(error as Error).message}`, error),
  );
}

/** The origin's media index (`/api/assets/<asset>`): exact per-segment sizes without a request each. */
interface OriginIndex {
  asset: string;
  renditions: {
    id: string;
    kind: string;
    height: number | null;
    declaredBandwidthBps: number | null;
    averageBitrateBps: number;
    paced?: boolean;
    trickPlay?: boolean;
    period?: number;
    segments?: { file: string; offsetBytes?: number; sizeBytes: number; durationSec: number }[];
  }[];
}

/** A segment's place: its URL, and its bytes there when it is a range of a larger file. */
function placed(
  mediaBase: string,
  s: { file: string; offsetBytes?: number; sizeBytes: number },
): { url: string; range?: ByteSpan } {
  return {
    url: mediaBase + s.file,
    ...(s.offsetBytes === undefined ? {} : { range: { offset: s.offsetBytes, sizeBytes: s.sizeBytes } }),
  };
}

function fromOriginIndex(index: OriginIndex, mediaBase: string, source: string): Content {
  // The first Period's ladder (a player plays Periods one after another, each from its own renditions).
  const usable = index.renditions.filter((r) => r.paced !== false && r.trickPlay !== true && (r.period ?? 0) === 0);
  const audio = usable.find((r) => r.kind === 'audio');
  const video = usable.filter((r) => r.kind === 'video');
  if (video.length === 0 || video.some((r) => r.segments === undefined))
    fail(`${source}: the index has no video segments (ask without ?segments=0)`);
  const renditions = video
    .map((r) => ({
      id: r.id,
      bitrateBps: r.declaredBandwidthBps ?? r.averageBitrateBps,
      heightPx: r.height ?? undefined,
      segments: r.segments!.map((s, i) => {
        const a = audio?.segments?.[i];
        return {
          durationSec: s.durationSec,
          sizeBytes: s.sizeBytes,
          ...placed(mediaBase, s),
          audio: a === undefined ? undefined : { sizeBytes: a.sizeBytes, ...placed(mediaBase, a) },
        };
      }),
    }))
    .sort((a, b) => a.bitrateBps - b.bitrateBps);
  return { source, renditions, durationSec: renditions[0]!.segments.reduce((sum, s) => sum + s.durationSec, 0) };
}

/** Size of a segment from a HEAD request (a byte range's size is its own). */
async function sizeOf(url: string, range: ByteSpan | undefined): Promise<number> {
  if (range !== undefined) return range.sizeBytes;
  const response = await request(url, { method: 'HEAD' }).catch((error: unknown) =>
    fail(`HEAD ${url}: ${(error as Error).message}`, error),
  );
  const length = Number(response.headers['content-length']);
  await response.body.dump();
  if (!Number.isFinite(length)) fail(`HEAD ${url} gave no Content-Length`);
  return length;
}

/**
 * Through the repository's one MPD and playlist readers (the origin's), converting a manifest error into the
 * simulator's.
 */
function read<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    throw new SimError('SIM_ERR_MANIFEST', (error as Error).message, { cause: error });
  }
}

/**
 * Renditions of a manifest on a server that is not a Trickle origin: sizes by HEAD (or from byte ranges), durations as
 * the manifest states them.
 */
async function fromManifestUrl(location: string, text: string): Promise<Content> {
  let parsed: ManifestRendition[];
  if (text.includes('<MPD')) {
    parsed = read(() => parseMpd(text, location, 'manifest.mpd').renditions);
  } else {
    const refs = read(() =>
      isMasterPlaylist(text) ? parseMasterPlaylist(text, 'master.m3u8') : [loneMediaPlaylistRef('master.m3u8')],
    );
    parsed = [];
    for (const ref of refs.filter((r) => !r.iFrame && r.kind !== 'subtitles')) {
      const playlistText = ref.uri === 'master.m3u8' ? text : await readText(new URL(ref.uri, location).href);
      parsed.push(read(() => parseMediaPlaylist(playlistText, ref.uri, ref)));
    }
  }
  const unplayable = parsed.find((r) => r.segmentBase !== undefined);
  if (unplayable !== undefined)
    fail(
      `${location}: rendition ${unplayable.id} lists its segments in its file's sidx ` +
        `(SegmentBase): give a Trickle origin's URL (its index has them) or the local MPD`,
    );
  const segmentsOf = async (rendition: ManifestRendition) => {
    const out: ContentSegment[] = [];
    for (const segment of rendition.segments) {
      const url = new URL(segment.file, location).href;
      out.push({
        durationSec: segment.manifestDurationSec,
        sizeBytes: await sizeOf(url, segment.range),
        url,
        ...(segment.range === undefined ? {} : { range: segment.range }),
      });
    }
    return out;
  };
  const audioRendition = parsed.find((r) => r.kind === 'audio' && r.period.index === 0);
  const audio = audioRendition === undefined ? [] : await segmentsOf(audioRendition);
  const renditions: Rendition[] = [];
  for (const r of parsed.filter((p) => p.kind === 'video' && p.trickPlay !== true && p.period.index === 0)) {
    const segments = await segmentsOf(r);
    renditions.push({
      id: r.id,
      bitrateBps: r.declaredBandwidthBps ?? 0,
      heightPx: r.height,
      segments: segments.map((s, i) => ({
        ...s,
        audio:
          audio[i] === undefined
            ? undefined
            : {
                sizeBytes: audio[i]!.sizeBytes,
                url: audio[i]!.url,
                ...(audio[i]!.range === undefined ? {} : { range: audio[i]!.range }),
              },
      })),
    });
  }
  if (renditions.length === 0) fail(`${location}: no video renditions`);
  renditions.sort((a, b) => a.bitrateBps - b.bitrateBps);
  return {
    source: location,
    renditions,
    durationSec: renditions[0]!.segments.reduce((sum, s) => sum + s.durationSec, 0),
  };
}

/** A local manifest: indexed as the origin indexes it (sizes and durations from the media). */
async function fromLocalManifest(path: string): Promise<Content> {
  const name = basename(path);
  const files: AssetFiles = name.endsWith('.mpd')
    ? { mpdFiles: [name], playlistFiles: [], mp4Files: [] }
    : name.endsWith('.m3u8')
      ? { mpdFiles: [], playlistFiles: [name], mp4Files: [] }
      : fail(`${path} is neither a DASH MPD nor an HLS playlist`);
  const index = await buildAssetIndex(basename(dirname(path)), dirname(path), files).catch((error: unknown) =>
    fail(`${path}: ${(error as Error).message}`, error),
  );
  return fromOriginIndex(summarizeIndex(index, { includeSegments: true }), `${dirname(path)}/`, path);
}

/**
 * Loads content from an MPD or HLS playlist (file or URL), or from a Trickle origin's media index
 * URL (`.../api/assets/<asset>`). A manifest URL on a Trickle origin uses that origin's index.
 */
export async function loadContent(location: string): Promise<Content> {
  if (!isUrl(location)) {
    const path = location.startsWith('file:') ? fileURLToPath(location) : location;
    await stat(path).catch((error: unknown) => fail(`cannot read ${path}: ${(error as Error).message}`, error));
    return fromLocalManifest(path);
  }
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
  const text = await readText(location);
  if (text.includes('<MPD') || text.startsWith('#EXTM3U')) return fromManifestUrl(location, text);
  return fail(`${location} is neither a DASH MPD nor an HLS playlist`);
}

/** Content repeated until it lasts at least `durationSec` (for long sessions on short clips). */
export function loopContent(content: Content, durationSec: number): Content {
  if (content.durationSec >= durationSec) return content;
  const repeats = Math.ceil(durationSec / content.durationSec);
  return {
    source: `${content.source} (x${repeats})`,
    durationSec: content.durationSec * repeats,
    renditions: content.renditions.map((r) => ({
      ...r,
      segments: Array.from({ length: repeats }, () => r.segments).flat(),
    })),
  };
}
