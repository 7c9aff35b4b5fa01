/**
 * CMCD (CTA-5004) in, a delivery rate out. Parsing uses the SVTA common-media-library; the rate
 * rule is the origin's: at startup (`su`, or a buffer below `lowBufferMs`) full speed; otherwise
 * a multiplier falling linearly from 3 at an empty buffer to 1.5 at a full one (the Sammy result,
 * SIGCOMM'23) times the next higher rung's bitrate (or `br` at the top, or the segment's own
 * rate without CMCD), never above `rtp` when the client sends it.
 */
import { fromCmcdHeaders, fromCmcdQuery, type Cmcd } from '@svta/common-media-library/cmcd';

export function readCmcd(query: string | undefined, headers: Record<string, string | string[] | undefined>): Cmcd | undefined {
  const fromQuery = query === undefined ? undefined : new URLSearchParams(query).get('CMCD');
  if (fromQuery !== null && fromQuery !== undefined) {
    try {
      return fromCmcdQuery(`CMCD=${encodeURIComponent(fromQuery)}`);
    } catch {
      return undefined;
    }
  }
  const cmcdHeaders: Record<string, string> = {};
  for (const name of ['cmcd-request', 'cmcd-object', 'cmcd-status', 'cmcd-session']) {
    const value = headers[name];
    if (typeof value === 'string') cmcdHeaders[name] = value;
  }
  if (Object.keys(cmcdHeaders).length === 0) return undefined;
  try {
    return fromCmcdHeaders(cmcdHeaders) as Cmcd;
  } catch {
    return undefined;
  }
}

export interface CmcdRateOptions {
  readonly multiplierAtEmpty: number;
  readonly multiplierAtFull: number;
  /** Buffer (ms) the multiplier reaches `multiplierAtFull` at. */
  readonly fullBufferMs: number;
  /** Below this buffer the response goes at full speed, like startup. */
  readonly lowBufferMs: number;
}

export const defaultCmcdRateOptions: CmcdRateOptions = { multiplierAtEmpty: 3, multiplierAtFull: 1.5, fullBufferMs: 30_000, lowBufferMs: 5_000 };

export type CmcdRate = { readonly fullSpeed: true; readonly reason: string } | { readonly fullSpeed: false; readonly rateBitsPerSec: number; readonly reason: string };

/**
 * @param renditionBitratesBps the asset's video renditions' declared bitrates, ascending
 * @param segmentBitrateBps the segment's own rate (fallback without CMCD)
 */
export function cmcdRate(cmcd: Cmcd | undefined, renditionBitratesBps: readonly number[], segmentBitrateBps: number, options: CmcdRateOptions = defaultCmcdRateOptions): CmcdRate {
  if (cmcd === undefined) return { fullSpeed: false, rateBitsPerSec: options.multiplierAtFull * segmentBitrateBps, reason: 'no CMCD: segment rate x the full-buffer multiplier' };
  if (cmcd.su === true) return { fullSpeed: true, reason: 'CMCD su: startup' };
  const bufferMs = cmcd.bl;
  if (bufferMs !== undefined && bufferMs < options.lowBufferMs) return { fullSpeed: true, reason: `CMCD bl ${bufferMs} ms below ${options.lowBufferMs} ms` };
  const fill = bufferMs === undefined ? 1 : Math.min(1, Math.max(0, bufferMs / options.fullBufferMs));
  const multiplier = options.multiplierAtEmpty + (options.multiplierAtFull - options.multiplierAtEmpty) * fill;
  const currentBps = cmcd.br !== undefined ? cmcd.br * 1000 : segmentBitrateBps;
  const next = renditionBitratesBps.find((bitrate) => bitrate > currentBps * 1.001);
  const baseBps = next ?? currentBps;
  let rate = multiplier * baseBps;
  let reason = `${multiplier.toFixed(2)} x ${next === undefined ? 'br (top rung)' : 'next rung'} ${Math.round(baseBps / 1000)} kbit/s`;
  if (cmcd.rtp !== undefined && cmcd.rtp * 1000 < rate) {
    rate = cmcd.rtp * 1000;
    reason += `, capped by rtp ${cmcd.rtp} kbit/s`;
  }
  return { fullSpeed: false, rateBitsPerSec: rate, reason };
}
