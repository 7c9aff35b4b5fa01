/**
 * The BPF clamp's lifecycle (root): entries die with their sockets (10,000 connections leave an
 * empty map), and the privilege split works: root sets up and pins, an unprivileged process
 * started inside the cgroup opens the pinned maps and clamps its own sockets; origins started at once on fresh pins all
 * get the clamp; the program verifies in a small part of the verifier's instruction limit.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { once } from 'node:events';
import { stat } from 'node:fs/promises';
import { createServer, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { attachClamp, setupClamp, teardownClamp } from '../../src/index.js';
import { packageRoot } from '../../src/paths.js';
import { rootSkipReason } from '../helpers/privilege.js';

const skip = rootSkipReason('the BPF clamp lifecycle tests');

describe('BPF clamp lifecycle', { skip }, () => {
  const pinDir = '/run/trickle/bpf-test-lifecycle';
  const cgroup = 'trickle-test-lifecycle';

  after(async () => {
    await teardownClamp({ pinDir, cgroup }).catch(() => undefined);
  });

  // Every origin start as root loads the program, and a kernel whose verifier explores a little more refuses a program
  // near the limit. Inlined at its five calls, the schedule's piece lookup once took 599,269 of the 1,000,000
  // instructions the verifier may process (~1 s per load here, ~30 s of an origin's start in a guest under TCG).
  it("verifies in under 5 % of the verifier's instruction limit on this kernel", () => {
    const pinned = '/sys/fs/bpf/trickle-test-verifier';
    const unpin = () => rmSync(pinned, { recursive: true, force: true });
    unpin();
    const loaded = spawnSync(
      'bpftool',
      ['-d', 'prog', 'loadall', join(packageRoot, 'out', 'bpf', 'cwnd_clamp.bpf.o'), pinned, 'type', 'sockops'],
      { encoding: 'utf8', maxBuffer: 1 << 30 },
    );
    unpin();
    const processed = /processed (\d+) insns \(limit (\d+)\)/.exec(loaded.stderr + loaded.stdout);
    assert.ok(processed !== null, `bpftool said: ${(loaded.error?.message ?? loaded.stderr).slice(-500)}`);
    const [insns, limit] = [Number(processed[1]), Number(processed[2])];
    console.log(`# the verifier processed ${insns} instructions of its ${limit}`);
    assert.equal(loaded.status, 0);
    assert.ok(insns < 0.05 * limit, `${insns} of ${limit}`);
  });

  it('removes the map entry of every closed socket: 10,000 connections leave the map empty', async () => {
    const clamp = await attachClamp({ cgroupPath: cgroup, pinDir, join: true });
    assert.equal(clamp.backend, 'bpf', clamp.fallbackReason);
    const server = createServer((socket: Socket) => {
      clamp.setRate(socket, { rateBytesPerSec: 125_000 });
      socket.on('error', () => undefined);
      socket.end('x');
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as { port: number }).port;
    const total = 10_000;
    const batch = 200;
    const before = clamp.stats();
    for (let done = 0; done < total; done += batch) {
      await Promise.all(
        Array.from(
          { length: batch },
          () =>
            new Promise<void>((resolve, reject) => {
              const client = connect(port, '127.0.0.1');
              client.on('data', () => client.end());
              client.on('close', () => resolve());
              client.on('error', reject);
            }),
        ),
      );
    }
    server.close();
    let stats = clamp.stats();
    for (let i = 0; i < 50 && stats.entries > 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      stats = clamp.stats();
    }
    assert.equal(stats.entries, 0, `entries left: ${stats.entries}`);
    assert.ok(stats.closedRemoved! - (before.closedRemoved ?? 0) >= total, `closed-removed ${stats.closedRemoved}`);
    clamp.close();
  });

  it('lets an unprivileged process in the cgroup use maps pinned by root', async () => {
    const result = await setupClamp({ cgroup, pinDir, user: 'nobody' });
    const mapInfo = await stat(join(pinDir, 'trickle_targets'));
    assert.equal(mapInfo.mode & 0o777, 0o660);
    assert.equal(mapInfo.uid, result.owner!.uid);
    // The child clamps a connection it serves 4 MB on to 4 packets (unclamped, loopback's cwnd reaches 17-20 here); the
    // program must apply it (its
    // map says what it set) and TCP must hold to it (TCP_INFO's cwnd, read while bytes are in flight).
    const script = `
      const { attachClamp, tcpInfo } = await import(${JSON.stringify(new URL('../../src/index.js', import.meta.url).href)});
      const net = await import('node:net');
      const clamp = await attachClamp({ cgroupPath: ${JSON.stringify(result.cgroupPath)}, pinDir: ${JSON.stringify(pinDir)} });
      let cwndMax = 0;
      let applied;
      const server = net.createServer((socket) => {
        clamp.setPackets(socket, 4);
        // cwnd counts once the program says it applied the clamp (before, the initial window may stand).
        const sample = setInterval(() => {
          applied = clamp.state(socket)?.appliedPackets ?? applied;
          if (applied !== undefined) cwndMax = Math.max(cwndMax, tcpInfo(socket).cwnd ?? 0);
        }, 2);
        socket.on('close', () => clearInterval(sample));
        socket.end(Buffer.alloc(4 << 20));
      });
      server.listen(0, '127.0.0.1', () => {
        const client = net.connect(server.address().port, '127.0.0.1');
        // A slow reader: the window stays the limit, so the clamp is what holds cwnd down.
        client.on('data', () => { client.pause(); setTimeout(() => client.resume(), 1); });
        client.on('close', () => { console.log(JSON.stringify({ backend: clamp.backend, reason: clamp.fallbackReason ?? null, uid: process.getuid(), updates: clamp.stats().updatesApplied, applied: applied ?? null, cwndMax })); server.close(); });
      });`;
    // Join the cgroup as root, then drop to nobody: the cgroup is fixed before the server listens.
    const child = spawn(
      'sh',
      [
        '-c',
        `echo $$ > ${join(result.cgroupPath, 'cgroup.procs')} && exec setpriv ` +
          `--reuid=nobody --regid=nogroup --clear-groups ${process.execPath} ` +
          `--input-type=module -e "$0"`,
        script,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let output = '';
    child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    assert.equal(code, 0, output);
    const report = JSON.parse(output.trim().split('\n').at(-1)!) as {
      backend: string;
      reason: string | null;
      uid: number;
      applied: number | null;
      cwndMax: number;
    };
    assert.notEqual(report.uid, 0);
    assert.equal(report.backend, 'bpf', report.reason ?? '');
    assert.equal(report.applied, 4, `the program applied ${report.applied} packets for the child's 4`);
    assert.ok(report.cwndMax > 0 && report.cwndMax <= 4, `cwnd at most the clamp: ${report.cwndMax}`);
  });

  // Several origins on one host (workers, or a restart of many) start at once on fresh pins: every one checks for a
  // pinned link before any has loaded (the verifier takes a while), all attach, and only the first can pin its link. A
  // bench of three labs once ran its Trickle cell on pacing-rate so ("bpf_link__pin failed: File exists").
  it('gives every origin started at once on fresh pins the clamp', async () => {
    const racePin = `${pinDir}-race`;
    await teardownClamp({ pinDir: racePin, cgroup }).catch(() => undefined);
    const startAtMs = Date.now() + 1500;
    const script = `
      const { attachClamp } = await import(${JSON.stringify(new URL('../../src/index.js', import.meta.url).href)});
      await new Promise((resolve) => setTimeout(resolve, ${startAtMs} - Date.now()));
      const clamp = await attachClamp({ cgroupPath: ${JSON.stringify(cgroup)}, pinDir: ${JSON.stringify(racePin)}, join: true });
      console.log(JSON.stringify({ backend: clamp.backend, reason: clamp.fallbackReason ?? null }));`;
    try {
      const reports = await Promise.all(
        Array.from({ length: 3 }, async () => {
          const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let output = '';
          child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
          const [code] = (await once(child, 'exit')) as [number];
          assert.equal(code, 0, output);
          return JSON.parse(output.trim().split('\n').at(-1)!) as { backend: string; reason: string | null };
        }),
      );
      assert.deepEqual(
        reports.map((r) => r.backend),
        ['bpf', 'bpf', 'bpf'],
        reports.map((r) => r.reason ?? 'bpf').join('; '),
      );
    } finally {
      await teardownClamp({ pinDir: racePin, cgroup }).catch(() => undefined);
    }
  });

  it('falls back to pacing-rate with the reason when the process is outside the cgroup', async () => {
    const clamp = await attachClamp({ cgroupPath: `${cgroup}-elsewhere`, pinDir: `${pinDir}-elsewhere` });
    try {
      assert.equal(clamp.backend, 'pacing-rate');
      assert.match(clamp.fallbackReason ?? '', /not in cgroup .*join: true/);
    } finally {
      await teardownClamp({ pinDir: `${pinDir}-elsewhere`, cgroup: `${cgroup}-elsewhere` }).catch(() => undefined);
    }
  });
});
