/**
 * `trickle media corpus`: one source clip packaged by the tools a streaming team already uses, in
 * every VOD shape they write: ffmpeg's DASH muxer (SegmentTemplate by $Number$ and by $Time$ with
 * timelines, by duration, a single file with SegmentList byte ranges), its HLS muxer (MPEG-TS and
 * fMP4, segment files and single files with EXT-X-BYTERANGE, alternate audio, a lone media
 * playlist), progressive MP4 with the moov at the end and fragmented MP4, and Shaka Packager v3
 * (its default on-demand output: SegmentBase + sidx with HLS byte ranges; the live profile with
 * subtitles and I-frame playlists; HLS MPEG-TS; several Periods; CENC and CBCS encryption). Then
 * every asset is indexed as the origin indexes it, and README.md tables each shape, what wrote
 * it, and whether it is indexed and paced.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { delimiter, join, resolve } from 'node:path';
import { OriginError } from '../errors.js';
import { demoEncodeSource } from './demo.js';
import { defaultTools, runFfmpeg, runTool, type FfmpegTools } from './ffmpeg.js';
import { fitLadder, parseLadder } from './ladder.js';
import { assetFilesOf, buildAssetIndex, type AssetIndex, type RenditionIndex } from './media-index.js';
import { encodeRungs } from './packager.js';

export interface CorpusShape {
  readonly name: string;
  readonly tool: 'ffmpeg' | 'shaka';
  /** What the shape is, for the README table. */
  readonly description: string;
}

interface ShapeRecipe extends CorpusShape {
  /** Writes the asset into `out` from the encoded rungs in `work` (v0.mp4, v1.mp4, audio.m4a, subs.vtt). */
  build(tools: CorpusTools, work: string, out: string): Promise<void>;
}

export interface CorpusTools extends FfmpegTools {
  /** Shaka Packager's binary, or undefined where none is installed (its shapes are then left out, with the reason). */
  readonly shakaPackager: string | undefined;
}

/**
 * Where Shaka Packager is: TRICKLE_SHAKA_PACKAGER, the copy ./scripts/setup installs in the checkout
 * (this file is origin/dist/src/media/ of it) or the working directory, or `packager` on PATH.
 */
export function findShakaPackager(): string | undefined {
  const installed = (root: string) => join(root, '.cache', 'tools', 'bin', 'packager');
  const candidates = [
    process.env.TRICKLE_SHAKA_PACKAGER,
    installed(resolve(import.meta.dirname, '..', '..', '..', '..')),
    installed(process.cwd()),
    ...(process.env.PATH ?? '').split(delimiter).map((dir) => join(dir, 'packager')),
  ];
  return candidates.find((path) => path !== undefined && path !== '' && existsSync(path));
}

const ffmpegDash =
  (extra: readonly string[], manifest = 'manifest.mpd') =>
  async (tools: CorpusTools, work: string, out: string) => {
    await ffmpeg(
      tools,
      [
        ...inputs(work),
        ...maps(),
        '-c',
        'copy',
        '-f',
        'dash',
        '-seg_duration',
        '2',
        '-adaptation_sets',
        'id=0,streams=v id=1,streams=a',
        ...extra,
        join(out, manifest),
      ],
      'writing a DASH shape',
    );
  };

/**
 * `varStreams` names output streams: both rungs' video first, then the audio copies (`audioCopies`: one muxed into each
 * variant, or one apart).
 */
const ffmpegHls =
  (extra: readonly string[], varStreams: string, segmentPattern: string, audioCopies = 2) =>
  async (tools: CorpusTools, work: string, out: string) => {
    await ffmpeg(
      tools,
      [
        ...inputs(work),
        ...maps(audioCopies),
        '-c',
        'copy',
        '-f',
        'hls',
        '-hls_time',
        '2',
        '-hls_playlist_type',
        'vod',
        '-var_stream_map',
        varStreams,
        '-master_pl_name',
        'master.m3u8',
        '-hls_segment_filename',
        join(out, segmentPattern),
        ...extra,
        join(out, 'v%v.m3u8'),
      ],
      'writing an HLS shape',
    );
  };

/** The encoded rungs as inputs 0 and 1, the audio as input 2. */
function inputs(work: string): string[] {
  return ['-i', join(work, 'v0.mp4'), '-i', join(work, 'v1.mp4'), '-i', join(work, 'audio.m4a')];
}

/** Both rungs' video and `audioCopies` copies of the audio (HLS muxes one into each variant, or keeps one apart). */
function maps(audioCopies = 1): string[] {
  return ['-map', '0:v', '-map', '1:v', ...Array.from({ length: audioCopies }, () => ['-map', '2:a']).flat()];
}

