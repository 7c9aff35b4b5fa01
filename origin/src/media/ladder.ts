/**
 * Encoding ladders: parsing `--ladder` specs and fitting a ladder to a source without upscaling.
 * Spec: comma-separated rungs, each `<height>p:<bitrate>` or `<width>x<height>:<bitrate>`
 * (`@` works in place of `:`), bitrate like `400k`, `1.4M` or `800000`.
 */
import { OriginError } from '../errors.js';

export interface Rung {
  readonly width: number;
  readonly height: number;
  /** Nominal (target mean) video bitrate. */
  readonly bitrateBps: number;
}

export interface RungRequest {
  readonly width: number | undefined;
  readonly height: number;
  readonly bitrateBps: number;
}

/** The demo ladder; widths follow the source's aspect ratio (16:9 gives 416, 640, 960, 1280). */
export const defaultLadderSpec = '234p:400k,360p:800k,540p:1400k,720p:2800k';

export function parseBitrate(text: string): number {
  const match = /^(\d+(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  if (match === null) throw new OriginError('ORIGIN_ERR_LADDER', `bitrate "${text}" is not a number with an optional k or M suffix`, { value: text });
  const scale = match[2] === '' ? 1 : match[2]!.toLowerCase() === 'k' ? 1e3 : 1e6;
  const bps = Math.round(Number(match[1]) * scale);
  if (bps < 16_000 || bps > 200e6) throw new OriginError('ORIGIN_ERR_LADDER', `bitrate "${text}" is outside 16k..200M`, { value: text });
  return bps;
}

export function parseLadder(spec: string): RungRequest[] {
  const rungs = spec
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const match = /^(?:(\d+)x(\d+)|(\d+)p)[:@](.+)$/.exec(part);
      if (match === null) throw new OriginError('ORIGIN_ERR_LADDER', `ladder rung "${part}" is not <height>p:<bitrate> or <width>x<height>:<bitrate>`, { rung: part });
      const width = match[1] === undefined ? undefined : Number(match[1]);
      const height = Number(match[2] ?? match[3]);
      if (height < 16 || height > 4320 || (width !== undefined && (width < 16 || width > 7680))) {
        throw new OriginError('ORIGIN_ERR_LADDER', `ladder rung "${part}" has an unusable size`, { rung: part });
      }
      return { width, height, bitrateBps: parseBitrate(match[4]!) };
    });
  if (rungs.length === 0) throw new OriginError('ORIGIN_ERR_LADDER', 'the ladder is empty', { spec });
  const heights = rungs.map((r) => r.height);
  if (new Set(heights).size !== heights.length) throw new OriginError('ORIGIN_ERR_LADDER', 'two rungs share a height', { spec });
  return [...rungs].sort((a, b) => a.height - b.height);
}

const even = (value: number) => Math.max(2, 2 * Math.round(value / 2));

/**
 * Sizes each rung for a source of `sourceWidth` x `sourceHeight` display pixels, keeping the
 * source's aspect ratio. Rungs taller than the source are an error unless `allowUpscale`;
 * with `dropTaller` (the default ladder), they are left out instead.
 */
export function fitLadder(
  requests: readonly RungRequest[],
  source: { width: number; height: number },
  options: { allowUpscale: boolean; dropTaller: boolean },
): Rung[] {
  const aspect = source.width / source.height;
  const fitted: Rung[] = [];
  for (const request of requests) {
    if (request.height > source.height && !options.allowUpscale) {
      if (options.dropTaller) continue;
      throw new OriginError(
        'ORIGIN_ERR_LADDER',
        `rung ${request.height}p would upscale the ${source.width}x${source.height} source; remove it, or pass --force to upscale anyway`,
        { rungHeight: request.height, sourceHeight: source.height },
      );
    }
    fitted.push({ width: request.width ?? even(request.height * aspect), height: request.height, bitrateBps: request.bitrateBps });
  }
  if (fitted.length === 0) {
    throw new OriginError('ORIGIN_ERR_LADDER', `every rung of the ladder is taller than the ${source.width}x${source.height} source; give a --ladder that fits`, { sourceHeight: source.height });
  }
  return fitted;
}
