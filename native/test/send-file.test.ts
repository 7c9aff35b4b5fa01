/** sendFile on live loopback connections (no root needed): bytes, waiting for room, cancel, errors. */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sendFile, type SendFileDone } from '../src/index.js';
import { connectedPair } from './helpers/loopback-pair.js';

function sent(socket: Socket, path: string, offsetBytes: number, lengthBytes: number): { result: Promise<{ error: Error | null; sentBytes: number; calls: number }>; cancel: () => number | undefined } {
  let resolve!: (value: { error: Error | null; sentBytes: number; calls: number }) => void;
  const result = new Promise<{ error: Error | null; sentBytes: number; calls: number }>((r) => (resolve = r));
  const done: SendFileDone = (error, sentBytes, calls) => resolve({ error, sentBytes, calls });
  const transfer = sendFile(socket, path, offsetBytes, lengthBytes, done);
  return { result, cancel: () => transfer.cancel() };
}

function collect(client: Socket): { bytes: () => Buffer } {
  const chunks: Buffer[] = [];
  client.on('data', (chunk: Buffer) => chunks.push(chunk));
  return { bytes: () => Buffer.concat(chunks) };
}

describe('sendFile', () => {
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

  it('writes a range byte for byte, asynchronously, in few calls when the socket has room', async () => {
    const { server, serverSide, client } = await connectedPair();
    const received = collect(client);
    let returned = false;
    const transfer = sent(serverSide, path, 1000, 50_000);
    returned = true;
    const { error, sentBytes, calls } = await transfer.result;
    assert.ok(returned, 'done never comes before sendFile returns');
    assert.equal(error, null);
    assert.equal(sentBytes, 50_000);
    assert.ok(calls >= 1 && calls <= 2, `${calls} sendfile calls for 50 kB`);
    serverSide.end();
    await once(client, 'end');
    assert.ok(received.bytes().equals(content.subarray(1000, 51_000)));
    server.close();
  });

  it('waits for room while the reader is paused, then finishes with every byte in order', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = sent(serverSide, path, 0, content.length);
    let finished = false;
    void transfer.result.then(() => (finished = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.equal(finished, false, '24 MB does not fit the socket buffers of a paused reader');
    const received = collect(client);
    client.resume();
    const { error, sentBytes, calls } = await transfer.result;
    assert.equal(error, null);
    assert.equal(sentBytes, content.length);
    assert.ok(calls > 1, 'the rest went as the socket drained');
    serverSide.end();
    await once(client, 'end');
    assert.ok(received.bytes().equals(content));
    server.close();
  });

  it('stops on cancel without calling back, and the socket stays usable for Node', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = sent(serverSide, path, 0, content.length);
    let called = false;
    void transfer.result.then(() => (called = true));
    await new Promise((resolve) => setTimeout(resolve, 100));
    const sentSoFar = transfer.cancel();
    assert.ok(typeof sentSoFar === 'number' && sentSoFar > 0 && sentSoFar < content.length, `sent so far: ${sentSoFar}`);
    assert.equal(transfer.cancel(), undefined, 'a second cancel is a no-op');
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

  it('reports a reset peer, a short file and a missing file as errors, asynchronously', async () => {
    const { server, serverSide, client } = await connectedPair();
    client.pause();
    const transfer = sent(serverSide, path, 0, content.length);
    await new Promise((resolve) => setTimeout(resolve, 100));
    client.resetAndDestroy();
    const reset = await transfer.result;
    assert.ok(reset.error !== null && ['ECONNRESET', 'EPIPE'].includes((reset.error as NodeJS.ErrnoException).code ?? ''), String(reset.error));

    const pair = await connectedPair();
    const short = await sent(pair.serverSide, path, content.length - 10, 20).result;
    assert.equal((short.error as NodeJS.ErrnoException | null)?.code, 'NATIVE_ERR_FILE_SHORT');
    const missing = await sent(pair.serverSide, join(dir, 'gone.bin'), 0, 10).result;
    assert.equal((missing.error as NodeJS.ErrnoException | null)?.code, 'ENOENT');
    pair.client.destroy();
    pair.serverSide.destroy();
    pair.server.close();
    serverSide.destroy();
    server.close();
  });

  it('fails like a closed fd on a destroyed socket', async () => {
    const { server, serverSide, client } = await connectedPair();
    serverSide.destroy();
    const { error } = await sent(serverSide, path, 0, 10).result;
    assert.equal((error as NodeJS.ErrnoException | null)?.code, 'EBADF');
    client.destroy();
    server.close();
  });
});