async function ffmpeg(tools: CorpusTools, args: readonly string[], what: string): Promise<void> {
  await runFfmpeg(args, { expectedDurationSec: 0, what, tools });
}

const key = 'label=:key_id=00112233445566778899aabbccddeeff:key=ffeeddccbbaa99887766554433221100';

const shaka =
  (streams: (work: string) => string[], flags: readonly string[]) =>
  async (tools: CorpusTools, work: string, out: string) => {
    if (tools.shakaPackager === undefined)
      throw new OriginError('ORIGIN_ERR_FFMPEG_MISSING', 'Shaka Packager not found');
    // Shaka Packager writes its outputs relative to its working directory.
    const { code, stderr } = await runTool(
      tools.shakaPackager,
      [...streams(work), '--segment_duration', '2', ...flags],
      undefined,
      out,
    );
    if (code !== 0)
      throw new OriginError(
        'ORIGIN_ERR_FFMPEG_FAILED',
        `Shaka Packager failed (exit ${code}): ${stderr.trim().split('\n').slice(-4).join(' ')}`,
        { stderr },
      );
  };

const shakaOnDemand = (work: string) => [
  `in=${join(work, 'v0.mp4')},stream=video,output=v0.mp4,playlist_name=v0.m3u8`,
  `in=${join(work, 'v1.mp4')},stream=video,output=v1.mp4,playlist_name=v1.m3u8`,
  `in=${join(work, 'audio.m4a')},stream=audio,output=audio.mp4,playlist_name=audio.m3u8,` +
    'hls_group_id=audio,hls_name=English',
];

const shakaTemplates =
  (extension: 'm4s' | 'ts', extras: { iframes?: boolean; text?: boolean } = {}) =>
  (work: string) => [
    ...[0, 1].map(
      (i) =>
        `in=${join(work, `v${i}.mp4`)},stream=video,` +
        `${extension === 'm4s' ? `init_segment=v${i}/init.mp4,` : ''}segment_template=v` +
        `${i}/$Number$.${extension},playlist_name=v${i}.m3u8` +
        `${extras.iframes === true ? `,iframe_playlist_name=v${i}_iframe.m3u8` : ''}`,
    ),
    `in=${join(work, 'audio.m4a')},stream=audio,` +
      `${extension === 'm4s' ? 'init_segment=a/init.mp4,' : ''}segment_template=a/$Number$.` +
      `${extension},playlist_name=audio.m3u8,hls_group_id=audio,hls_name=English`,
    ...(extras.text === true
      ? [
          `in=${join(work, 'subs.vtt')},stream=text,segment_template=t/$Number$.vtt,` +
            'playlist_name=subs.m3u8,hls_group_id=text,hls_name=English,language=en',
        ]
      : []),
  ];

