import assert from 'node:assert/strict';
import { readFile, writeFile, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { isOriginError } from '../../src/errors.js';
import { BoxReader, scanTopLevelBoxes, withMediaFile } from '../../src/media/boxes.js';
import { parseInitSegment, readSegmentTiming } from '../../src/media/fragments.js';
import { readProgressiveLayout } from '../../src/media/sample-table.js';
import { demoDir } from '../helpers/media.js';

function box(type: string, payload: Buffer): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + payload.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, payload]);
}

const isCorrupt = (error: unknown) => isOriginError(error, 'ORIGIN_ERR_CORRUPT_MEDIA');

describe('BoxReader', () => {
  it('walks nested boxes and 64-bit sizes', () => {
    const inner = box('mdhd', Buffer.alloc(4));
    const large = Buffer.alloc(16 + 4);
    large.writeUInt32BE(1, 0);
    large.write('free', 4, 'latin1');
    large.writeBigUInt64BE(20n, 8);
    const file = Buffer.concat([box('moov', inner), large]);
    const reader = new BoxReader(file, 'mem');
    const types = [...reader.children(0, file.length)].map((b) => b.type);
    assert.deepEqual(types, ['moov', 'free']);
    const moov = reader.find(reader.root(), 'moov')!;
    assert.equal(reader.find(moov, 'mdhd')?.end, 8 + 12);
  });

  it('reports sizes that overrun the parent with the file and offset', () => {
    const bad = box('moov', box('trak', Buffer.alloc(4)));
    bad.writeUInt32BE(999, 8);
    const reader = new BoxReader(bad, 'bad.mp4');
    const moov = reader.find(reader.root(), 'moov')!;
    assert.throws(
      () => [...reader.childrenOf(moov)],
      (error: unknown) => isCorrupt(error) && /bad\.mp4.*at byte 8/.test((error as Error).message),
    );
  });

  it('rejects init segments without moov and segments without moof', async () => {
    assert.throws(() => parseInitSegment(box('free', Buffer.alloc(0)), 'x'), isCorrupt);
    const dir = await mkdtemp(join(tmpdir(), 'trickle-boxes-'));
    const path = join(dir, 'seg.m4s');
    await writeFile(path, box('mdat', Buffer.alloc(10)));
    await assert.rejects(
      withMediaFile(path, (file) => readSegmentTiming(file, [])),
      isCorrupt,
    );
  });

  it('rejects a truncated real segment and a truncated progressive file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-boxes-'));
    const init = await readFile(join(demoDir(), 'init-0.m4s'));
    const segment = await readFile(join(demoDir(), 'chunk-0-00001.m4s'));
    const truncated = join(dir, 'chunk.m4s');
    await writeFile(truncated, segment.subarray(0, segment.length - 100));
    await assert.rejects(
      withMediaFile(truncated, (file) => readSegmentTiming(file, parseInitSegment(init, 'init'))),
      isCorrupt,
    );
    await assert.rejects(scanTopLevelBoxes(truncated), isCorrupt);

    const progressive = await readFile(join(demoDir(), 'progressive.mp4'));
    const cut = join(dir, 'cut.mp4');
    await writeFile(cut, progressive.subarray(0, 2000));
    await assert.rejects(readProgressiveLayout(cut), isCorrupt);
  });

  it('rejects random bytes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'trickle-boxes-'));
    const path = join(dir, 'noise.mp4');
    const noise = Buffer.alloc(4096);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 7919 + 13) & 0xff;
    await writeFile(path, noise);
    await assert.rejects(readProgressiveLayout(path), isCorrupt);
  });
});
