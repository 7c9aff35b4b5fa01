/** The media library's file cache: concurrent misses share one read, changes are seen, unsafe paths are refused. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MediaLibrary } from '../../src/media/library.js';

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
    const library = new MediaLibrary({ root, cacheMaxBytes: 1 << 20, cacheMaxFileBytes: 1 << 16, revalidateMs: 1000, now: () => nowMs });
    await library.open();
    return library;
  }

  it('answers concurrent misses for one cold file with one shared read', async () => {
    const library = await openLibrary();
    const files = await Promise.all(Array.from({ length: 50 }, () => library.getFile('clip', 'seg-1.m4s')));
    assert.equal(new Set(files).size, 1);
    assert.equal(files[0]?.body?.length, 4096);
    assert.deepEqual(library.cacheStats(), { entries: 1, bytes: 4096 + 256 });
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
