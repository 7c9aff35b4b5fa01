/** The origin as a process: SIGTERM drains in-flight responses, and the grace period bounds it. */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { get, type IncomingMessage } from 'node:http';
import { rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { copyDemo } from './helpers/media.js';

const cli = resolve(import.meta.dirname, '..', '..', '..', 'bin', 'trickle.js');

function startServe(
  media: string,
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string; exited: Promise<number | null> }> {
  const child = spawn(process.execPath, [cli, 'serve', '--media', media, '--port', '0'], {
    env: { ...process.env, TRICKLE_CACHE__MAX_FILE_BYTES: '65536', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return new Promise((done, fail) => {
    let output = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(output);
      if (match !== null) done({ child, url: match[1]!, exited });
    });
    child.on('exit', (code) => fail(new Error(`serve exited early (${code}): ${output}`)));
  });
}

function openPausedDownload(url: string): Promise<IncomingMessage> {
  return new Promise((done, fail) => {
    const request = get(url, (response) => {
      response.pause();
      done(response);
    });
    request.on('error', fail);
  });
}

function drain(response: IncomingMessage): Promise<{ bytes: number; error: Error | undefined }> {
  return new Promise((done) => {
    let bytes = 0;
    response.on('data', (chunk: Buffer) => (bytes += chunk.length));
    response.on('end', () => done({ bytes, error: undefined }));
    response.on('error', (error) => done({ bytes, error }));
    response.on('aborted', () => done({ bytes, error: new Error('aborted') }));
    response.resume();
  });
}

describe('trickle serve process', () => {
  let root: string;
  let sizeBytes: number;

  before(async () => {
    root = await copyDemo();
    sizeBytes = (await stat(join(root, 'demo', 'progressive.mp4'))).size;
  });

  after(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('finishes in-flight responses after SIGTERM, then exits 0', async () => {
    const { child, url, exited } = await startServe(root, { TRICKLE_SHUTDOWN_GRACE_MS: '10000' });
    const response = await openPausedDownload(`${url}/media/demo/progressive.mp4`);
    child.kill('SIGTERM');
    await new Promise((done) => setTimeout(done, 300));
    const { bytes, error } = await drain(response);
    assert.equal(error, undefined);
    assert.equal(bytes, sizeBytes);
    assert.equal(await exited, 0);
  });

  it('closes what is still open when the grace period ends', async () => {
    const { child, url, exited } = await startServe(root, { TRICKLE_SHUTDOWN_GRACE_MS: '500' });
    const response = await openPausedDownload(`${url}/media/demo/progressive.mp4`);
    const startedMs = Date.now();
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    const elapsedMs = Date.now() - startedMs;
    assert.ok(elapsedMs >= 400 && elapsedMs < 5000, `exited after ${elapsedMs} ms`);
    const { bytes, error } = await drain(response);
    assert.ok(error !== undefined || bytes < sizeBytes, 'the unfinished response was cut, not reported complete');
  });

  it("listens with the configured backlog (capped by net.core.somaxconn), not Node's 511", async () => {
    const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'));
    for (const [env, wanted] of [
      [{}, 4096],
      [{ TRICKLE_LISTEN_BACKLOG: '1234' }, 1234],
    ] as const) {
      const { child, url, exited } = await startServe(root, env);
      try {
        const port = new URL(url).port;
        // ss shows a listening socket's backlog as its Send-Q.
        const ss = spawnSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' });
        assert.equal(ss.status, 0, `ss failed (iproute2 is needed): ${ss.stderr}`);
        const backlog = Number(ss.stdout.trim().split(/\s+/)[2]);
        assert.equal(backlog, Math.min(wanted, somaxconn), ss.stdout);
      } finally {
        child.kill('SIGTERM');
        await exited;
      }
    }
  });
});
