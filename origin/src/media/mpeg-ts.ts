/**
 * MPEG-TS timing for HLS segments (ISO/IEC 13818-1): the decode timestamps of a segment's PES
 * packets, of its video stream (its audio where it has no video), read from the packet headers.
 * A segment's media duration is the distance from its first access unit's DTS to the next
 * segment's, which is what a player's buffer gains from it; the last segment's is its span of DTS
 * plus one frame.
 */
import type { MediaFileReader } from './boxes.js';
import type { ByteSpan } from './manifest.js';

const packetBytes = 188;
const syncByte = 0x47;
const clockHz = 90_000;
/** PTS and DTS are 33-bit counters of the 90 kHz clock. */
const wrapTicks = 2 ** 33;

export interface TsTimestamps {
  /** The PES stream id the timestamps are of (0xe0-0xef video, 0xc0-0xdf audio, 0xbd private). */
  readonly streamId: number;
  /**
   * DTS (PTS where no DTS is sent) of each PES packet of that stream that starts in the bytes read, in 90 kHz ticks,
   * unwrapped.
   */
  readonly ticks: readonly number[];
  /** Whether every packet of the bytes was read (else the read stopped after the first timestamp). */
  readonly complete: boolean;
}

/** The timestamp field (5 bytes) at `at`. */
function timestamp(buffer: Buffer, at: number): number {
  return (
    ((buffer[at]! >> 1) & 0x07) * 2 ** 30 +
    (buffer[at + 1]! << 22) +
    ((buffer[at + 2]! >> 1) << 15) +
    (buffer[at + 3]! << 7) +
    (buffer[at + 4]! >> 1)
  );
}

function isVideo(streamId: number): boolean {
  return streamId >= 0xe0 && streamId <= 0xef;
}

function isAudio(streamId: number): boolean {
  return (streamId >= 0xc0 && streamId <= 0xdf) || streamId === 0xbd;
}

/**
 * The timestamps of the PES packets starting in `buffer` (whole TS packets from its start). With
 * `firstOnly` it stops at the first timestamp of a video stream (or, when the bytes hold none, of
 * an audio one).
 */
export function tsTimestamps(buffer: Buffer, source: string, firstOnly = false): TsTimestamps {
  const byPid = new Map<number, { streamId: number; ticks: number[] }>();
  let at = 0;
  if (buffer[0] !== syncByte) throw new Error(`${source}: not an MPEG-TS segment (no sync byte 0x47 at its start)`);
  for (; at + packetBytes <= buffer.length; at += packetBytes) {
    if (buffer[at] !== syncByte) throw new Error(`${source}: MPEG-TS sync lost at byte ${at}`);
    const payloadStart = (buffer[at + 1]! & 0x40) !== 0;
    if (!payloadStart) continue;
    const pid = ((buffer[at + 1]! & 0x1f) << 8) | buffer[at + 2]!;
    const adaptation = (buffer[at + 3]! >> 4) & 0x03;
    if ((adaptation & 0x01) === 0) continue;
    let payload = at + 4 + (adaptation === 0x03 ? 1 + buffer[at + 4]! : 0);
    if (payload + 14 > at + packetBytes) continue;
    // PES start code 00 00 01, then stream id; PSI (PAT, PMT) starts otherwise.
    if (buffer[payload] !== 0 || buffer[payload + 1] !== 0 || buffer[payload + 2] !== 1) continue;
    const streamId = buffer[payload + 3]!;
    if (!isVideo(streamId) && !isAudio(streamId)) continue;
    const flags = buffer[payload + 7]! >> 6;
    if (flags < 2) continue;
    payload += 9;
    const ticks = flags === 3 ? timestamp(buffer, payload + 5) : timestamp(buffer, payload);
    let stream = byPid.get(pid);
    if (stream === undefined) {
      stream = { streamId, ticks: [] };
      byPid.set(pid, stream);
    }
    const previous = stream.ticks[stream.ticks.length - 1];
    // Unwrap the 33-bit counter: a big step back is a wrap, not a reordering.
    stream.ticks.push(
      previous !== undefined && ticks < previous - wrapTicks / 2
        ? ticks + wrapTicks * Math.ceil((previous - ticks) / wrapTicks)
        : ticks,
    );
    if (firstOnly && isVideo(streamId)) return { streamId, ticks: stream.ticks, complete: false };
  }
  const streams = [...byPid.values()];
  const chosen = streams.find((s) => isVideo(s.streamId)) ?? streams.find((s) => isAudio(s.streamId));
  if (chosen === undefined) return { streamId: 0, ticks: [], complete: true };
  return {
    streamId: chosen.streamId,
    ticks: firstOnly ? chosen.ticks.slice(0, 1) : chosen.ticks,
    complete: !firstOnly,
  };
}

/**
 * Reads a TS segment's bytes (`span` of the file, or all of it); with `firstOnly`, only as far as its first video
 * timestamp.
 */
export async function readTsTimestamps(
  file: MediaFileReader,
  span: ByteSpan | undefined,
  firstOnly: boolean,
): Promise<TsTimestamps> {
  const start = span?.offset ?? 0;
  const size = span?.sizeBytes ?? file.sizeBytes;
  // A video segment's first access unit starts in its first packets; 188 kB covers any PAT/PMT and audio ahead of it.
  for (let length = Math.min(size, firstOnly ? 1000 * packetBytes : size); ; length = Math.min(size, length * 4)) {
    const bytes = await file.read(start, length - (length % packetBytes));
    let found: TsTimestamps;
    try {
      found = tsTimestamps(bytes, file.path, firstOnly);
    } catch (error) {
      throw file.corrupt((error as Error).message.replace(`${file.path}: `, ''), start);
    }
    if (!firstOnly || isVideo(found.streamId) || length >= size) return found;
  }
}

/** A stream's usual step between PES timestamps (the median), in ticks: one frame for video. */
export function typicalStepTicks(ticks: readonly number[]): number {
  const steps = ticks
    .slice(1)
    .map((t, i) => t - ticks[i]!)
    .filter((d) => d > 0)
    .sort((a, b) => a - b);
  return steps.length === 0 ? 0 : steps[Math.floor(steps.length / 2)]!;
}

export function ticksToSec(ticks: number): number {
  return ticks / clockHz;
}
