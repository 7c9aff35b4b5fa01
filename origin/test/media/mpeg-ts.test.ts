import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { tsTimestamps, typicalStepTicks } from '../../src/media/mpeg-ts.js';

function timestampBytes(prefix: number, ticks: number): number[] {
  return [
    (prefix << 4) | (Math.floor(ticks / 2 ** 30) << 1) | 1,
    Math.floor(ticks / 2 ** 22) & 0xff,
    ((Math.floor(ticks / 2 ** 15) & 0x7f) << 1) | 1,
    Math.floor(ticks / 2 ** 7) & 0xff,
    ((ticks & 0x7f) << 1) | 1,
  ];
}

/** One 188-byte TS packet starting a PES of `streamId` on `pid`, with PTS (and DTS when given). */
function pesPacket(pid: number, streamId: number, pts: number, dts?: number): Buffer {
  const packet = Buffer.alloc(188, 0xff);
  packet[0] = 0x47;
  packet[1] = 0x40 | (pid >> 8);
  packet[2] = pid & 0xff;
  packet[3] = 0x10;
  const header = [
    0,
    0,
    1,
    streamId,
    0,
    0,
    0x80,
    dts === undefined ? 0x80 : 0xc0,
    dts === undefined ? 5 : 10,
    ...timestampBytes(dts === undefined ? 2 : 3, pts),
    ...(dts === undefined ? [] : timestampBytes(1, dts)),
  ];
  Buffer.from(header).copy(packet, 4);
  return packet;
}

function continuation(pid: number): Buffer {
  const packet = Buffer.alloc(188, 0);
  packet[0] = 0x47;
  packet[1] = pid >> 8;
  packet[2] = pid & 0xff;
  packet[3] = 0x10;
  return packet;
}

describe('MPEG-TS timestamps', () => {
  it("reads the video stream's DTS (PTS where no DTS), passing audio and continuation packets", () => {
    const bytes = Buffer.concat([
      pesPacket(257, 0xc0, 126000),
      pesPacket(256, 0xe0, 129000, 126000),
      continuation(256),
      pesPacket(256, 0xe0, 138000, 129000),
      pesPacket(257, 0xc0, 127920),
      pesPacket(256, 0xe0, 132000),
    ]);
    const found = tsTimestamps(bytes, 'seg.ts');
    assert.equal(found.streamId, 0xe0);
    assert.deepEqual(found.ticks, [126000, 129000, 132000]);
    assert.equal(typicalStepTicks(found.ticks), 3000);
    assert.deepEqual(tsTimestamps(bytes, 'seg.ts', true).ticks, [126000]);
  });

  it('falls back to audio where there is no video, and unwraps the 33-bit clock', () => {
    const near = 2 ** 33 - 1000;
    const audio = tsTimestamps(Buffer.concat([pesPacket(257, 0xc0, near), pesPacket(257, 0xc0, 920)]), 'a.ts');
    assert.equal(audio.streamId, 0xc0);
    assert.deepEqual(audio.ticks, [near, 2 ** 33 + 920]);
  });

  it('refuses bytes that are not MPEG-TS', () => {
    assert.throws(() => tsTimestamps(Buffer.alloc(376), 'x.ts'), /not an MPEG-TS segment/);
    const lost = Buffer.concat([pesPacket(256, 0xe0, 1), Buffer.alloc(188)]);
    assert.throws(() => tsTimestamps(lost, 'x.ts'), /sync lost at byte 188/);
  });
});
