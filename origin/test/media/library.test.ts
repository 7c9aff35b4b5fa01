/** The media library's file cache: concurrent misses share one read, changes are seen, unsafe paths are refused. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileChunkBytes, MediaLibrary } from '../../src/media/library.js';

describe('MediaLibrary.getFile', () => {
  let root: string;
  let nowMs = 0;

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'trickle-library-'));
    await mkdir(join(root, 'clip'));
    await writeFile(join(root, 'clip', 'seg-1.m4s'), Buffer.alloc(4096, 1));
    await writeFile(join(root, 'outside.m4s'), 'secret');
    await symlink(join(root, 'outside.m4s'), join(root, 'clip', 'escape.m4s'));
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function openLibrary() {
    const library = new MediaLibrary({
      root,
      cacheMaxBytes: 1 << 20,
      cacheMaxFileBytes: 1 << 16,
      revalidateMs: 1000,
      now: () => nowMs,
    });
    await library.open();
    return library;
  }

  it('answers concurrent misses for one cold file with one shared read', async () => {
    const library = await openLibrary();
    const files = await Promise.all(Array.from({ length: 50 }, () => library.getFile('clip', 'seg-1.m4s')));
    assert.equal(new Set(files).size, 1);
    assert.equal(files[0]?.body?.length, 4096);
    assert.deepEqual(library.cacheStats(), { entries: 1, bytes: 4096 + 256, indexChecks: 0 });
  });

  it('checks an index that fell due once for all the requests that find it due together', async () => {
    await mkdir(join(root, 'show'), { recursive: true });
    await writeFile(join(root, 'show', 'manifest.mpd'), 'not an MPD');
    const library = await openLibrary();
    const first = await library.indexState('show');
    assert.equal(first?.status, 'broken');
    assert.equal(library.cacheStats().indexChecks, 1);
    const within = await Promise.all(Array.from({ length: 20 }, () => library.indexState('show')));
    assert.equal(library.cacheStats().indexChecks, 1, 'trusted within revalidateMs');
    nowMs += 1001;
    const due = await Promise.all(Array.from({ length: 50 }, () => library.indexState('show')));
    assert.equal(library.cacheStats().indexChecks, 2);
    assert.equal(new Set([first, ...within, ...due]).size, 1, 'the manifest is unchanged: the index is kept');
    nowMs += 1001;
    await library.indexState('show');
    assert.equal(library.cacheStats().indexChecks, 3, 'a later due check is made again');
  });

  it('serves a new version once the revalidation time has passed', async () => {
    const library = await openLibrary();
    const first = await library.getFile('clip', 'seg-1.m4s');
    await writeFile(join(root, 'clip', 'seg-1.m4s'), Buffer.alloc(100, 2));
    await utimes(join(root, 'clip', 'seg-1.m4s'), new Date(), new Date(Date.now() + 5000));
    assert.equal(await library.getFile('clip', 'seg-1.m4s'), first, 'trusted within revalidateMs');
    nowMs += 1001;
    const second = await library.getFile('clip', 'seg-1.m4s');
    assert.equal(second?.body?.length, 100);
  });

  it('refuses traversal, hidden names and symlinks out of the asset', async () => {
    const library = await openLibrary();
    for (const relative of ['../outside.m4s', '.hidden', 'a/../../outside.m4s', 'escape.m4s', 'missing.m4s']) {
      assert.equal(await library.getFile('clip', relative), undefined, relative);
    }
    assert.equal(await library.getFile('..', 'outside.m4s'), undefined);
  });
});

describe('MediaLibrary.readRange (files too large to cache whole)', () => {
  let root: string;
  const sizeBytes = 3 * fileChunkBytes + 12_345;
  /** Byte i of the file is a function of i, so any misplaced byte shows. */
  const content = Buffer.from(Array.from({ length: sizeBytes }, (_, i) => (i * 7 + (i >> 11)) & 0xff));

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'trickle-library-ranges-'));
    await mkdir(join(root, 'clip'));
    await writeFile(join(root, 'clip', 'progressive.mp4'), content);
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  async function openLibrary(cacheMaxBytes: number) {
    const library = new MediaLibrary({ root, cacheMaxBytes, cacheMaxFileBytes: 1 << 16, revalidateMs: 0 });
    await library.open();
    const file = await library.getFile('clip', 'progressive.mp4');
    assert.ok(file !== undefined && file.body === undefined, 'the file is above cacheMaxFileBytes');
    return { library, file };
  }

  it(
    'answers ranges within a chunk, across chunks, at the file end and longer than a ' + 'chunk with the file bytes',
    async () => {
      const { library, file } = await openLibrary(64 * fileChunkBytes);
      const ranges = [
        { start: 0, end: 65_535 },
        { start: fileChunkBytes - 100, end: fileChunkBytes + 65_435 },
        { start: 2 * fileChunkBytes - 10, end: 3 * fileChunkBytes + 10 },
        { start: sizeBytes - 65_536, end: sizeBytes - 1 },
        { start: 12, end: 2 * fileChunkBytes + 40 },
      ];
      for (const range of ranges)
        assert.ok(
          (await library.readRange(file, range)).equals(content.subarray(range.start, range.end + 1)),
          JSON.stringify(range),
        );
    },
  );

  it('reads each chunk once: concurrent ranges share the read, later ones are served from memory', async () => {
    const { library, file } = await openLibrary(64 * fileChunkBytes);
    const before = library.cacheStats();
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => library.readRange(file, { start: i * 1000, end: i * 1000 + 65_535 })),
    );
    const after = library.cacheStats();
    assert.equal(after.entries - before.entries, 1, 'one chunk cached');
    assert.equal(after.bytes - before.bytes, fileChunkBytes + 256);
    const again = library.readRange(file, { start: 5, end: 65_540 });
    assert.ok(Buffer.isBuffer(again), 'a range in a cached chunk is answered at once, without a promise');
    assert.equal(library.cacheStats().entries, after.entries);
    assert.ok(again.equals(content.subarray(5, 65_541)));
  });

  it('keeps chunks within the cache budget, and reads directly when the budget is too small for chunks', async () => {
    const small = await openLibrary(6 * fileChunkBytes);
    for (let chunk = 0; chunk < 4; chunk++)
      await small.library.readRange(small.file, { start: chunk * fileChunkBytes, end: chunk * fileChunkBytes + 999 });
    assert.ok(small.library.cacheStats().bytes <= 6 * fileChunkBytes);
    const tiny = await openLibrary(fileChunkBytes);
    const before = tiny.library.cacheStats();
    assert.ok((await tiny.library.readRange(tiny.file, { start: 100, end: 199 })).equals(content.subarray(100, 200)));
    assert.deepEqual(tiny.library.cacheStats(), before, 'nothing cached');
  });

  it('reports a file truncated under it as ORIGIN_ERR_FILE_CHANGED, and the new version reads anew', async () => {
    const { library, file } = await openLibrary(64 * fileChunkBytes);
    await writeFile(join(root, 'clip', 'progressive.mp4'), content.subarray(0, fileChunkBytes + 10));
    await assert.rejects(
      async () => library.readRange(file, { start: 2 * fileChunkBytes, end: 2 * fileChunkBytes + 99 }),
      { code: 'ORIGIN_ERR_FILE_CHANGED' },
    );
    await utimes(join(root, 'clip', 'progressive.mp4'), new Date(), new Date(Date.now() + 5000));
    const replaced = await library.getFile('clip', 'progressive.mp4');
    assert.equal(replaced?.sizeBytes, fileChunkBytes + 10);
    assert.ok(
      (await library.readRange(replaced, { start: fileChunkBytes, end: fileChunkBytes + 9 })).equals(
        content.subarray(fileChunkBytes, fileChunkBytes + 10),
      ),
    );
    await writeFile(join(root, 'clip', 'progressive.mp4'), content);
  });
});
