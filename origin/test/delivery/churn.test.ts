/**
 * Connection churn: thousands of connections, each aborted by its client at a random point of its
 * response (before the headers, mid-startup, mid-throttling), spread over every policy. Afterwards
 * nothing may be left behind: no active or draining responses, the active-flow gauge at 0, no
 * timers, no file descriptors beyond the baseline, and (root: the real BPF clamp) no entries in
 * the clamp's map and no closed phases left untaken. Seeded, bounded (about 20 s).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readdirSync, readlinkSync, realpathSync } from 'node:fs';
import http from 'node:http';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance } from 'fastify';
import { attachClamp, createSocketControl, nativeInfo, teardownClamp, type AttachedClamp } from '@trickle/native';
import { mersenne } from 'pure-rand/generator/mersenne';
import { uniformInt } from 'pure-rand/distribution/uniformInt';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config/config.js';
import { testMediaRoot } from '../helpers/media.js';

const info = await nativeInfo();
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const skip = info.addon.available ? false : 'the native addon is not built';
if (process.env.CI === 'true' && (!info.addon.available || !root))
  throw new Error(
    'CI must run the churn test as root with the native addon (the BPF clamp is part of what is checked)',
  );
if (skip !== false) console.log(`# skipping churn: ${skip}`);

const connections = 2000;
const pinDir = '/run/trickle/bpf-churn';
const concurrency = 200;
const policies = ['bulk', 'app-pacing', 'app-pacing-16k', 'trickle', 'pacing', 'cmcd', 'trickle-abr', 'sammy'] as const;

/** What each open descriptor is (a file's path, socket:[inode], ...), to name a leak. */
const fdTargets = () =>
  readdirSync('/proc/self/fd').map((fd) => {
    try {
      return readlinkSync(`/proc/self/fd/${fd}`);
    } catch {
      return '(closed)';
    }
  });