const recipes: readonly ShapeRecipe[] = [
  {
    name: 'ffmpeg-dash-number-timeline',
    tool: 'ffmpeg',
    description: 'DASH live profile: SegmentTemplate $Number$ with a SegmentTimeline, a file per segment',
    build: ffmpegDash(['-use_template', '1', '-use_timeline', '1']),
  },
  {
    name: 'ffmpeg-dash-time-timeline',
    tool: 'ffmpeg',
    description: 'SegmentTemplate $Time$ with a SegmentTimeline; the AAC track starts at its priming',
    build: ffmpegDash([
      '-use_template',
      '1',
      '-use_timeline',
      '1',
      '-media_seg_name',
      'chunk-$RepresentationID$-$Time$.m4s',
    ]),
  },
  {
    name: 'ffmpeg-dash-number-duration',
    tool: 'ffmpeg',
    description: 'SegmentTemplate $Number$ by @duration (no timeline)',
    build: ffmpegDash(['-use_template', '1', '-use_timeline', '0']),
  },
  {
    name: 'ffmpeg-dash-single-file',
    tool: 'ffmpeg',
    description: 'one file per representation, SegmentList with mediaRange byte ranges',
    build: ffmpegDash(['-single_file', '1']),
  },
  {
    name: 'ffmpeg-hls-ts',
    tool: 'ffmpeg',
    description: 'HLS, MPEG-TS segment files, audio muxed into each variant',
    build: ffmpegHls([], 'v:0,a:0 v:1,a:1', 'v%v_%03d.ts'),
  },
  {
    name: 'ffmpeg-hls-ts-single-file',
    tool: 'ffmpeg',
    description: 'HLS, one MPEG-TS file per variant with EXT-X-BYTERANGE',
    build: ffmpegHls(['-hls_flags', 'single_file'], 'v:0,a:0 v:1,a:1', 'v%v.ts'),
  },
  {
    name: 'ffmpeg-hls-fmp4-alt-audio',
    tool: 'ffmpeg',
    description: 'HLS fMP4 (EXT-X-MAP) segment files, audio as an alternate rendition group',
    build: ffmpegHls(
      ['-hls_segment_type', 'fmp4', '-hls_fmp4_init_filename', 'init_%v.mp4'],
      'v:0,agroup:aud v:1,agroup:aud a:0,agroup:aud',
      'v%v_%03d.m4s',
      1,
    ),
  },
  {
    name: 'ffmpeg-hls-fmp4-single-file',
    tool: 'ffmpeg',
    description: 'HLS fMP4, one file per variant with EXT-X-BYTERANGE (init by a BYTERANGE map)',
    build: ffmpegHls(['-hls_segment_type', 'fmp4', '-hls_flags', 'single_file'], 'v:0,a:0 v:1,a:1', 'v%v.m4s'),
  },
  {
    name: 'ffmpeg-hls-lone-playlist',
    tool: 'ffmpeg',
    description: 'HLS-only: one media playlist and its TS segments, no master playlist',
    build: async (tools, work, out) =>
      ffmpeg(
        tools,
        [
          '-i',
          join(work, 'v1.mp4'),
          '-i',
          join(work, 'audio.m4a'),
          '-map',
          '0:v',
          '-map',
          '1:a',
          '-c',
          'copy',
          '-f',
          'hls',
          '-hls_time',
          '2',
          '-hls_playlist_type',
          'vod',
          '-hls_segment_filename',
          join(out, 'seg%03d.ts'),
          join(out, 'index.m3u8'),
        ],
        'writing a lone HLS playlist',
      ),
  },
  {
    name: 'ffmpeg-progressive-moov-at-end',
    tool: 'ffmpeg',
    description: 'progressive MP4, moov after mdat (not faststart)',
    build: async (tools, work, out) =>
      ffmpeg(
        tools,
        [
          '-i',
          join(work, 'v1.mp4'),
          '-i',
          join(work, 'audio.m4a'),
          '-map',
          '0:v',
          '-map',
          '1:a',
          '-c',
          'copy',
          join(out, 'clip.mp4'),
        ],
        'writing a progressive MP4',
      ),
  },
  {
    name: 'ffmpeg-progressive-fragmented',
    tool: 'ffmpeg',
    description: 'fragmented MP4 as one progressive file (moof per GOP, empty moov)',
    build: async (tools, work, out) =>
      ffmpeg(
        tools,
        [
          '-i',
          join(work, 'v1.mp4'),
          '-i',
          join(work, 'audio.m4a'),
          '-map',
          '0:v',
          '-map',
          '1:a',
          '-c',
          'copy',
          '-movflags',
          'frag_keyframe+empty_moov+default_base_moof',
          join(out, 'clip.mp4'),
        ],
        'writing a fragmented MP4',
      ),
  },
  {
    name: 'shaka-on-demand',
    tool: 'shaka',
    description:
      'Shaka Packager default VOD: DASH on-demand (SegmentBase + sidx, one file per stream) and HLS byte ranges',
    build: shaka(shakaOnDemand, ['--mpd_output', 'manifest.mpd', '--hls_master_playlist_output', 'master.m3u8']),
  },
  {
    name: 'shaka-live-profile',
    tool: 'shaka',
    description:
      'Shaka Packager segment templates ($Number$ + timeline) for DASH and HLS, WebVTT subtitles, I-frame playlists',
    build: shaka(shakaTemplates('m4s', { iframes: true, text: true }), [
      '--generate_static_live_mpd',
      '--mpd_output',
      'manifest.mpd',
      '--hls_master_playlist_output',
      'master.m3u8',
    ]),
  },
  {
    name: 'shaka-hls-ts',
    tool: 'shaka',
    description: 'Shaka Packager HLS with MPEG-TS segments (audio apart) and I-frame playlists',
    build: shaka(shakaTemplates('ts', { iframes: true }), ['--hls_master_playlist_output', 'master.m3u8']),
  },
  {
    name: 'shaka-multi-period',
    tool: 'shaka',
    description: 'Shaka Packager DASH split into two Periods (ad cue at 4 s), presentationTimeOffset',
    build: shaka(shakaTemplates('m4s'), [
      '--ad_cues',
      '4',
      '--generate_static_live_mpd',
      '--mpd_output',
      'manifest.mpd',
    ]),
  },
  {
    name: 'shaka-cenc-on-demand',
    tool: 'shaka',
    description: 'Shaka Packager on-demand, CENC (AES-CTR) encrypted with a raw key',
    build: shaka(shakaOnDemand, [
      '--enable_raw_key_encryption',
      '--keys',
      key,
      '--protection_scheme',
      'cenc',
      '--clear_lead',
      '0',
      '--mpd_output',
      'manifest.mpd',
      '--hls_master_playlist_output',
      'master.m3u8',
    ]),
  },
  {
    name: 'shaka-cbcs-templates',
    tool: 'shaka',
    description: 'Shaka Packager segment templates, CBCS (AES-CBC pattern) encrypted',
    build: shaka(shakaTemplates('m4s'), [
      '--enable_raw_key_encryption',
      '--keys',
      key,
      '--protection_scheme',
      'cbcs',
      '--clear_lead',
      '0',
      '--generate_static_live_mpd',
      '--mpd_output',
      'manifest.mpd',
      '--hls_master_playlist_output',
      'master.m3u8',
    ]),
  },
];

