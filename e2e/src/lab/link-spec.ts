/**
 * What an emulated access link is: per direction a rate, a one-way propagation delay, a random
 * loss rate and a tail-drop bottleneck buffer, optionally a bandwidth trace for the downlink.
 * Pure: parsing of human units ("6mbit", "40ms", "0.5%") and BDP arithmetic.
 */
import { E2eError } from '../errors.js';
import type { Trace } from '@trickle/player-sim';

export interface DirectionSpec {
  readonly rateBps: number;
  readonly delayMs: number;
  /** Probability 0..1 that a packet is dropped at random. */
  readonly lossRate: number;
  readonly bufferBytes: number;
}

export interface LinkSpec {
  /** origin -> player (the video direction) */
  readonly down: DirectionSpec;
  /** player -> origin (requests and ACKs) */
  readonly up: DirectionSpec;
  /** Seed of the random loss, so a run can be repeated exactly. */
  readonly seed: number;
  /** Replayed on the downlink rate (and delay, where the trace has it). */
  readonly trace?: Trace | undefined;
}

function fail(message: string): never {
  throw new E2eError('E2E_ERR_LINK_SPEC', message);
}

/** "6mbit", "700kbit", "1.5gbit", "6000000" (bit/s) -> bit/s. */
export function parseRate(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit|bps|kbps|mbps|gbps)?$/i.exec(text.trim());
  if (match === null) fail(`rate "${text}" is not like 6mbit, 700kbit or 6000000`);
  const unit = (match[2] ?? 'bit').toLowerCase().replace('bps', 'bit');
  const scale = { bit: 1, kbit: 1e3, mbit: 1e6, gbit: 1e9 }[unit as 'bit' | 'kbit' | 'mbit' | 'gbit'];
  const bps = Number(match[1]) * scale;
  if (bps < 8_000 || bps > 10e9) fail(`rate "${text}" is outside 8kbit..10gbit`);
  return bps;
}

/** "40ms", "0.3s", "40" (ms) -> ms. */
export function parseDurationMs(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(us|ms|s)?$/i.exec(text.trim());
  if (match === null) fail(`duration "${text}" is not like 40ms or 0.3s`);
  const unit = (match[2] ?? 'ms').toLowerCase();
  const ms = Number(match[1]) * (unit === 's' ? 1000 : unit === 'us' ? 0.001 : 1);
  if (ms > 10_000) fail(`duration "${text}" is longer than 10 s`);
  return ms;
}

/** "0.5%" or "0.005" -> 0.005. */
export function parseLoss(text: string): number {
  const trimmed = text.trim();
  const percent = trimmed.endsWith('%');
  const value = Number(percent ? trimmed.slice(0, -1) : trimmed);
  if (!Number.isFinite(value) || value < 0) fail(`loss "${text}" is not like 0.5% or 0.005`);
  const rate = percent ? value / 100 : value;
  if (rate >= 1) fail(`loss "${text}" would drop everything`);
  return rate;
}

/** "64kb", "62500", "1mb" (bytes) -> bytes. */
export function parseBytes(text: string): number {
  const match = /^(\d+(?:\.\d+)?)\s*(b|kb|mb)?$/i.exec(text.trim());
  if (match === null) fail(`size "${text}" is not like 64kb or 62500`);
  const scale = { b: 1, kb: 1000, mb: 1e6 }[(match[2] ?? 'b').toLowerCase() as 'b' | 'kb' | 'mb'];
  return Math.round(Number(match[1]) * scale);
}

export function bdpBytes(rateBps: number, rttMs: number): number {
  return (rateBps / 8) * (rttMs / 1000);
}

/**
 * A TBF needs room for at least a couple of full frames, or it drops everything bigger than its
 * limit; below that, the buffer is raised to two MTU-sized frames.
 */
export const minimumBufferBytes = 2 * 1514;

export interface SymmetricLinkOptions {
  readonly rateBps: number;
  readonly rttMs: number;
  readonly bufferBdp?: number | undefined;
  readonly bufferBytes?: number | undefined;
  readonly lossRate?: number | undefined;
  /** Uplink rate; default the downlink rate (requests and ACKs are small). */
  readonly upRateBps?: number | undefined;
  readonly seed?: number | undefined;
  readonly trace?: Trace | undefined;
}

/** The common case: RTT split evenly between the directions, loss on the downlink only. */
export function symmetricLink(options: SymmetricLinkOptions): LinkSpec {
  if (options.bufferBdp !== undefined && options.bufferBytes !== undefined)
    fail('give the buffer in BDP multiples or in bytes, not both');
  if (!(options.rttMs >= 0)) fail('rtt must be >= 0');
  const bufferFor = (rateBps: number) =>
    Math.max(
      minimumBufferBytes,
      Math.round(options.bufferBytes ?? (options.bufferBdp ?? 2) * bdpBytes(rateBps, options.rttMs)),
    );
  const upRateBps = options.upRateBps ?? options.rateBps;
  return {
    down: {
      rateBps: options.rateBps,
      delayMs: options.rttMs / 2,
      lossRate: options.lossRate ?? 0,
      bufferBytes: bufferFor(options.rateBps),
    },
    up: { rateBps: upRateBps, delayMs: options.rttMs / 2, lossRate: 0, bufferBytes: bufferFor(upRateBps) },
    seed: options.seed ?? 1,
    trace: options.trace,
  };
}
