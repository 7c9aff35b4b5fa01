/**
 * Packaging: encode a ladder with the system ffmpeg (capped-CRF H.264, so bitrate follows scene
 * complexity: true VBR; GOPs of exactly one segment, aligned across rungs), then package it as
 * CMAF with a DASH MPD and HLS playlists sharing one set of .m4s segments, plus a faststart
 * progressive MP4 of the top rung with audio. Output is written to a temporary directory and
 * moved into place only when complete, so a failure never leaves a half-written asset.
 */
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { OriginError } from '../errors.js';
import { ffprobe, parseRational, runFfmpeg, type FfmpegTools, defaultTools } from './ffmpeg.js';
import { rewriteMasterPlaylist, rewriteMediaPlaylist, type VariantRates } from './hls-rewrite.js';
import { defaultLadderSpec, fitLadder, parseLadder, type Rung } from './ladder.js';
import { buildAssetIndex } from './media-index.js';

export type Stage = 'encode' | 'package' | 'progressive' | 'index';

export type ProgressReporter = (stage: Stage, fraction: number) => void;

export interface EncodeSource {
  /** ffmpeg input arguments (-i ..., -f lavfi -i ...). */
  readonly inputArgs: readonly string[];
  /** A filter graph fragment that ends in the label [src] carrying the video to scale. */
  readonly videoGraph: string;
  /** Stream specifier of the audio input, e.g. `1:a`, or undefined for video only. */
  readonly audioMap: string | undefined;
  readonly durationSec: number;
  /** Audio is cut this long, ~50 ms before the video ends (hls.js hangs on a tiny last audio segment). */
  readonly audioDurationSec: number | undefined;
  readonly frameRate: number;
  /** Display aspect ratio kept on every rung, as `num/den`. */
  readonly displayAspect: string;
}

export interface PackageOptions {
  readonly outDir: string;
  readonly rungs: readonly Rung[];
  readonly segmentSeconds: number;
  /** Replace a non-empty output directory. */
  readonly overwrite: boolean;
  readonly onProgress?: ProgressReporter;
  readonly tools?: FfmpegTools;
}

async function isNonEmptyDir(path: string): Promise<boolean> {
  try {
    return (await readdir(path)).length > 0;
  } catch {
    return false;
  }
}

export async function encodeAndPackage(source: EncodeSource, options: PackageOptions): Promise<void> {
  const tools = options.tools ?? defaultTools;
  if (!options.overwrite && (await isNonEmptyDir(options.outDir))) {
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `${options.outDir} already exists and is not empty; pass --overwrite to replace it`,
      { outDir: options.outDir },
    );
  }
  const staging = join(dirname(options.outDir), `.${basename(options.outDir)}.tmp-${process.pid}`);
  const work = join(staging, '.work');
  await rm(staging, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  try {
    await encodeRungs(source, options, work, tools);
    await packageCmaf(options, work, staging, source.audioMap !== undefined, tools);
    await writeProgressive(options, work, staging, source, tools);
    await rm(work, { recursive: true, force: true });
    await finalizeHls(staging, source.frameRate);
    options.onProgress?.('index', 1);
    await rm(options.outDir, { recursive: true, force: true });
    await mkdir(dirname(options.outDir), { recursive: true });
    await rename(staging, options.outDir);
  } catch (error) {
    await rm(staging, { recursive: true, force: true });
    throw error;
  }
}