export const corpusShapes: readonly CorpusShape[] = recipes.map(({ name, tool, description }) => ({
  name,
  tool,
  description,
}));

export interface CorpusOptions {
  readonly outDir: string;
  /** Seconds of source (whole 2 s segments). */
  readonly durationSec?: number;
  /** Only these shapes (by name). */
  readonly shapes?: readonly string[] | undefined;
  readonly tools?: Partial<CorpusTools>;
  readonly onShape?: (shape: CorpusShape, outcome: ShapeOutcome) => void;
}

export type ShapeOutcome =
  | { readonly status: 'indexed'; readonly dir: string; readonly index: AssetIndex }
  | { readonly status: 'broken'; readonly dir: string; readonly error: string }
  | { readonly status: 'not built'; readonly reason: string };

/** "indexed, 3 renditions paced, 1 issues", "broken: ...", "not built: ...". */
export function describeShapeOutcome(outcome: ShapeOutcome): string {
  if (outcome.status === 'broken') return `broken: ${outcome.error}`;
  if (outcome.status === 'not built') return `not built: ${outcome.reason}`;
  const paced = outcome.index.renditions.filter((r) => r.pacing.paced).length;
  const issues = outcome.index.issues.length;
  return `indexed, ${paced} renditions paced${issues > 0 ? `, ${issues} issues` : ''}`;
}

