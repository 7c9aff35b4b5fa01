/**
 * The demo asset: a synthetic clip whose complexity changes scene by scene (test pattern, fractal
 * zoom, static bars, noise, cellular automaton, fractal), so that per-segment bitrates swing well
 * beyond +-30% around each rendition's mean, as real VBR content does. Encoded to the 4-rung
 * ladder 234p/360p/540p/720p at ~400k/800k/1.4M/2.8M with 2 s aligned GOPs.
 */
import { OriginError } from '../errors.js';
import type { FfmpegTools } from './ffmpeg.js';
import { defaultLadderSpec, fitLadder, parseLadder, type Rung } from './ladder.js';
import { encodeAndPackage, type EncodeSource, type ProgressReporter } from './packager.js';

export interface DemoOptions {
  readonly outDir: string;
  readonly durationSec?: number;
  readonly overwrite?: boolean;
  readonly onProgress?: ProgressReporter;
  readonly tools?: FfmpegTools;
}

const width = 1280;
const height = 720;
const frameRate = 30;
const segmentSeconds = 2;

/** lavfi sources, from cheap to expensive to encode; each gets `d` seconds. */
const sceneSources: readonly ((d: number) => string)[] = [
  (d) => `testsrc2=s=${width}x${height}:r=${frameRate}:d=${d}`,
  (d) => `mandelbrot=s=${width}x${height}:r=${frameRate},trim=duration=${d}`,
  (d) => `smptehdbars=s=${width}x${height}:r=${frameRate}:d=${d}`,
  (d) => `gradients=s=${width}x${height}:r=${frameRate}:d=${d}:speed=0.05,noise=alls=40:allf=t`,
  (d) =>
    `life=s=${width}x${height}:r=` +
    `${frameRate}:mold=10:ratio=0.1:death_color=#C83232:life_color=#00ff00,trim=duration=` +
    `${d}`,
  (d) => `sierpinski=s=${width}x${height}:r=${frameRate},trim=duration=${d}`,
];

/** Scene lengths: whole segments, about six scenes per clip, 2 to 10 s each. */
export function sceneDurations(totalSec: number): number[] {
  const sceneSec = Math.min(10, Math.max(segmentSeconds, segmentSeconds * Math.round(totalSec / 6 / segmentSeconds)));
  const scenes: number[] = [];
  for (let at = 0; at < totalSec - 1e-9; at += sceneSec) scenes.push(Math.min(sceneSec, totalSec - at));
  return scenes;
}

export async function generateDemoMedia(options: DemoOptions): Promise<void> {
  const durationSec = options.durationSec ?? 120;
  if (!Number.isFinite(durationSec) || durationSec < 4 || durationSec > 3600) {
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `--duration must be between 4 and 3600 seconds (got ${options.durationSec})`,
    );
  }
  await encodeAndPackage(demoEncodeSource(durationSec), {
    outDir: options.outDir,
    rungs: demoRungs(),
    segmentSeconds,
    overwrite: options.overwrite ?? false,
    ...(options.tools === undefined ? {} : { tools: options.tools }),
    ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
  });
}

/** The demo's ladder: 234p/360p/540p/720p at ~400k/800k/1.4M/2.8M. */
export function demoRungs(): Rung[] {
  return fitLadder(parseLadder(defaultLadderSpec), { width, height }, { allowUpscale: false, dropTaller: false });
}

/** The demo clip as ffmpeg input: its scenes concatenated, and a beeping tone ~50 ms shorter. */
export function demoEncodeSource(durationSec: number): EncodeSource {
  const scenes = sceneDurations(durationSec);
  const inputArgs: string[] = [];
  scenes.forEach((d, i) => inputArgs.push('-f', 'lavfi', '-i', sceneSources[i % sceneSources.length]!(d)));
  const audioDurationSec = durationSec - 0.05;
  inputArgs.push(
    '-f',
    'lavfi',
    '-i',
    `sine=frequency=440:beep_factor=4:sample_rate=48000,atrim=duration=${audioDurationSec.toFixed(3)}`,
  );
  const concatInputs = scenes.map((_, i) => `[${i}:v]format=yuv420p,setsar=1[c${i}]`).join(';');
  const concatLabels = scenes.map((_, i) => `[c${i}]`).join('');
  return {
    inputArgs,
    videoGraph: `${concatInputs};${concatLabels}concat=n=${scenes.length}:v=1:a=0[src]`,
    audioMap: `${scenes.length}:a`,
    durationSec,
    audioDurationSec,
    frameRate,
    displayAspect: `${width}/${height}`,
  };
}