/** Encodes the ladder into `work`: `v<i>.mp4` per rung (video only) and `audio.m4a` when the source has audio. */
export async function encodeRungs(
  source: EncodeSource,
  options: Pick<PackageOptions, 'rungs' | 'segmentSeconds' | 'onProgress'>,
  work: string,
  tools: FfmpegTools,
): Promise<void> {
  const gop = Math.max(1, Math.round(source.frameRate * options.segmentSeconds));
  const splits = options.rungs.map((_, i) => `[s${i}]`).join('');
  const scales = options.rungs
    .map((rung, i) => `[s${i}]scale=${rung.width}:${rung.height}:flags=bicubic,setdar=${source.displayAspect}[v${i}]`)
    .join(';');
  const graph = `${source.videoGraph};[src]split=${options.rungs.length}${splits};${scales}`;
  const args: string[] = [...source.inputArgs, '-filter_complex', graph];
  options.rungs.forEach((rung, i) => {
    args.push(
      '-map',
      `[v${i}]`,
      '-an',
      '-c:v',
      'libx264',
      '-preset',
      'veryfast',
      '-profile:v',
      'high',
      '-pix_fmt',
      'yuv420p',
      // Capped CRF: quality-driven VBR whose peaks are bounded, like production ladders.
      '-crf',
      '23',
      '-maxrate',
      String(Math.round(rung.bitrateBps * 1.5)),
      '-bufsize',
      String(rung.bitrateBps * 2),
      '-g',
      String(gop),
      '-keyint_min',
      String(gop),
      '-sc_threshold',
      '0',
      '-force_key_frames',
      `expr:gte(t,n_forced*${options.segmentSeconds})`,
      join(work, `v${i}.mp4`),
    );
  });
  if (source.audioMap !== undefined) {
    args.push('-map', source.audioMap, '-vn', '-c:a', 'aac', '-b:a', '128k', '-ac', '2', '-ar', '48000');
    if (source.audioDurationSec !== undefined) args.push('-t', source.audioDurationSec.toFixed(3));
    args.push(join(work, 'audio.m4a'));
  }
  await runFfmpeg(args, {
    expectedDurationSec: source.durationSec,
    what: 'encoding the ladder',
    tools,
    ...(options.onProgress === undefined ? {} : { onProgress: (f: number) => options.onProgress!('encode', f) }),
  });
}

async function packageCmaf(
  options: PackageOptions,
  work: string,
  outDir: string,
  hasAudio: boolean,
  tools: FfmpegTools,
): Promise<void> {
  const args: string[] = [];
  options.rungs.forEach((_, i) => args.push('-i', join(work, `v${i}.mp4`)));
  if (hasAudio) args.push('-i', join(work, 'audio.m4a'));
  options.rungs.forEach((_, i) => args.push('-map', `${i}:v`));
  if (hasAudio) args.push('-map', `${options.rungs.length}:a`);
  args.push(
    '-c',
    'copy',
    '-f',
    'dash',
    '-dash_segment_type',
    'mp4',
    '-seg_duration',
    String(options.segmentSeconds),
    '-use_template',
    '1',
    '-use_timeline',
    '1',
    '-hls_playlist',
    '1',
    '-hls_master_name',
    'master.m3u8',
    '-adaptation_sets',
    hasAudio ? 'id=0,streams=v id=1,streams=a' : 'id=0,streams=v',
    '-init_seg_name',
    'init-$RepresentationID$.m4s',
    '-media_seg_name',
    'chunk-$RepresentationID$-$Number%05d$.m4s',
    join(outDir, 'manifest.mpd'),
  );
  await runFfmpeg(args, {
    expectedDurationSec: 0,
    what: 'packaging CMAF segments',
    tools,
    ...(options.onProgress === undefined ? {} : { onProgress: (f: number) => options.onProgress!('package', f) }),
  });
}

async function writeProgressive(
  options: PackageOptions,
  work: string,
  outDir: string,
  source: EncodeSource,
  tools: FfmpegTools,
): Promise<void> {
  const top = options.rungs.length - 1;
  const args = ['-i', join(work, `v${top}.mp4`)];
  if (source.audioMap !== undefined) args.push('-i', join(work, 'audio.m4a'), '-map', '0:v', '-map', '1:a');
  args.push('-c', 'copy', '-movflags', '+faststart', join(outDir, 'progressive.mp4'));
  await runFfmpeg(args, {
    expectedDurationSec: source.durationSec,
    what: 'writing the progressive MP4',
    tools,
    ...(options.onProgress === undefined ? {} : { onProgress: (f: number) => options.onProgress!('progressive', f) }),
  });
}

