/**
 * A population of access links, one per viewer, as in the Trickle paper's data centres: each
 * viewer has its own rate, propagation RTT and bottleneck buffer, drawn from a named distribution
 * (seeded) or read from a CSV. Pure: sampling, CSV rows, addresses.
 *
 * The named distributions are fitted to the paper (Ghobadi et al., ATC 2012):
 * - rate: the shares of flows per bandwidth bucket of its Table 2 (DC1: 1 % < 0.5 Mbit/s, 3 %
 *   0.5-1, 10 % 1-2, 28 % 2-4, 35 % 4-8, 23 % >= 8; DC2: 39, 26, 17, 9, 6, 3 %), log-uniform
 *   within a bucket, the open ends closed at 0.2 (DC2 0.15) and 25 Mbit/s. Medians: DC1 ~4.7
 *   (the paper: 6), DC2 ~0.67 (the paper: 0.7).
 * - propagation RTT: log-normal, DC1 median 45 ms (Western Europe to a European data centre),
 *   DC2 median 180 ms (India); sigma 0.5, clamped.
 * - buffer: in milliseconds of the viewer's own rate, log-normal. DC1 median 60 ms, so a bulk
 *   startup ends near the paper's ~99 ms srtt; DC2 median 400 ms, sigma 0.9, which puts ~20 % of
 *   a saturated link's srtt samples over 1 s and a few per cent near 4 s ("alarmingly
 *   over-buffered", section 5.3; its RTT_startup average is 556 ms).
 * - uplink: a quarter of the downlink (ADSL-like), at least 256 kbit/s, the same buffer time.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { mersenne } from 'pure-rand/generator/mersenne';
import { E2eError } from '../errors.js';
import {
  minimumBufferBytes,
  parseBytes,
  parseDurationMs,
  parseLoss,
  parseRate,
  type DirectionSpec,
} from './link-spec.js';

/** One viewer's access link as drawn: downlink rate, propagation RTT, downlink buffer, random loss. */
export interface LinkDraw {
  readonly rateBps: number;
  readonly rttMs: number;
  readonly bufferBytes: number;
  readonly lossRate: number;
}

/** A viewer's link in the lab: its address on the access network and both directions. */
export interface AccessLink {
  readonly viewer: number;
  readonly address: string;
  readonly down: DirectionSpec;
  readonly up: DirectionSpec;
}

export interface LinkPopulation {
  /** Where the links came from: a distribution's name or "csv:<file>". */
  readonly source: string;
  readonly seed: number;
  /** The origin's own uplink, shared by every viewer's traffic. */
  readonly uplinkRateBps: number;
  readonly links: readonly AccessLink[];
}

interface Bucket {
  readonly share: number;
  readonly lowBps: number;
  readonly highBps: number;
}

interface LinkDistribution {
  readonly description: string;
  readonly rateBuckets: readonly Bucket[];
  readonly rtt: { readonly medianMs: number; readonly sigma: number; readonly minMs: number; readonly maxMs: number };
  readonly bufferTime: {
    readonly medianMs: number;
    readonly sigma: number;
    readonly minMs: number;
    readonly maxMs: number;
  };
}

const mbit = 1e6;

export const linkDistributions: Readonly<Record<string, LinkDistribution>> = {
  'dc1-like': {
    description: "the paper's DC1 (Western Europe): median ~5 Mbit/s, RTT ~45 ms, buffers ~60 ms of the link",
    rateBuckets: [
      { share: 0.01, lowBps: 0.2 * mbit, highBps: 0.5 * mbit },
      { share: 0.03, lowBps: 0.5 * mbit, highBps: 1 * mbit },
      { share: 0.1, lowBps: 1 * mbit, highBps: 2 * mbit },
      { share: 0.28, lowBps: 2 * mbit, highBps: 4 * mbit },
      { share: 0.35, lowBps: 4 * mbit, highBps: 8 * mbit },
      { share: 0.23, lowBps: 8 * mbit, highBps: 25 * mbit },
    ],
    rtt: { medianMs: 45, sigma: 0.5, minMs: 10, maxMs: 300 },
    bufferTime: { medianMs: 60, sigma: 0.6, minMs: 10, maxMs: 1000 },
  },
  'dc2-like': {
    description: "the paper's DC2 (India): median ~0.7 Mbit/s, RTT ~180 ms, deep buffers ~400 ms of the link",
    rateBuckets: [
      { share: 0.39, lowBps: 0.15 * mbit, highBps: 0.5 * mbit },
      { share: 0.26, lowBps: 0.5 * mbit, highBps: 1 * mbit },
      { share: 0.17, lowBps: 1 * mbit, highBps: 2 * mbit },
      { share: 0.09, lowBps: 2 * mbit, highBps: 4 * mbit },
      { share: 0.06, lowBps: 4 * mbit, highBps: 8 * mbit },
      { share: 0.03, lowBps: 8 * mbit, highBps: 25 * mbit },
    ],
    rtt: { medianMs: 180, sigma: 0.5, minMs: 60, maxMs: 800 },
    bufferTime: { medianMs: 400, sigma: 0.9, minMs: 50, maxMs: 4000 },
  },
};

function fail(message: string): never {
  throw new E2eError('E2E_ERR_POPULATION', message);
}

/** Most viewers one lab addresses: 10.73.1.1 .. 10.73.200.254 (10.73.0.x is the origin's and the lab's own). */
export const maxViewers = 200 * 254;

/** Viewer i's address on the access network (10.73.0.0/16). */
export function viewerAddress(viewer: number): string {
  if (!Number.isInteger(viewer) || viewer < 0 || viewer >= maxViewers)
    fail(`viewer ${viewer} is outside 0..${maxViewers - 1}`);
  return `10.73.${1 + Math.floor(viewer / 254)}.${1 + (viewer % 254)}`;
}

