/**
 * deploy/systemd/trickle.service's steps run for real, as systemd would run them (root; no systemd
 * here): the unit's ExecStartPre as root, then its ExecStart as an unprivileged user started inside
 * the unit's cgroup with the unit's environment, with deploy/systemd/origin.yaml as the config. What
 * the test substitutes is only what a host fixes: the install path (this checkout), node's path,
 * the user (nobody), the unit's cgroup (a test one), the config's media, ports and TLS pair. The
 * origin reports ready (its clamp is the BPF one config demands), serves HTTPS, and a progressive
 * response's throttled phase runs in the kernel; ExecStopPost removes the pins.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { createCgroup, findCgroup2Mount, teardownClamp } from '@trickle/native';
import { kernelPhaseOf } from '@trickle/origin';
import { assertReadyWithBpf, httpsGet, progressiveFlowRecord, writeDeployedConfig } from './deployed-origin.js';
import { testMediaRoot } from '../helpers/media.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
const unitPath = join(repoRoot, 'deploy', 'systemd', 'trickle.service');
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const missing = !root ? "the unit's setup step needs root" : undefined;
if (missing !== undefined && process.env.CI === 'true')
  throw new Error(`CI must run the systemd unit's steps, but ${missing}`);
const skip = missing ?? false;
if (skip !== false) console.log(`# skipping the systemd unit's steps: ${skip}`);

/** The unit's cgroup, where systemd would make it: below the cgroup v2 hierarchy (unified or hybrid). */
const testCgroup = join(findCgroup2Mount() ?? '/sys/fs/cgroup', 'trickle-test-systemd.service');
const pinDir = '/run/trickle/bpf-test-systemd';

/** The [Service] section's keys (repeated ones in order), with systemd's "+" prefix kept. */
function serviceKeys(text: string): Map<string, string[]> {
  const keys = new Map<string, string[]>();
  let section = '';
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed.startsWith('[')) section = trimmed;
    else if (section === '[Service]' && trimmed !== '' && !trimmed.startsWith('#')) {
      const at = trimmed.indexOf('=');
      keys.set(trimmed.slice(0, at), [...(keys.get(trimmed.slice(0, at)) ?? []), trimmed.slice(at + 1)]);
    }
  }
  return keys;
}

/** What this host fixes, put where the unit names it. */
function onThisHost(value: string, configPath: string): string {
  return value
    .replaceAll('/sys/fs/cgroup/system.slice/%n', testCgroup)
    .replaceAll('/run/trickle/bpf', pinDir)
    .replaceAll('/usr/bin/node', process.execPath)
    .replaceAll('/opt/trickle', repoRoot)
    .replaceAll('/etc/trickle/origin.yaml', configPath)
    .replaceAll('--user trickle', '--user nobody');
}

describe("the systemd unit's steps", { skip }, () => {
  let dir: string;
  let origin: ChildProcess | undefined;
  let ca: Buffer;
  let publicUrl: string;
  let adminUrl: string;
  let keys: Map<string, string[]>;
  let configPath: string;
  let output = '';

  before(async () => {
    keys = serviceKeys(await readFile(unitPath, 'utf8'));
    dir = await mkdtemp(join(tmpdir(), 'trickle-systemd-'));
    // nobody reads the config and the TLS pair, as the unit's user reads /etc/trickle.
    await chmod(dir, 0o755);
    ({ configPath, ca, publicUrl, adminUrl } = await writeDeployedConfig(
      dir,
      await readFile(join(repoRoot, 'deploy', 'systemd', 'origin.yaml'), 'utf8'),
      18443 + (process.pid % 1000),
    ));
  });

  after(async () => {
    if (origin !== undefined && origin.exitCode === null) {
      origin.kill('SIGKILL');
      await once(origin, 'exit');
    }
    await teardownClamp({ pinDir, cgroup: testCgroup }).catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it(
    "runs the setup as root, the origin unprivileged in the unit's cgroup, clamped; " + 'stops and tears down',
    async () => {
      assert.deepEqual(keys.get('User'), ['trickle']);
      const [setup] = keys.get('ExecStartPre')!;
      assert.ok(setup!.startsWith('+'), 'the setup step runs with full privileges');
      await createCgroup(testCgroup);
      const setupRun = spawnSync('sh', ['-c', onThisHost(setup!.slice(1), configPath)], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(setupRun.status, 0, setupRun.stderr);
      assert.ok(existsSync(join(pinDir, 'trickle_targets')), 'maps pinned');

      // systemd starts the unit's processes in its cgroup, as its user, with its environment.
      const environment = Object.fromEntries(
        (keys.get('Environment') ?? []).map((entry) => onThisHost(entry, configPath).split('=', 2) as [string, string]),
      );
      const start = onThisHost(keys.get('ExecStart')![0]!, configPath);
      origin = spawn(
        'sh',
        [
          '-c',
          `echo $$ > ${testCgroup}/cgroup.procs && exec setpriv --reuid=nobody --regid=nogroup --clear-groups ${start}`,
        ],
        {
          env: { PATH: process.env.PATH, ...environment },
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      origin.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
      origin.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));

      await assertReadyWithBpf(adminUrl, origin, () => output);
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${origin.pid}/status`, 'utf8'))![1]);
      assert.notEqual(uid, 0, 'the origin runs unprivileged');

      // About 2 s of media, paced from its first byte.
      const progressive = await httpsGet(`${publicUrl}/media/demo/progressive.mp4`, ca, { range: 'bytes=0-799999' });
      assert.equal(progressive.status, 206);
      assert.ok(
        progressive.body.equals(
          (await readFile(join(testMediaRoot(), 'demo', 'progressive.mp4'))).subarray(0, 800_000),
        ),
      );
      // Metrics and client addresses are on the admin listener only.
      assert.equal((await httpsGet(`${publicUrl}/api/flows`, ca)).status, 404);
      const record = await progressiveFlowRecord(adminUrl);
      assert.equal(record.backend, 'bpf', record.reason);
      assert.equal(
        kernelPhaseOf(record)?.started,
        true,
        `the throttled phase ran in the kernel: ${JSON.stringify(kernelPhaseOf(record))}`,
      );

      origin.kill('SIGTERM');
      const [code] = (await once(origin, 'exit')) as [number | null];
      assert.equal(code, 0, output);
      const [stopPost] = keys.get('ExecStopPost')!;
      const teardown = spawnSync('sh', ['-c', onThisHost(stopPost!.slice(1), configPath)], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      assert.equal(teardown.status, 0, teardown.stderr);
      assert.ok(!existsSync(join(pinDir, 'trickle_targets')), 'pins removed');
    },
  );
});
