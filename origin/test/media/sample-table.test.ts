import assert from 'node:assert/strict';
import { join } from 'node:path';
import { before, describe, it } from 'node:test';
import { ffprobe } from '../../src/media/ffmpeg.js';
import { ByteTimeMap, readProgressiveLayout, type ProgressiveLayout } from '../../src/media/sample-table.js';
import { demoDir } from '../helpers/media.js';

interface ProbePacket {
  stream_index: number;
  pos: string;
  size: string;
  dts_time: string;
  duration_time: string;
}

describe('progressive MP4 sample tables', () => {
  const file = () => join(demoDir(), 'progressive.mp4');
  let layout: ProgressiveLayout;
  let packets: ProbePacket[];

  before(async () => {
    layout = await readProgressiveLayout(file());
    const probe = await ffprobe(file(), [
      '-show_packets',
      '-show_entries',
      'packet=stream_index,pos,size,dts_time,duration_time',
    ]);
    packets = (probe as unknown as { packets: ProbePacket[] }).packets;
  });

  it('lists every sample ffprobe lists, at the same byte offset and size', () => {
    const total = layout.tracks.reduce((sum, t) => sum + t.sizes.length, 0);
    assert.equal(total, packets.length);
    const samples = new Map<number, number>();
    for (const track of layout.tracks) track.offsets.forEach((offset, i) => samples.set(offset, track.sizes[i]!));
    for (const packet of packets)
      assert.equal(samples.get(Number(packet.pos)), Number(packet.size), `packet at ${packet.pos}`);
  });

  it('gives each sample the decode time and duration ffprobe gives it', () => {
    const video = layout.tracks.find((t) => t.kind === 'video')!;
    const byPos = new Map(packets.map((p) => [Number(p.pos), p]));
    for (let i = 0; i < video.sizes.length; i++) {
      const packet = byPos.get(video.offsets[i]!)!;
      assert.ok(
        Math.abs(video.decodeTimesSec[i]! - Number(packet.dts_time)) < 1e-4,
        `sample ${i}: ${video.decodeTimesSec[i]} vs ${packet.dts_time}`,
      );
      assert.ok(Math.abs(video.durationsSec[i]! - Number(packet.duration_time)) < 1e-4);
    }
  });

  it('maps bytes to media time consistently with the packet list', () => {
    const map = new ByteTimeMap(layout);
    const video = layout.tracks.find((t) => t.kind === 'video')!;
    const videoIndex = packets.find((p) => Number(p.pos) === video.offsets[0])!.stream_index;
    const videoPackets = packets
      .filter((p) => p.stream_index === videoIndex)
      .sort((a, b) => Number(a.pos) - Number(b.pos));
    let complete = 0;
    for (const packet of videoPackets) {
      complete = Math.max(complete, Number(packet.dts_time) + Number(packet.duration_time));
      const end = Number(packet.pos) + Number(packet.size);
      assert.ok(Math.abs(map.mediaTimeAtByte(end) - Math.max(0, complete)) < 1e-4, `at byte ${end}`);
      assert.ok(map.byteAtMediaTime(map.mediaTimeAtByte(end)) <= end);
    }
    assert.equal(map.mediaTimeAtByte(0), 0);
    assert.ok(Math.abs(map.mediaTimeAtByte(layout.fileSizeBytes) - layout.durationSec) < 0.1);
  });

  it('attributes a byte range the playback time it carries', () => {
    const map = new ByteTimeMap(layout);
    const whole = map.mediaDurationOfRange(0, layout.fileSizeBytes - 1);
    assert.ok(Math.abs(whole - layout.durationSec) < 0.1);
    const halfway = map.byteAtMediaTime(layout.durationSec / 2);
    const firstHalf = map.mediaDurationOfRange(0, halfway - 1);
    const secondHalf = map.mediaDurationOfRange(halfway, layout.fileSizeBytes - 1);
    assert.ok(Math.abs(firstHalf + secondHalf - whole) < 1e-9);
    assert.ok(firstHalf >= layout.durationSec / 2 - 1e-9);
  });
});