/** Standard normal draws from a uniform source (Box-Muller, the cosine branch). */
function normal(uniform: () => number): number {
  const u = Math.max(uniform(), Number.MIN_VALUE);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * uniform());
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value));
}

/** `count` links drawn from a named distribution; the same seed gives the same links. */
export function drawLinks(distribution: string, count: number, seed: number): LinkDraw[] {
  const shape = linkDistributions[distribution];
  if (shape === undefined)
    fail(`no link distribution "${distribution}"; known: ${Object.keys(linkDistributions).join(', ')} (or a CSV file)`);
  if (!Number.isInteger(count) || count < 1 || count > maxViewers)
    fail(`a population needs 1..${maxViewers} viewers, not ${count}`);
  const generator = mersenne(seed);
  const uniform = () => uniformFloat64(generator);
  return Array.from({ length: count }, () => {
    const pick = uniform();
    let cumulativeShare = 0;
    const bucket =
      shape.rateBuckets.find((b) => {
        cumulativeShare += b.share;
        return pick < cumulativeShare;
      }) ?? shape.rateBuckets[shape.rateBuckets.length - 1]!;
    const rateBps = Math.round(bucket.lowBps * (bucket.highBps / bucket.lowBps) ** uniform());
    const rttMs = clamp(
      shape.rtt.medianMs * Math.exp(shape.rtt.sigma * normal(uniform)),
      shape.rtt.minMs,
      shape.rtt.maxMs,
    );
    const bufferMs = clamp(
      shape.bufferTime.medianMs * Math.exp(shape.bufferTime.sigma * normal(uniform)),
      shape.bufferTime.minMs,
      shape.bufferTime.maxMs,
    );
    return {
      rateBps,
      rttMs: Math.round(rttMs * 10) / 10,
      bufferBytes: Math.max(minimumBufferBytes, Math.round((rateBps / 8) * (bufferMs / 1000))),
      lossRate: 0,
    };
  });
}

/**
 * Links from CSV text with a header naming the columns `rate`, `rtt`, `buffer` and optionally
 * `loss`, in the lab's units ("6mbit", "40ms", "64kb", "0.5%"); `#` starts a comment.
 */
export function parseLinksCsv(text: string, source = 'CSV'): LinkDraw[] {
  let rows: Record<string, string>[];
  try {
    rows = parseCsv(text, {
      columns: (header: string[]) => header.map((name) => name.trim().toLowerCase()),
      skip_empty_lines: true,
      trim: true,
      comment: '#',
    }) as Record<string, string>[];
  } catch (error) {
    fail(`${source} is not CSV: ${(error as Error).message}`);
  }
  if (rows.length === 0) fail(`${source} has no link rows (a header "rate,rtt,buffer[,loss]" and one row per viewer)`);
  return rows.map((row, index) => {
    const at = `${source} row ${index + 1}`;
    for (const column of ['rate', 'rtt', 'buffer'])
      if (row[column] === undefined || row[column] === '')
        fail(`${at} has no "${column}" (the header must name rate, rtt, buffer and optionally loss)`);
    try {
      return {
        rateBps: parseRate(row.rate!),
        rttMs: parseDurationMs(row.rtt!),
        bufferBytes: Math.max(minimumBufferBytes, parseBytes(row.buffer!)),
        lossRate: row.loss === undefined || row.loss === '' ? 0 : parseLoss(row.loss),
      };
    } catch (error) {
      fail(`${at}: ${(error as Error).message}`);
    }
  });
}

/** The uplink of a drawn link: a quarter of the downlink, at least 256 kbit/s, the same buffer time. */
function uplinkOf(draw: LinkDraw): DirectionSpec {
  const rateBps = Math.max(256_000, draw.rateBps / 4);
  const bufferTimeSec = draw.bufferBytes / (draw.rateBps / 8);
  return {
    rateBps,
    delayMs: draw.rttMs / 2,
    lossRate: 0,
    bufferBytes: Math.max(minimumBufferBytes, Math.round((rateBps / 8) * bufferTimeSec)),
  };
}

export interface PopulationOptions {
  readonly source: string;
  readonly seed: number;
  /** The origin's uplink; default 1 Gbit/s (not the bottleneck, as in the paper). */
  readonly uplinkRateBps?: number | undefined;
}

/** Viewer i gets draws[i] on address viewerAddress(i); the RTT is split evenly, loss on the downlink. */
export function linkPopulation(draws: readonly LinkDraw[], options: PopulationOptions): LinkPopulation {
  if (draws.length === 0 || draws.length > maxViewers)
    fail(`a population needs 1..${maxViewers} viewers, not ${draws.length}`);
  return {
    source: options.source,
    seed: options.seed,
    uplinkRateBps: options.uplinkRateBps ?? 1e9,
    links: draws.map((draw, viewer) => ({
      viewer,
      address: viewerAddress(viewer),
      down: { rateBps: draw.rateBps, delayMs: draw.rttMs / 2, lossRate: draw.lossRate, bufferBytes: draw.bufferBytes },
      up: uplinkOf(draw),
    })),
  };
}

/** Quantiles of a population's link figures, for a one-line summary. */
export function describePopulation(population: LinkPopulation): string {
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)]!;
  };
  const links = population.links;
  return (
    `${links.length} viewers from ${population.source} (seed ${population.seed}): ` +
    `median ${(median(links.map((l) => l.down.rateBps)) / 1e6).toFixed(2)} Mbit/s, ` +
    `${median(links.map((l) => l.down.delayMs + l.up.delayMs)).toFixed(0)} ms RTT, ` +
    `${median(links.map((l) => (l.down.bufferBytes * 8 * 1000) / l.down.rateBps)).toFixed(0)} ms buffer`
  );
}
