import assert from 'node:assert/strict';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import { withMediaFile } from '../../src/media/boxes.js';
import { parseSidx, readSegmentIndex } from '../../src/media/sidx.js';

function box(type: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + payload.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, payload]);
}

/** A version 0 sidx: each reference [isIndex, size, duration]. */
function sidx(
  timescale: number,
  earliest: number,
  firstOffset: number,
  references: readonly [boolean, number, number][],
): Buffer {
  const payload = Buffer.alloc(4 + 4 + 4 + 8 + 4 + references.length * 12);
  payload.writeUInt32BE(0, 0); // version 0, flags
  payload.writeUInt32BE(1, 4); // reference_ID
  payload.writeUInt32BE(timescale, 8);
  payload.writeUInt32BE(earliest, 12);
  payload.writeUInt32BE(firstOffset, 16);
  payload.writeUInt16BE(references.length, 22);
  references.forEach(([isIndex, size, duration], i) => {
    payload.writeUInt32BE((isIndex ? 0x80000000 : 0) + size, 24 + i * 12);
    payload.writeUInt32BE(duration, 28 + i * 12);
    payload.writeUInt32BE(0x90000000, 32 + i * 12);
  });
  return box('sidx', payload);
}

describe('segment index (sidx)', () => {
  it('lists subsegments after the box, from first_offset, with their times', () => {
    const buffer = sidx(1000, 500, 10, [
      [false, 300, 2000],
      [false, 200, 1500],
    ]);
    const parsed = parseSidx(buffer, 1000, 'x');
    assert.equal(parsed.timescale, 1000);
    assert.deepEqual(
      parsed.references.map((r) => [r.isIndex, r.offset, r.sizeBytes, r.startTicks, r.durationTicks]),
      [
        [false, 1000 + buffer.length + 10, 300, 500, 2000],
        [false, 1000 + buffer.length + 10 + 300, 200, 2500, 1500],
      ],
    );
  });

  it('follows a hierarchical index down to its media subsegments, and finds the sidx without indexRange', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-sidx-'));
    // ftyp, a top sidx pointing at two sidx boxes, each followed by its subsegments' bytes.
    const ftyp = box('ftyp', Buffer.from('isom\0\0\0\0isom', 'latin1'));
    const media = (size: number) => box('mdat', Buffer.alloc(size - 8));
    const leafA = sidx(90000, 0, 0, [
      [false, 100, 180000],
      [false, 120, 180000],
    ]);
    const leafB = sidx(90000, 360000, 0, [[false, 140, 90000]]);
    const top = sidx(90000, 0, 0, [
      [true, leafA.length + 220, 360000],
      [true, leafB.length + 140, 90000],
    ]);
    const file = Buffer.concat([ftyp, top, leafA, media(100), media(120), leafB, media(140)]);
    const path = join(dir, 'on-demand.mp4');
    await writeFile(path, file);
    const index = await withMediaFile(path, (reader) => readSegmentIndex(reader, undefined));
    const firstMedia = ftyp.length + top.length + leafA.length;
    assert.deepEqual(
      index.subsegments.map((s) => [s.offset, s.sizeBytes, s.startTicks, s.durationTicks]),
      [
        [firstMedia, 100, 0, 180000],
        [firstMedia + 100, 120, 180000, 180000],
        [firstMedia + 220 + leafB.length, 140, 360000, 90000],
      ],
    );
    // At a given indexRange: the same.
    const atRange = await withMediaFile(path, (reader) =>
      readSegmentIndex(reader, { offset: ftyp.length, sizeBytes: top.length }),
    );
    assert.deepEqual(atRange.subsegments, index.subsegments);
  });

  it('refuses an index that points past the end of its file, or a file without one', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-sidx-'));
    const path = join(dir, 'short.mp4');
    await writeFile(path, Buffer.concat([sidx(1000, 0, 0, [[false, 5000, 2000]]), box('mdat', Buffer.alloc(10))]));
    const corrupt = (error: unknown) => isOriginError(error, 'ORIGIN_ERR_CORRUPT_MEDIA');
    await assert.rejects(
      withMediaFile(path, (reader) => readSegmentIndex(reader, undefined)),
      (error: unknown) => corrupt(error) && /past the end/.test((error as Error).message),
    );
    const none = join(dir, 'none.mp4');
    await writeFile(none, box('mdat', Buffer.alloc(10)));
    await assert.rejects(
      withMediaFile(none, (reader) => readSegmentIndex(reader, undefined)),
      (error: unknown) => corrupt(error) && /no sidx/.test((error as Error).message),
    );
  });
});