/** Builds the corpus (replacing `outDir`'s shape folders) and indexes every asset; returns each shape's outcome. */
export async function buildCorpus(options: CorpusOptions): Promise<{ shape: CorpusShape; outcome: ShapeOutcome }[]> {
  const durationSec = options.durationSec ?? 8;
  if (!Number.isFinite(durationSec) || durationSec < 4 || durationSec > 600 || durationSec % 2 !== 0) {
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `--duration must be an even number of seconds from 4 to 600 (got ${options.durationSec})`,
    );
  }
  const tools: CorpusTools = { ...defaultTools, shakaPackager: findShakaPackager(), ...options.tools };
  const chosen = options.shapes === undefined ? recipes : recipes.filter((r) => options.shapes!.includes(r.name));
  const unknown = (options.shapes ?? []).filter((name) => !recipes.some((r) => r.name === name));
  if (unknown.length > 0)
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `unknown corpus shape ${unknown.join(', ')} (known: ${recipes.map((r) => r.name).join(', ')})`,
    );
  const outDir = resolve(options.outDir);
  const work = join(outDir, '.source');
  await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  // Two rungs of the demo's scene-by-scene VBR content, 2 s GOPs, AAC audio; subtitles for the shapes that carry them.
  const rungs = fitLadder(
    parseLadder('360p:800k,540p:1.4M'),
    { width: 1280, height: 720 },
    { allowUpscale: false, dropTaller: false },
  );
  await encodeRungs(demoEncodeSource(durationSec), { rungs, segmentSeconds: 2 }, work, tools);
  await writeFile(join(work, 'subs.vtt'), webvtt(durationSec));

  const results: { shape: CorpusShape; outcome: ShapeOutcome }[] = [];
  for (const recipe of chosen) {
    const shape: CorpusShape = { name: recipe.name, tool: recipe.tool, description: recipe.description };
    const dir = join(outDir, recipe.name);
    let outcome: ShapeOutcome;
    if (recipe.tool === 'shaka' && tools.shakaPackager === undefined) {
      outcome = {
        status: 'not built',
        reason:
          'Shaka Packager not found (./scripts/setup installs v3.8 into ' +
          '.cache/tools/bin/packager; or set TRICKLE_SHAKA_PACKAGER)',
      };
    } else {
      const staging = `${dir}.building`;
      await rm(staging, { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
      await mkdir(staging, { recursive: true });
      try {
        await recipe.build(tools, work, staging);
        await rename(staging, dir);
        outcome = {
          status: 'indexed',
          dir,
          index: await buildAssetIndex(recipe.name, dir, assetFilesOf(await readdir(dir))),
        };
      } catch (error) {
        await rm(staging, { recursive: true, force: true });
        outcome = { status: 'broken', dir, error: (error as Error).message };
      }
    }
    options.onShape?.(shape, outcome);
    results.push({ shape, outcome });
  }
  await rm(work, { recursive: true, force: true });
  await writeFile(join(outDir, 'README.md'), corpusReadme(results, durationSec, tools));
  return results;
}

function webvtt(durationSec: number): string {
  const cues = Array.from(
    { length: Math.floor(durationSec / 2) },
    (_, i) => `${stamp(i * 2 + 0.2)} --> ${stamp(i * 2 + 1.8)}\nScene ${i + 1}\n`,
  );
  return `WEBVTT\n\n${cues.join('\n')}`;
}

function stamp(sec: number): string {
  const whole = Math.floor(sec);
  return (
    `00:${String(Math.floor(whole / 60)).padStart(2, '0')}:` +
    `${String(whole % 60).padStart(2, '0')}.` +
    `${String(Math.round((sec - whole) * 1000)).padStart(3, '0')}`
  );
}

function corpusReadme(
  results: readonly { shape: CorpusShape; outcome: ShapeOutcome }[],
  durationSec: number,
  tools: CorpusTools,
): string {
  const row = ({ shape, outcome }: { shape: CorpusShape; outcome: ShapeOutcome }) => {
    if (outcome.status === 'not built')
      return `| ${shape.name} | ${shape.tool} | ${shape.description} | not built: ${outcome.reason} | |`;
    if (outcome.status === 'broken')
      return (
        `| ${shape.name} | ${shape.tool} | ${shape.description} | ` +
        `**broken**: ${outcome.error.replaceAll('|', '/')} | |`
      );
    const { index } = outcome;
    const paced = index.renditions.filter((r) => r.pacing.paced);
    const plain = index.renditions
      .filter((r) => !r.pacing.paced)
      .map((r) => `${r.id}: ${r.pacing.paced ? '' : r.pacing.reason}`);
    const progressive =
      index.progressive === undefined
        ? ''
        : `; progressive ${index.progressive.file} ` +
          `(${index.progressive.faststart ? 'faststart' : 'moov at the end'}` +
          `${index.progressive.fragmented ? ', fragmented' : ''}, ` +
          `${index.progressive.durationSec.toFixed(2)} ` +
          `s)`;
    const status = index.issues.length > 0 ? `indexed, partly plain: ${index.issues.join('; ')}` : 'indexed';
    return (
      `| ${shape.name} | ${shape.tool} | ${shape.description} | ${status} ` +
      `| ${paced.length} paced ` +
      `(${[...new Set(paced.map(addressingAndTiming))].join(', ') || '-'})` +
      `${plain.length > 0 ? `; plain: ${plain.join('; ')}` : ''}${progressive} ` +
      `|`
    );
  };
  return [
    '# Packaging corpus',
    '',
    `Written by \`trickle media corpus\` on ${new Date().toISOString().slice(0, 10)}: ` +
      `one ${durationSec} s source (the demo's scene-by-scene VBR content, 360p and 540p ` +
      `H.264 with 2 s GOPs, AAC audio, WebVTT subtitles) packaged ` +
      'by ' +
      (tools.shakaPackager === undefined ? 'ffmpeg (Shaka Packager was not found)' : 'ffmpeg and Shaka Packager') +
      ', ' +
      `then indexed as \`trickle serve\` indexes it. Inspect any of them with \`trickle ` +
      `media inspect <dir>\`; serve them all with \`trickle serve --media <this folder>\`.`,
    '',
    '| shape | written by | what it is | index | renditions |',
    '| --- | --- | --- | --- | --- |',
    ...results.map(row),
    '',
  ].join('\n');
}

/** "template-number/durations": how a paced rendition is addressed, and where its timing came from. */
function addressingAndTiming(rendition: RenditionIndex): string {
  return `${rendition.addressing}/${rendition.pacing.paced ? rendition.pacing.timing : ''}`;
}
