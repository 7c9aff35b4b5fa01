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
  if (match === null)
    throw new OriginError('ORIGIN_ERR_LADDER', `bitrate "${text}" is not a number with an optional k or M suffix`, {
      value: text,
    });
  const scale = match[2] === '' ? 1 : match[2]!.toLowerCase() === 'k' ? 1e3 : 1e6;
  const bps = Math.round(Number(match[1]) * scale);
  if (bps < 16_000 || bps > 200e6)
    throw new OriginError('ORIGIN_ERR_LADDER', `bitrate "${text}" is outside 16k..200M`, { value: text });
  return bps;
}

export function parseLadder(spec: string): RungRequest[] {
  const rungs = spec
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const match = /^(?:(\d+)x(\d+)|(\d+)p)[:@](.+)$/.exec(part);
      if (match === null)
        throw new OriginError(
          'ORIGIN_ERR_LADDER',
          `ladder rung "${part}" is not <height>p:<bitrate> or <width>x<height>:<bitrate>`,
          { rung: part },
        );
      const width = match[1] === undefined ? undefined : Number(match[1]);
      const height = Number(match[2] ?? match[3]);
      if (height < 16 || height > 4320 || (width !== undefined && (width < 16 || width > 7680))) {
        throw new OriginError('ORIGIN_ERR_LADDER', `ladder rung "${part}" has an unusable size`, { rung: part });
      }
      return { width, height, bitrateBps: parseBitrate(match[4]!) };
    });
  if (rungs.length === 0) throw new OriginError('ORIGIN_ERR_LADDER', 'the ladder is empty', { spec });
  const heights = rungs.map((r) => r.height);
  if (new Set(heights).size !== heights.length)
    throw new OriginError('ORIGIN_ERR_LADDER', 'two rungs share a height', { spec });
  return [...rungs].sort((a, b) => a.height - b.height);
}

const even = (value: number) => Math.max(2, 2 * Math.round(value / 2));

/**
 * Sizes each rung for a source of `source.width` x `source.height` display pixels, keeping its
 * aspect ratio. A `<N>p` rung is N pixels on the **short** side, as the name means to a viewer:
 * 720p of a 16:9 source is 1280x720, of a 9:16 phone video 720x1280, of a square one 720x720. A
 * `<W>x<H>` rung is taken as written. Rungs larger than the source are an error unless
 * `allowUpscale`; with `dropTaller` (the default ladder) they are left out, and the source's own
 * size takes the first one's place (its bitrate interpolated by pixel count), so a source between
 * two rungs keeps its resolution at the top of the ladder.
 */
export function fitLadder(
  requests: readonly RungRequest[],
  source: { width: number; height: number },
  options: { allowUpscale: boolean; dropTaller: boolean },
): Rung[] {
  const landscape = source.width >= source.height;
  const aspect = source.width / source.height;
  const sourceShort = Math.min(source.width, source.height);
  const atShortSide = (short: number): { width: number; height: number } =>
    landscape ? { width: even(short * aspect), height: short } : { width: short, height: even(short / aspect) };
  const fitted: Rung[] = [];
  let firstDropped: Rung | undefined;
  for (const request of requests) {
    const size =
      request.width === undefined ? atShortSide(request.height) : { width: request.width, height: request.height };
    const larger =
      request.width === undefined
        ? request.height > sourceShort
        : size.width > source.width || size.height > source.height;
    if (larger && !options.allowUpscale) {
      if (options.dropTaller) {
        firstDropped ??= { ...size, bitrateBps: request.bitrateBps };
        continue;
      }
      const name = request.width === undefined ? `${request.height}p` : `${request.width}x${request.height}`;
      throw new OriginError(
        'ORIGIN_ERR_LADDER',
        `rung ${name} would upscale the ${source.width}x${source.height} source; remove it, ` +
          `or pass --force to upscale anyway`,
        { rung: name, sourceWidth: source.width, sourceHeight: source.height },
      );
    }
    fitted.push({ ...size, bitrateBps: request.bitrateBps });
  }
  if (firstDropped !== undefined) {
    const top = atShortSide(even(sourceShort));
    const below = fitted.at(-1);
    const pixels = (rung: { width: number; height: number }) => rung.width * rung.height;
    if (below === undefined || pixels(top) > pixels(below)) {
      const share =
        below === undefined
          ? pixels(top) / pixels(firstDropped)
          : (pixels(top) - pixels(below)) / (pixels(firstDropped) - pixels(below));
      const fromBps = below?.bitrateBps ?? 0;
      fitted.push({ ...top, bitrateBps: Math.round(fromBps + (firstDropped.bitrateBps - fromBps) * share) });
    }
  }
  if (fitted.length === 0) {
    throw new OriginError(
      'ORIGIN_ERR_LADDER',
      `every rung of the ladder is larger than the ${source.width}x${source.height} source; give a --ladder that fits`,
      { sourceWidth: source.width, sourceHeight: source.height },
    );
  }
  return fitted;
}