/** Rewrites the HLS playlists from the measured index (peak and average bandwidth). */
async function finalizeHls(outDir: string, frameRate: number): Promise<void> {
  const index = await buildAssetIndex('staging', outDir, {
    mpdFiles: ['manifest.mpd'],
    playlistFiles: ['master.m3u8'],
    mp4Files: [],
  });
  const audio = index.renditions.find((r) => r.kind === 'audio');
  const rates = new Map<string, VariantRates>();
  for (const ref of index.hlsPlaylists) {
    if (ref.kind !== 'video') continue;
    const id = ref.uri.replace(/^media_/, '').replace(/\.m3u8$/, '');
    const rendition = index.renditions.find((r) => r.id === id);
    if (rendition === undefined) continue;
    rates.set(ref.uri, {
      peakBps: rendition.peakSegmentBitrateBps + (audio?.peakSegmentBitrateBps ?? 0),
      averageBps: rendition.averageBitrateBps + (audio?.averageBitrateBps ?? 0),
      frameRate,
    });
  }
  const masterPath = join(outDir, 'master.m3u8');
  await writeFile(masterPath, rewriteMasterPlaylist(await readFile(masterPath, 'utf8'), rates));
  for (const ref of index.hlsPlaylists) {
    const path = join(outDir, ref.uri);
    await writeFile(path, rewriteMediaPlaylist(await readFile(path, 'utf8')));
  }
}

export interface PackageInputOptions {
  readonly input: string;
  readonly outDir: string;
  readonly ladder?: string | undefined;
  readonly segmentSeconds?: number | undefined;
  /** Allow rungs taller than the source (upscaling). */
  readonly force?: boolean | undefined;
  /** Replace a non-empty output directory. */
  readonly overwrite?: boolean | undefined;
  readonly onProgress?: ProgressReporter;
  readonly tools?: FfmpegTools;
}

/** `trickle package`: any input ffmpeg can read -> the same layout as the demo. */
export async function packageInput(options: PackageInputOptions): Promise<{ rungs: Rung[]; durationSec: number }> {
  const tools = options.tools ?? defaultTools;
  const segmentSeconds = options.segmentSeconds ?? 2;
  if (!Number.isFinite(segmentSeconds) || segmentSeconds < 1 || segmentSeconds > 20) {
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `--segment-seconds must be between 1 and 20 (got ${options.segmentSeconds})`,
    );
  }
  const info = await stat(options.input).catch(() => undefined);
  if (info === undefined || !info.isFile())
    throw new OriginError('ORIGIN_ERR_INPUT_UNREADABLE', `input ${options.input} does not exist or is not a file`, {
      input: options.input,
    });
  const probe = await ffprobe(options.input, [], tools);
  const video = probe.streams.find((s) => s.codec_type === 'video' && (s.width ?? 0) > 0);
  if (video === undefined || video.width === undefined || video.height === undefined) {
    throw new OriginError(
      'ORIGIN_ERR_INPUT_UNREADABLE',
      `input ${options.input} has no video stream ffmpeg can decode`,
      { input: options.input },
    );
  }
  const durationSec = Number(probe.format.duration ?? video.duration);
  if (!Number.isFinite(durationSec) || durationSec <= 0) {
    throw new OriginError('ORIGIN_ERR_INPUT_UNREADABLE', `input ${options.input} has no known duration`, {
      input: options.input,
    });
  }
  const sar = parseRational(video.sample_aspect_ratio) ?? 1;
  const displayWidth = Math.round(video.width * sar);
  const rungs = fitLadder(
    parseLadder(options.ladder ?? defaultLadderSpec),
    { width: displayWidth, height: video.height },
    { allowUpscale: options.force === true, dropTaller: options.ladder === undefined },
  );
  const frameRate = Math.min(60, parseRational(video.avg_frame_rate) ?? parseRational(video.r_frame_rate) ?? 30);
  const audio = probe.streams.find((s) => s.codec_type === 'audio');
  await encodeAndPackage(
    {
      inputArgs: ['-i', options.input],
      videoGraph: `[0:v:0]fps=${frameRate.toFixed(6)},format=yuv420p[src]`,
      audioMap: audio === undefined ? undefined : '0:a:0',
      durationSec,
      audioDurationSec: audio === undefined ? undefined : Math.max(0.1, durationSec - 0.05),
      frameRate,
      displayAspect: `${displayWidth}/${video.height}`,
    },
    {
      outDir: options.outDir,
      rungs,
      segmentSeconds,
      overwrite: options.overwrite === true,
      tools,
      ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
    },
  );
  return { rungs, durationSec };
}
