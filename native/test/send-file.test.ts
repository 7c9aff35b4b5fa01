/**
 * openFileSend on live loopback connections (no root needed): bytes, consecutive writes, waiting for room, close,
 * errors.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, truncateSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openFileSend, type FileSend } from '../src/index.js';
import { connectedPair } from './helpers/loopback-pair.js';

interface Written {
  error: Error | null;
  sentBytes: number;
  calls: number;
}

/** One write: settled at once (the calls it took) or when its callback comes. */
function write(
  transfer: FileSend,
  offsetBytes: number,
  lengthBytes: number,
): { atOnce: boolean; result: Promise<Written> } {
  let resolve!: (value: Written) => void;
  const result = new Promise<Written>((r) => (resolve = r));
  const calls = transfer.write(offsetBytes, lengthBytes, (error, sentBytes, asyncCalls) =>
    resolve({ error, sentBytes, calls: asyncCalls }),
  );
  if (calls >= 0) resolve({ error: null, sentBytes: lengthBytes, calls });
  return { atOnce: calls >= 0, result };
}

function collect(client: Socket): { bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  client.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { bytes: () => Buffer.concat(chunks) };
}

/** This process's descriptors open on `path` now (a deleted file's link reads "<path> (deleted)"). */
function descriptorsOn(path: string): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`).startsWith(path);
    } catch {
      return false;
    }
  }).length;
}

describe('openFileSend', () => {
  let dir: string;
  let path: string;
  let content: Buffer;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'trickle-sendfile-'));
    path = join(dir, 'media.bin');
    content = randomBytes(24 * 1024 * 1024);
    writeFileSync(path, content);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it(
    'writes consecutive blocks byte for byte through one held transfer, each in one ' + 'call when the socket has room',
    async () => {
      const { server, serverSide, client } = await connectedPair();
      const received = collect(client);
      const transfer = openFileSend(serverSide, path, 1000 + 4 * 16_384);
      for (let block = 0; block < 4; block++) {
        const { atOnce, result } = write(transfer, 1000 + block * 16_384, 16_384);
        assert.ok(atOnce, `block ${block} was taken at once`);
        assert.equal((await result).calls, 1);
      }
      assert.equal(transfer.close(), 4 * 16_384, 'the bytes sent over the transfer');
      assert.equal(transfer.close(), undefined, 'a second close is a no-op');
      serverSide.end();
      await once(client, 'end');
      assert.ok(received.bytes().equals(content.subarray(1000, 1000 + 4 * 16_384)));
      server.close();
    },
  );

  it('waits for room while the reader is paused, then finishes with every byte in order', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = openFileSend(serverSide, path, content.length);
    const { atOnce, result } = write(transfer, 0, content.length);
    assert.equal(atOnce, false, '24 MB does not fit the socket buffers of a paused reader');
    let finished = false;
    void result.then(() => (finished = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(finished, false);
    const received = collect(client);
    client.resume();
    const { error, sentBytes, calls } = await result;
    assert.equal(error, null);
    assert.equal(sentBytes, content.length);
    assert.ok(calls > 1, 'the rest went as the socket drained');
    assert.equal(transfer.close(), content.length);
    serverSide.end();
    await once(client, 'end');
    assert.ok(received.bytes().equals(content));
    server.close();
  });

  it('refuses a second write while one is under way', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = openFileSend(serverSide, path, content.length);
    assert.equal(write(transfer, 0, content.length).atOnce, false);
    assert.throws(() => transfer.write(0, 10, () => undefined), { code: 'NATIVE_ERR_ARGUMENT' });
    transfer.close();
    client.destroy();
    serverSide.destroy();
    server.close();
  });

  it('stops on close without calling back, and the socket stays usable for Node', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = openFileSend(serverSide, path, content.length);
    const { result } = write(transfer, 0, content.length);
    let called = false;
    void result.then(() => (called = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const sentSoFar = transfer.close();
    assert.ok(
      typeof sentSoFar === 'number' && sentSoFar > 0 && sentSoFar < content.length,
      `sent so far: ${sentSoFar}`,
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(called, false);
    const received = collect(client);
    client.resume();
    serverSide.end(Buffer.from('tail'));
    await once(client, 'end');
    const bytes = received.bytes();
    assert.equal(bytes.length, sentSoFar + 4);
    assert.ok(bytes.subarray(0, sentSoFar).equals(content.subarray(0, sentSoFar)));
    assert.equal(bytes.subarray(sentSoFar).toString(), 'tail');
    server.close();
  });

  it(
    'reports a reset peer asynchronously, and a file truncated after opening on the ' + 'write that reaches its end',
    async () => {
      const { server, serverSide, client } = await connectedPair();
      client.pause();
      const transfer = openFileSend(serverSide, path, content.length);
      const { result } = write(transfer, 0, content.length);
      await new Promise((resolve) => setTimeout(resolve, 100));
      client.resetAndDestroy();
      const reset = await result;
      assert.ok(
        reset.error !== null && ['ECONNRESET', 'EPIPE'].includes((reset.error as NodeJS.ErrnoException).code ?? ''),
        String(reset.error),
      );
      transfer.close();
      serverSide.destroy();
      server.close();

      const shrinking = join(dir, 'shrinking.bin');
      writeFileSync(shrinking, content.subarray(0, 100_000));
      const pair = await connectedPair();
      const received = collect(pair.client);
      const held = openFileSend(pair.serverSide, shrinking, 100_000);
      truncateSync(shrinking, 50_000);
      // sendfile takes the 50 000 bytes there are (a short count), then finds the end
      const { error, sentBytes } = await write(held, 0, 100_000).result;
      assert.equal((error as NodeJS.ErrnoException | null)?.code, 'NATIVE_ERR_FILE_SHORT');
      assert.equal(sentBytes, 50_000);
      held.close();
      pair.serverSide.end();
      await once(pair.client, 'end');
      assert.ok(received.bytes().equals(content.subarray(0, 50_000)));
      pair.server.close();
    },
  );

  it('shares one descriptor among the transfers of a file, and opens a new one for a file replaced under its path', async () => {
    const shared = join(dir, 'shared.bin');
    writeFileSync(shared, content.subarray(0, 200_000));
    const pairs = await Promise.all([connectedPair(), connectedPair(), connectedPair()]);
    const before = descriptorsOn(shared);
    const first = openFileSend(pairs[0]!.serverSide, shared, 200_000);
    const second = openFileSend(pairs[1]!.serverSide, shared, 200_000);
    assert.equal(descriptorsOn(shared) - before, 1, 'two transfers of one file hold one descriptor');
    // Replaced (a new inode under the same name): the next transfer reads the new file, the held ones the old.
    const replacement = join(dir, 'shared.new');
    writeFileSync(replacement, content.subarray(200_000, 400_000));
    renameSync(replacement, shared);
    const third = openFileSend(pairs[2]!.serverSide, shared, 200_000);
    const received = pairs.map((pair) => collect(pair.client));
    for (const transfer of [first, second, third]) assert.equal((await write(transfer, 0, 1000).result).error, null);
    for (const pair of pairs) pair.serverSide.end();
    await Promise.all(pairs.map((pair) => once(pair.client, 'end')));
    assert.ok(received[0]!.bytes().equals(content.subarray(0, 1000)));
    assert.ok(received[1]!.bytes().equals(content.subarray(0, 1000)));
    assert.ok(received[2]!.bytes().equals(content.subarray(200_000, 201_000)));
    for (const transfer of [first, second, third]) transfer.close();
    assert.equal(descriptorsOn(shared), before, 'the last transfer of each file closes its descriptor');
    for (const pair of pairs) pair.server.close();
  });

  it('refuses a transfer (EMFILE) while new connections can still be accepted, near the descriptor limit', () => {
    // A child under a limit of 256 descriptors: a transfer is refused once fewer than 64 (the floor of a sixteenth) are free.
    const child = spawnSync(
      'prlimit',
      ['--nofile=256:256', process.execPath, join(import.meta.dirname, 'helpers', 'descriptor-reserve-child.js'), path],
      { encoding: 'utf8', timeout: 60_000 },
    );
    assert.equal(child.status, 0, child.stderr);
    const outcome = JSON.parse(child.stdout) as {
      transfers: number;
      refused?: { code?: string; syscall?: string };
      openAtRefusal: number;
      accepted: boolean;
    };
    assert.deepEqual(outcome.refused, { code: 'EMFILE', syscall: 'fcntl' });
    assert.ok(outcome.openAtRefusal >= 256 - 64 - 4 && outcome.openAtRefusal < 256 - 32, JSON.stringify(outcome));
    assert.ok(outcome.transfers > 10, JSON.stringify(outcome));
    assert.equal(outcome.accepted, true);
  });

  it('refuses at open a file shorter than the ranges, a missing file and a destroyed socket', async () => {
    const { server, serverSide, client } = await connectedPair();
    assert.throws(() => openFileSend(serverSide, path, content.length + 1), { code: 'NATIVE_ERR_FILE_SHORT' });
    assert.throws(() => openFileSend(serverSide, join(dir, 'gone.bin'), 10), { code: 'ENOENT', syscall: 'open' });
    serverSide.destroy();
    assert.throws(() => openFileSend(serverSide, path, 10), { code: 'EBADF' });
    client.destroy();
    server.close();
  });
});
