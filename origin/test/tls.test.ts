/**
 * HTTPS as an operator runs it: `trickle serve --tls-cert --tls-key` as a process with a throwaway
 * CA. Bytes over TLS equal the files; ALPN gives HTTP/1.1 to a client that offers h2; SIGHUP
 * re-reads the pair for new connections while open ones carry on, and a broken pair on reload
 * leaves the last good one serving; a bad pair at boot is one coded line and exit 1.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { Agent, get } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { connect, type PeerCertificate } from 'node:tls';
import { makeDevCertificates, type DevCertificates } from '../src/index.js';
import { copyDemo } from './helpers/media.js';

const cli = resolve(import.meta.dirname, '..', '..', '..', 'bin', 'trickle.js');

interface Served {
  child: ChildProcess;
  url: URL;
  /** Everything the process wrote so far. */
  output: () => string;
  exited: Promise<number | null>;
}

function startServe(args: readonly string[]): Promise<Served> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--clamp-backend', 'none', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<number | null>((done) => child.on('exit', (code) => done(code)));
  return new Promise((done, fail) => {
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk;
      const match = /listening on (https:\/\/[\d.]+:\d+)/.exec(output);
      if (match !== null) done({ child, url: new URL(match[1]!), output: () => output, exited });
    });
    child.on('exit', (code) => fail(new Error(`serve exited early (${code}): ${output}`)));
  });
}

function fetchBytes(
  url: URL,
  ca: Buffer,
  agent?: Agent,
): Promise<{ body: Buffer; certificate: PeerCertificate; localPort: number }> {
  return new Promise((done, fail) => {
    const request = get(url, { ca, ...(agent === undefined ? {} : { agent }) }, (response) => {
      const socket = response.socket as import('node:tls').TLSSocket;
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () =>
        done({ body: Buffer.concat(chunks), certificate: socket.getPeerCertificate(), localPort: socket.localPort! }),
      );
      response.on('error', fail);
    });
    request.on('error', fail);
  });
}

/** The certificate a new connection is given, and what ALPN chose. */
function handshake(url: URL, ca: Buffer, alpn: string[]): Promise<{ fingerprint256: string; alpn: string | false }> {
  return new Promise((done, fail) => {
    const socket = connect(
      { host: url.hostname, port: Number(url.port), ca, servername: 'localhost', ALPNProtocols: alpn },
      () => {
        done({ fingerprint256: socket.getPeerCertificate().fingerprint256, alpn: socket.alpnProtocol ?? false });
        socket.end();
      },
    );
    socket.on('error', fail);
  });
}

async function waitFor(output: () => string, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 100 && !pattern.test(output()); i++) await new Promise((done) => setTimeout(done, 50));
  assert.match(output(), pattern);
}

describe('HTTPS: trickle serve --tls-cert --tls-key', () => {
  let media: string;
  let dir: string;
  let first: DevCertificates;
  let second: DevCertificates;
  let ca: Buffer;
  let served: Served;

  before(async () => {
    media = await copyDemo();
    dir = await mkdtemp(join(tmpdir(), 'trickle-tls-'));
    // Two pairs from two CAs; the origin serves the files at cert.pem/key.pem, swapped on reload.
    first = await makeDevCertificates(join(dir, 'first'), ['localhost', '127.0.0.1']);
    second = await makeDevCertificates(join(dir, 'second'), ['localhost', '127.0.0.1']);
    ca = Buffer.concat([await readFile(first.caCert), await readFile(second.caCert)]);
    await copyFile(first.cert, join(dir, 'cert.pem'));
    await copyFile(first.key, join(dir, 'key.pem'));
    served = await startServe([
      '--media',
      media,
      '--tls-cert',
      join(dir, 'cert.pem'),
      '--tls-key',
      join(dir, 'key.pem'),
    ]);
  });

  after(async () => {
    served?.child.kill('SIGTERM');
    await served?.exited;
    await rm(dir, { recursive: true, force: true });
    await rm(media, { recursive: true, force: true });
  });

  it('serves every byte of a segment and the progressive file over TLS', async () => {
    for (const name of ['chunk-0-00001.m4s', 'progressive.mp4']) {
      const { body } = await fetchBytes(new URL(`/media/demo/${name}`, served.url), ca);
      assert.ok(body.equals(await readFile(join(media, 'demo', name))), `${name} over HTTPS equals the file`);
    }
  });

  it('answers HTTP/1.1 through ALPN to a client that offers h2 first', async () => {
    assert.equal((await handshake(served.url, ca, ['h2', 'http/1.1'])).alpn, 'http/1.1');
  });

  it('re-reads the pair on SIGHUP for new connections; an open one carries on', async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const before = await fetchBytes(new URL('/media/demo/manifest.mpd', served.url), ca, agent);
    await copyFile(second.cert, join(dir, 'cert.pem'));
    await copyFile(second.key, join(dir, 'key.pem'));
    served.child.kill('SIGHUP');
    await waitFor(served.output, /TLS certificate reloaded/);
    const fresh = await handshake(served.url, ca, ['http/1.1']);
    assert.notEqual(
      fresh.fingerprint256,
      before.certificate.fingerprint256,
      'a new connection gets the new certificate',
    );
    // The kept-alive connection still serves, with the certificate it was opened with.
    const again = await fetchBytes(new URL('/media/demo/manifest.mpd', served.url), ca, agent);
    assert.equal(again.localPort, before.localPort, 'the same connection');
    assert.equal(again.certificate.fingerprint256, before.certificate.fingerprint256);
    agent.destroy();
  });

  it('keeps the last good pair when the reloaded one is broken', async () => {
    const serving = (await handshake(served.url, ca, ['http/1.1'])).fingerprint256;
    await writeFile(join(dir, 'key.pem'), 'not a key\n');
    served.child.kill('SIGHUP');
    await waitFor(served.output, /TLS reload failed, the previous certificate stays: .*key\.pem/);
    assert.equal((await handshake(served.url, ca, ['http/1.1'])).fingerprint256, serving);
    assert.equal(served.child.exitCode, null, 'still running');
  });

  it('refuses to start with a missing, foreign or one-sided pair: one coded line, exit 1', () => {
    const cases: [string[], RegExp][] = [
      [
        ['--tls-cert', join(dir, 'absent.pem'), '--tls-key', first.key],
        /^trickle: cannot read the TLS certificate .*absent\.pem: ENOENT \[ORIGIN_ERR_TLS\]\n$/,
      ],
      [
        ['--tls-cert', second.cert, '--tls-key', first.key],
        /^trickle: the TLS key .* does not fit the certificate .*\[ORIGIN_ERR_TLS\]\n$/,
      ],
      [
        ['--tls-cert', first.key, '--tls-key', first.key],
        /^trickle: .* is not a PEM certificate: .*\[ORIGIN_ERR_TLS\]\n$/,
      ],
      [['--tls-cert', first.cert], /^trickle: --tls-cert and --tls-key go together.*\[ORIGIN_ERR_CONFIG\]\n$/],
    ];
    for (const [args, expected] of cases) {
      const result = spawnSync(
        process.execPath,
        [cli, 'serve', '--media', media, '--port', '0', '--clamp-backend', 'none', ...args],
        { encoding: 'utf8', timeout: 30_000 },
      );
      assert.equal(result.status, 1, `${args.join(' ')}: ${result.stderr}`);
      assert.match(result.stderr, expected);
    }
  });
});