/** What `ss` says of these sockets (socket:[inode]): state, addresses, queues. */
function describeSockets(targets: string[]): string {
  const inodes = targets.map((target) => /socket:\[(\d+)\]/.exec(target)?.[1]).filter((inode) => inode !== undefined);
  if (inodes.length === 0) return 'none';
  const listing = spawnSync('ss', ['-tanepH'], { encoding: 'utf8' }).stdout ?? '';
  const lines = listing.split('\n').filter((line) => inodes.some((inode) => line.includes(`ino:${inode} `)));
  return lines.length > 0
    ? lines.map((line) => line.replace(/\s+/g, ' ')).join(' | ')
    : `${inodes.join(', ')} (not TCP)`;
}
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('connection churn under every policy', { skip }, () => {
  let app: FastifyInstance;
  let clamp: AttachedClamp;
  let url: string;

  before(async () => {
    // Root: the real clamp, this process in its own cgroup (sockets inherit the listener's); else the pacing-rate
    // fallback.
    // A pin of its own, emptied first: the program's map outlives processes, and this test counts its entries.
    if (root) await teardownClamp({ pinDir }).catch(() => undefined);
    clamp = await attachClamp({
      prefer: root ? 'bpf' : 'pacing-rate',
      cgroupPath: 'trickle-churn',
      pinDir,
      join: root,
    });
    if (root) assert.equal(clamp.backend, 'bpf', `the bpf clamp attached (${clamp.fallbackReason ?? ''})`);
    // Its own pin directory, torn down above: fresh maps, so every kept phase at the end is its sockets'.
    assert.equal(clamp.stats().entries, 0, 'a fresh map');
    assert.equal(clamp.stats().closedPhasesKept ?? 0, 0, 'a fresh kept-phase map');
    const config = await loadConfig({
      flags: { media: testMediaRoot(), logLevel: 'silent', delivery: { allowPolicyOverride: true, startupSec: 2 } },
    });
    app = await buildApp({ config, logger: false, socketControl: createSocketControl(clamp) });
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  after(async () => {
    await app?.close();
    clamp?.close();
    if (root) await teardownClamp({ pinDir });
  });

  it(`${connections} connections aborted at random points leave no timers, descriptors, flows or clamp entries`, async (t) => {
    const progressive = (await (await fetch(`${url}/api/assets/demo`)).json()) as { progressive?: { file: string } };
    const segment = 'chunk-3-00005.m4s';
    const paths = [`/media/demo/${progressive.progressive!.file}`, `/media/demo/${segment}`];
    // Warm the caches and lazily created state (on connections that close: a kept-alive one legitimately keeps its
    // entry), then take the baseline.
    for (const path of paths) {
      await new Promise<void>((resolve, reject) =>
        http
          .get(`${url}${path}`, { agent: false }, (response) => response.resume().on('end', resolve))
          .on('error', reject),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
    const baseline = { timers: timers(), targets: fdTargets() };
    const random = mersenne(20261122);
    let next = 0;
    let aborted = 0;
    const worker = async () => {
      while (next < connections) {
        const i = next++;
        const policy = policies[i % policies.length]!;
        const path = paths[uniformInt(random, 0, 1)]!;
        // 0: before the response starts; otherwise after up to 1.5 s (startup is 2 s of media: both phases are hit).
        const abortAfterMs = uniformInt(random, 0, 1500);
        await new Promise<void>((resolve) => {
          const request = http.get(`${url}${path}?policy=${policy}`, { agent: false }, (response) => {
            response.on('data', () => undefined);
            response.on('end', resolve);
            response.on('error', () => resolve());
          });
          request.on('error', () => resolve());
          request.on('close', () => resolve());
          setTimeout(() => {
            aborted++;
            request.destroy();
          }, abortAfterMs);
        });
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    assert.ok(aborted > connections * 0.5, `${aborted} of ${connections} aborted`);
    const deadline = performance.now() + 10_000;
    const settled = () =>
      app.trickle.engine.stats().activeResponses === 0 &&
      app.trickle.engine.stats().drainingResponses === 0 &&
      clamp.stats().entries === 0;
    while (performance.now() < deadline && !settled()) await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(app.trickle.engine.stats(), { activeResponses: 0, drainingResponses: 0 });
    assert.equal(await app.trickle.metrics.activeFlowCount(), 0, 'active-flow gauge back to 0');
    assert.equal(clamp.stats().entries, 0, `no ${clamp.backend} clamp entries left`);
    // Phases of responses whose socket closed under the program are kept for the origin to take: it took every one.
    assert.equal(clamp.stats().closedPhasesKept ?? 0, 0, 'no closed phases left untaken');
    // Let closed sockets' handles go, then compare with the baseline.
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.ok(timers() <= baseline.timers, `timers: ${timers()} now, ${baseline.timers} before`);
    // The library keeps one open handle per large file it has read by position (an LRU cache), which
    // some policies' paths open and others do not: one descriptor per media file is its cache, more
    // would be a leak; every other descriptor must be back to the baseline.
    const mediaRoot = realpathSync(testMediaRoot());
    const mediaFds = (targets: string[]) => targets.filter((target) => target.startsWith(mediaRoot));
    const otherFds = (targets: string[]) => targets.length - mediaFds(targets).length;
    // A socket's descriptor goes some time after its response ended (the peer's reset or FIN is taken
    // by the event loop under 200 connections' worth of closes): CI once saw one socket over the
    // baseline 500 ms after the engine settled. Waited for up to 5 s, and the wait printed; a leak
    // (a descriptor kept for good) stays and fails, with what the kernel says of each socket.
    const fdsWaitFromMs = performance.now();
    while (performance.now() - fdsWaitFromMs < 5_000 && otherFds(fdTargets()) > otherFds(baseline.targets))
      await new Promise((resolve) => setTimeout(resolve, 100));
    const now = fdTargets();
    t.diagnostic(`descriptors waited for: ${(performance.now() - fdsWaitFromMs).toFixed(0)} ms`);
    const perFile = new Map<string, number>();
    for (const target of mediaFds(now)) perFile.set(target, (perFile.get(target) ?? 0) + 1);
    assert.ok(
      [...perFile.values()].every((count) => count <= 1),
      `media files open more than once: ${JSON.stringify([...perFile])}`,
    );
    const extraSockets = now.filter((target) => target.startsWith('socket:') && !baseline.targets.includes(target));
    assert.ok(
      otherFds(now) <= otherFds(baseline.targets),
      `file descriptors: ${now.length} now, ${baseline.targets.length} before (${now.join(', ')}; before: ` +
        `${baseline.targets.join(', ')}); the new sockets: ${describeSockets(extraSockets)}`,
    );
    const records = (await (await fetch(`${url}/api/flows?limit=100000`)).json()) as {
      flows: { completed: boolean; policy: string }[];
    };
    for (const policy of policies) {
      // Bulk sends from memory at loopback speed: whether its responses finish before the client leaves is a race.
      const aborted = records.flows.some((r) => r.policy === policy && !r.completed);
      assert.ok(
        policy === 'bulk' ? records.flows.some((r) => r.policy === policy) : aborted,
        `${policy}: ${policy === 'bulk' ? 'responses' : 'aborted responses'} recorded`,
      );
    }
  });
});
