/**
 * The kernel path's end: user space writes a trickle response at once and its 'finish' comes while
 * most of it still waits in the socket, paced by the sock_ops program. The response keeps its
 * pacing until its last byte is acknowledged (the drain wait allows the rest its time at the
 * schedule's rate, beyond flows.drainTimeoutMs), and its record says it completed and drained; a
 * client that leaves before then is recorded as not completed. Root (the real BPF clamp; CI).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { attachClamp, createSocketControl, teardownClamp, type AttachedClamp } from '@trickle/native';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { cwndClampOf, type FlowRecord } from '../../src/delivery/flow-record.js';
import { testMediaRoot } from '../helpers/media.js';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const skip = root ? false : 'needs root (the BPF clamp)';
if (skip !== false) console.log(`# skipping the kernel drain test: ${skip}`);
if (process.env.CI === 'true' && !root) throw new Error('CI must run the kernel drain test as root');

const pinDir = '/run/trickle/bpf-kernel-drain';
const drainTimeoutMs = 500;

/** A kept-alive connection: the origin's socket stays open, so the record can see the last acknowledgement. */
function get(url: string, range: string, abortAfterMs?: number): Promise<{ bytes: number; elapsedMs: number }> {
  const startMs = performance.now();
  const agent = new http.Agent({ keepAlive: true });
  return new Promise<{ bytes: number; elapsedMs: number }>((resolve, reject) => {
    let bytes = 0;
    const request = http.get(url, { agent, headers: { range } }, (response) => {
      response.on('data', (chunk: Buffer) => (bytes += chunk.length));
      response.on('end', () => resolve({ bytes, elapsedMs: performance.now() - startMs }));
      response.on('error', () => resolve({ bytes, elapsedMs: performance.now() - startMs }));
    });
    request.on('error', (error) =>
      abortAfterMs === undefined ? reject(error) : resolve({ bytes, elapsedMs: performance.now() - startMs }),
    );
    if (abortAfterMs !== undefined) setTimeout(() => request.destroy(), abortAfterMs);
  }).finally(() => setTimeout(() => agent.destroy(), 500));
}

describe('a response paced in the kernel, after user space has written it all', { skip }, () => {
  let app: FastifyInstance;
  let clamp: AttachedClamp;
  let url: string;

  before(async () => {
    await teardownClamp({ pinDir }).catch(() => undefined);
    clamp = await attachClamp({ prefer: 'bpf', cgroupPath: 'trickle-kernel-drain', pinDir, join: true });
    assert.equal(clamp.backend, 'bpf', `the bpf clamp attached (${clamp.fallbackReason ?? ''})`);
    const config = await loadConfig({
      flags: {
        media: testMediaRoot(),
        logLevel: 'silent',
        flows: { drainTimeoutMs },
        delivery: { allowPolicyOverride: true, startupSec: 0 },
      },
    });
    app = await buildApp({ config, logger: false, socketControl: createSocketControl(clamp) });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  after(async () => {
    await app?.close();
    clamp?.close();
    await teardownClamp({ pinDir }).catch(() => undefined);
  });

  const records = async () =>
    ((await (await fetch(`${url}/api/flows?limit=1000`)).json()) as { flows: FlowRecord[] }).flows;

  it(
    'stays paced until its last byte is acknowledged, long after the drain timeout, and ' + 'is recorded as completed',
    async () => {
      const fileBytes = statSync(join(testMediaRoot(), 'demo', 'progressive.mp4')).size;
      // About 4 s of the 24 s clip at its own rate: on loopback the clamp is at its floor, so the kernel paces it at R.
      const rangeBytes = Math.round((fileBytes / 24) * 4);
      const got = await get(`${url}/media/demo/progressive.mp4?policy=trickle`, `bytes=0-${rangeBytes - 1}`);
      assert.equal(got.bytes, rangeBytes);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const record = (await records()).find((r) => r.policy === 'trickle' && r.range.end === rangeBytes - 1)!;
      assert.ok(record !== undefined, 'the response was recorded');
      assert.equal(cwndClampOf(record)?.trickleIn, 'kernel');
      console.log(
        `# ${rangeBytes} B (about 4 s of media) took ${Math.round(got.elapsedMs)} ms; drain ` +
          `timeout ${drainTimeoutMs} ms`,
      );
      // Released at the drain timeout, the rest would have gone at loopback speed within about a second.
      assert.ok(got.elapsedMs > 2500, `the response took ${Math.round(got.elapsedMs)} ms: its pacing ended early`);
      assert.equal(record.completed, true);
      assert.equal(record.drained, true);
    },
  );

  it('records a client that left while the socket still held the rest as not completed', async () => {
    const fileBytes = statSync(join(testMediaRoot(), 'demo', 'progressive.mp4')).size;
    const rangeBytes = Math.round((fileBytes / 24) * 4) + 1;
    await get(`${url}/media/demo/progressive.mp4?policy=trickle`, `bytes=0-${rangeBytes - 1}`, 1000);
    const deadline = performance.now() + 5000;
    let record: FlowRecord | undefined;
    while (record === undefined && performance.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      record = (await records()).find((r) => r.policy === 'trickle' && r.range.end === rangeBytes - 1);
    }
    assert.ok(record !== undefined, 'the aborted response was recorded');
    assert.equal(record.completed, false);
    assert.equal(record.drained, false);
  });
});
