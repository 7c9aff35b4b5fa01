/**
 * A phase in the kernel whose viewer leaves mid-response (root, the real BPF program): the
 * program's entry goes with the socket, so it keeps the phase and the connection's counters at the
 * close, and the origin's record of the aborted response still carries its throttling figures
 * (the paper's metrics are the throttling phase's, and viewers leave before the end of a file).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { attachClamp, createSocketControl, nativeInfo, teardownClamp, type AttachedClamp } from '@trickle/native';
import { buildApp } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/config.js';
import { cwndClampOf, kernelPhaseOf, type FlowRecord } from '../../../src/index.js';
import { testMediaRoot } from '../../helpers/media.js';

const info = await nativeInfo();
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const skip = !info.addon.available
  ? 'the native addon is not built'
  : !root
    ? 'the BPF clamp needs root'
    : !info.bpfClamp.available
      ? `no BPF clamp: ${info.bpfClamp.reason ?? ''}`
      : false;
if (process.env.CI === 'true' && skip !== false)
  throw new Error(`CI must run the kernel phase abort test as root with the BPF clamp (${skip})`);
if (skip !== false) console.log(`# skipping the kernel phase abort test: ${skip}`);

const pinDir = '/run/trickle/bpf-kernel-abort';

describe('a phase in the kernel whose viewer leaves mid-response', { skip }, () => {
  let app: FastifyInstance;
  let clamp: AttachedClamp;
  let url: string;
  let progressivePath: string;

  before(async () => {
    await teardownClamp({ pinDir }).catch(() => undefined);
    clamp = await attachClamp({ prefer: 'bpf', cgroupPath: 'trickle-kernel-abort', pinDir, join: true });
    assert.equal(clamp.backend, 'bpf', `the bpf clamp attached (${clamp.fallbackReason ?? ''})`);
    const config = await loadConfig({
      flags: { media: testMediaRoot(), logLevel: 'silent', delivery: { allowPolicyOverride: true, startupSec: 1 } },
    });
    app = await buildApp({ config, logger: false, socketControl: createSocketControl(clamp) });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
    const asset = (await (await fetch(`${url}/api/assets/demo`)).json()) as { progressive?: { file: string } };
    progressivePath = `/media/demo/${asset.progressive!.file}`;
  });

  after(async () => {
    await app?.close();
    clamp?.close();
    await teardownClamp({ pinDir });
  });

  for (const policy of ['trickle', 'pacing'] as const) {
    it(
      `${policy}: the record of a response aborted 1.5 s into its phase has the phase's ` +
        `figures, read as the socket closed`,
      async () => {
        const before = (await (await fetch(`${url}/api/flows?limit=100000`)).json()) as { flows: FlowRecord[] };
        let received = 0;
        await new Promise<void>((resolve, reject) => {
          const request = http.get(`${url}${progressivePath}?policy=${policy}`, { agent: false }, (response) => {
            assert.equal(response.statusCode, 200);
            response.on('data', (chunk: Buffer) => (received += chunk.length));
            // The startup (1 s of media) goes at loopback speed; 1.5 s later the phase is under way.
            setTimeout(() => request.destroy(), 1500);
          });
          request.on('close', resolve);
          request.on('error', (error: NodeJS.ErrnoException) =>
            error.code === 'ECONNRESET' ? resolve() : reject(error),
          );
        });
        const deadline = performance.now() + 5000;
        let record: FlowRecord | undefined;
        while (record === undefined && performance.now() < deadline) {
          const { flows } = (await (await fetch(`${url}/api/flows?limit=100000`)).json()) as { flows: FlowRecord[] };
          record = flows.find(
            (r) =>
              r.policy === policy &&
              r.file === progressivePath.split('/').at(-1) &&
              !before.flows.some((b) => b.id === r.id),
          );
          if (record === undefined) await new Promise((resolve) => setTimeout(resolve, 50));
        }
        assert.ok(record !== undefined, 'the aborted response was recorded');
        console.log(
          `# ${policy}: ${received} B received; ${record.reason}; ` +
            `throttling ${JSON.stringify(record.throttling)}; aimed ` +
            `at ${JSON.stringify(record.paceRateBps)}, R ${JSON.stringify(record.targetRateBps)}`,
        );
        assert.equal(record.completed, false);
        assert.equal(cwndClampOf(record)?.trickleIn ?? null, policy === 'trickle' ? 'kernel' : null);
        assert.equal(kernelPhaseOf(record)?.started, true, 'the phase began in the kernel');
        assert.match(record.reason, /when the socket closed mid-response/);
        const throttling = record.throttling;
        assert.ok(throttling !== null, 'the record has its throttling phase');
        assert.ok(
          throttling.durationMs > 1000 && throttling.durationMs < 3000,
          `the phase lasted until the close: ${throttling.durationMs} ms`,
        );
        assert.ok((throttling.dataSegmentsOut ?? 0) > 0, 'segments sent in the phase');
        assert.ok(throttling.retransmittedSegments !== null, 'retransmissions over the phase');
        assert.ok((throttling.goodputBps ?? 0) > 0, 'goodput over the phase');
        // Aimed at gain x R over the phase: on loopback the phase runs at its schedule (well under 3x its target).
        assert.ok(
          record.targetRateBps !== null && throttling.goodputBps! < 3 * record.targetRateBps.mean,
          `goodput ${throttling.goodputBps} bit/s for a target of ${record.targetRateBps?.mean}`,
        );
        assert.ok(
          record.dataSegmentsOut !== null && record.dataSegmentsOut >= throttling.dataSegmentsOut!,
          "the response's own counters run to the close",
        );
        // On loopback (64 kB packets, RTT in microseconds) the clamp sits at its floor, where the program paces at R,
        // not gain x R.
        if (policy === 'trickle')
          assert.ok(
            record.paceRateBps !== null && record.paceRateBps.mean < 1.1 * record.targetRateBps.mean,
            `aimed at R at the floor: ${record.paceRateBps?.mean} bit/s for R ${record.targetRateBps.mean}`,
          );
        assert.equal(clamp.stats().closedPhasesKept, 0, 'the origin took the kept phase');
      },
    );
  }
});
