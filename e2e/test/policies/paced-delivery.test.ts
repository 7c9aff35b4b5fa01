/**
 * Delivery policies on a path with a real RTT and MTU (the lab, root): `trickle serve` in the
 * origin namespace, curl in the player namespace, 50 Mbit/s with 100 ms RTT and a 2 x BDP
 * tail-drop buffer. The token-bucket and pacing policies' throttled goodput is within 5% of what
 * they aim at (R x headroom, R of each VBR block); trickle's is between R and gain x R (within 5%),
 * the band Algorithm 1 promises (the clamp caps, catch-up floors); pacing is measured in the kernel
 * (the schedule in the sock_ops program) and block by block (no BPF program); trickle with the BPF backend holds the
 * server's cwnd at the clamp it computed, and
 * lifts the clamp to catch up when the link drops below R; aborted responses leave no clamp
 * map entries; an A/B group's initial window (TCP_BPF_IW through the same BPF program) is
 * applied and shortens small transfers by the slow-start rounds it saves.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '@trickle/native';
import { catchUpsOf, cwndClampOf, type FlowRecord, kernelPhaseOf, throttledWriteBlocksOf } from '@trickle/origin';
import { labDown, labUp, symmetricLink, type Lab } from '../../src/index.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const media = testMediaRoot();
const skip = skipUnless('the paced-delivery tests', { root: true });
const clampCgroup = 'trickle-test-policies';
const clampPinDir = '/run/trickle/bpf-test-policies';
const iwCgroup = 'trickle-test-iw';
const cubicCgroup = 'trickle-test-cubic';
const cubicPinDir = '/run/trickle/bpf-test-cubic';
const iwPinDir = '/run/trickle/bpf-test-iw';
const cli = resolve(import.meta.dirname, '..', '..', '..', '..', 'bin', 'trickle.js');

/**
 * What each policy aims throttled blocks at, as a multiple of the media rate R (the defaults; trickle:
 * R at the clamp floor). cmcd serves progressive files at the paper's rate under kernel pacing's headroom.
 */
const aimOverR: Record<string, number> = {
  'app-pacing': 1.25,
  'app-pacing-16k': 1.25,
  pacing: 1.25,
  trickle: 1.2,
  cmcd: 1.25,
};

/**
 * The flows measured side by side: each policy once, and pacing also block by block (its path without the BPF program).
 */
const measured: readonly {
  readonly label: string;
  readonly policy: string;
  readonly origin: 'bbr' | 'cubic' | 'cubic-user-space';
}[] = [
  { label: 'app-pacing', policy: 'app-pacing', origin: 'bbr' },
  { label: 'app-pacing-16k', policy: 'app-pacing-16k', origin: 'bbr' },
  { label: 'trickle', policy: 'trickle', origin: 'bbr' },
  { label: 'pacing', policy: 'pacing', origin: 'cubic' },
  { label: 'cmcd', policy: 'cmcd', origin: 'cubic' },
  { label: 'pacing (user space)', policy: 'pacing', origin: 'cubic-user-space' },
];

function capture(lab: Lab, command: readonly string[], host: 'player' | 'origin' = 'player'): Promise<string> {
  // 28: curl's timeout, which the abort tests use on purpose.
  return lab.output(host, command, { okExitCodes: [0, 28] });
}

describe('paced delivery through the lab', { skip }, () => {
  let lab: Lab;
  let base: string;
  /**
   * A second origin whose connections use cubic, for the kernel-pacing policies (see below), and a third without the
   * BPF program.
   */
  let cubicBase: string;
  let cubicUserSpaceBase: string;
  /** A third origin whose A/B groups differ only in their initial window. */
  let iwBase: string;
  let configDir: string;
  const getJson = async <T>(path: string, from = base): Promise<T> =>
    JSON.parse(await capture(lab, ['curl', '-sf', `${from}${path}`])) as T;
  const flows = async (from = base) => (await getJson<{ flows: FlowRecord[] }>('/api/flows', from)).flows;

  before(async () => {
    lab = await labUp('tpol', symmetricLink({ rateBps: 50e6, rttMs: 100, bufferBdp: 2 }));
    base = `http://${lab.address('origin')}:8080`;
    cubicBase = `http://${lab.address('origin')}:8081`;
    cubicUserSpaceBase = `http://${lab.address('origin')}:8083`;
    const serve = [
      process.execPath,
      cli,
      'serve',
      '--media',
      media!,
      '--host',
      lab.address('origin'),
      '--public-ops',
      '--allow-policy-override',
      '--startup-seconds',
      '2',
      '--log-level',
      'warn',
    ];
    // A clamp of its own (cgroup, program, pinned maps): other tests' sockets must not show up in its map.
    lab.spawn('origin', [...serve, '--port', '8080'], {
      stdio: 'inherit',
      env: {
        ...process.env,
        TRICKLE_DELIVERY__CLAMP__CGROUP: clampCgroup,
        TRICKLE_DELIVERY__CLAMP__PIN_DIR: clampPinDir,
      },
    });
    lab.spawn('origin', [...serve, '--port', '8081', '--congestion-control', 'cubic'], {
      stdio: 'inherit',
      env: {
        ...process.env,
        TRICKLE_DELIVERY__CLAMP__CGROUP: cubicCgroup,
        TRICKLE_DELIVERY__CLAMP__PIN_DIR: cubicPinDir,
      },
    });
    lab.spawn('origin', [...serve, '--port', '8083', '--congestion-control', 'cubic', '--clamp-backend', 'none'], {
      stdio: 'inherit',
    });
    iwBase = `http://${lab.address('origin')}:8082`;
    configDir = await mkdtemp(join(tmpdir(), 'trickle-iw-'));
    const groups = [
      { name: 'iw10', policy: 'bulk', weight: 1, initialWindowPackets: 10 },
      { name: 'iw40', policy: 'bulk', weight: 1, initialWindowPackets: 40 },
    ];
    await writeFile(join(configDir, 'iw.json'), JSON.stringify({ delivery: { ab: groups, abSeed: 7 } }));
    lab.spawn('origin', [...serve, '--port', '8082', '--config', join(configDir, 'iw.json')], {
      stdio: 'inherit',
      env: { ...process.env, TRICKLE_DELIVERY__CLAMP__CGROUP: iwCgroup, TRICKLE_DELIVERY__CLAMP__PIN_DIR: iwPinDir },
    });
    for (const from of [base, cubicBase, cubicUserSpaceBase, iwBase]) await lab.waitForHttp(`${from}/healthz`);
  });
  after(async () => {
    await labDown('tpol');
    await teardownClamp({ cgroup: clampCgroup, pinDir: clampPinDir });
    await teardownClamp({ cgroup: iwCgroup, pinDir: iwPinDir });
    await teardownClamp({ cgroup: cubicCgroup, pinDir: cubicPinDir });
    if (configDir !== undefined) await rm(configDir, { recursive: true, force: true });
  });

  it("keeps every policy's throttled goodput within 5% of its aim, and trickle's cwnd at the clamp", async () => {
    const health = await getJson<{ delivery: { clamp: { backend: string; fallbackReason: string | null } } }>(
      '/healthz',
    );
    assert.equal(health.delivery.clamp.backend, 'bpf', `clamp backend: ${JSON.stringify(health.delivery.clamp)}`);
    // About 12 s of the ~3 Mbit/s progressive file: 2 s of startup, ~10 s throttled; all five at once (~20 Mbit/s of
    // 50).
    // Kernel pacing is measured over cubic: under BBR a pacing cap far below the path's rate (this
    // clip has a near-still stretch at 0.2 Mbit/s) lowers BBR's bandwidth model, and BBR then grows
    // back by 1.25x per 8-RTT cycle when the media rate rises: 0.89-0.92 x aim here, a property of
    // SO_MAX_PACING_RATE over BBR that the README states; trickle and the token buckets run over the default (BBR).
    const bases = { bbr: base, cubic: cubicBase, 'cubic-user-space': cubicUserSpaceBase };
    await Promise.all(
      measured.map(({ policy, origin }) =>
        capture(lab, [
          'curl',
          '-sf',
          '-o',
          '/dev/null',
          '-r',
          '0-4499999',
          `${bases[origin]}/media/demo/progressive.mp4?policy=${policy}`,
        ]),
      ),
    );
    const recordsByOrigin = {
      bbr: await flows(),
      cubic: await flows(cubicBase),
      'cubic-user-space': await flows(cubicUserSpaceBase),
    };
    const failures: string[] = [];
    // Every policy's figures are printed before any is judged, so a failing run shows all of them.
    for (const { label, policy, origin } of measured) {
      const aim = aimOverR[policy]!;
      const record = recordsByOrigin[origin].find((r) => r.policy === policy);
      assert.ok(record?.completed && record.throttling !== null, `${label}: a completed, throttled flow`);
      // The aim of the phase: bytes over the time they take at each block's aimed rate (trickle aims blocks whose clamp
      // hits the floor at R).
      const aimBps = record.paceRateBps!.mean;
      const ratio = record.throttling.goodputBps! / aimBps;
      assert.equal(record.congestionControl, origin === 'bbr' ? 'bbr' : 'cubic');
      // Kernel pacing's phase ran in the sock_ops program where it is attached, block by block where not.
      if (policy === 'pacing' || policy === 'cmcd')
        assert.equal(
          kernelPhaseOf(record)?.started ?? false,
          origin === 'cubic',
          `${label}: kernel phase ${JSON.stringify(kernelPhaseOf(record))}`,
        );
      console.log(
        `# ${label} (${record.congestionControl}): throttled ` +
          `goodput ${(record.throttling.goodputBps! / 1e6).toFixed(2)} Mbit/s ` +
          `= ${ratio.toFixed(3)} x aim ${(aimBps / 1e6).toFixed(2)} Mbit/s ` +
          `(R ${(record.targetRateBps!.mean / 1e6).toFixed(2)} Mbit/s) ` +
          `over ${record.throttling.durationMs} ms, startup ` +
          `backlog ${record.throttling.startupBacklogBytes} B; backend ${record.backend} ` +
          `(${record.reason.split('; ').slice(-1)[0]}); kernel ` +
          `phase ${JSON.stringify(kernelPhaseOf(record) ?? null)}; catch-ups ${catchUpsOf(record)}, ` +
          `write-throttled blocks ${throttledWriteBlocksOf(record)}, sendfile ` +
          `calls ${record.sendfileCalls}; srtt ${record.srttUs} us; ` +
          `retrans ${record.retransmittedSegments}; ` +
          `cwnd ${JSON.stringify(record.cwndPackets)}; ` +
          `clamp ${JSON.stringify(cwndClampOf(record)?.appliedClampPackets)}, cwnd ` +
          `then ${JSON.stringify(cwndClampOf(record)?.cwndWhileClampedPackets)}`,
      );
      // With the phase in the kernel user space writes the response and steps aside: the 4.5 MB in a
      // few sendfile calls (8 measured: the startup's as the window opens, then the phase's as a
      // third of its send buffer frees), where block by block it is one per block (~70 of 64 kB).
      if (kernelPhaseOf(record)?.started === true && !(record.sendfileCalls !== null && record.sendfileCalls <= 16))
        failures.push(`${label}: ${record.sendfileCalls} sendfile calls for a response whose phase ran in the kernel`);
      if (
        kernelPhaseOf(record) === null &&
        !(record.sendfileCalls !== null && record.sendfileCalls >= throttledWriteBlocksOf(record))
      )
        failures.push(
          `${label}: ${record.sendfileCalls} sendfile calls for ${throttledWriteBlocksOf(record)} throttled blocks`,
        );
      if (policy === 'trickle') {
        // Algorithm 1 bounds trickle's rate, it does not set it: the clamp caps it at gain x R (cwnd / rtt), catch-up
        // keeps it at R or above.
        const overR = record.throttling.goodputBps! / record.targetRateBps!.mean;
        if (!(overR >= 0.95 && overR <= aim * 1.05))
          failures.push(`trickle: goodput ${overR.toFixed(3)} x R, outside [0.95, ${aim} x 1.05]`);
        continue;
      }
      if (Math.abs(aimBps / record.targetRateBps!.mean - aim) >= 0.01)
        failures.push(`${label} aims at ${(aimBps / record.targetRateBps!.mean).toFixed(3)} x R, not ${aim}`);
      if (Math.abs(ratio - 1) > 0.05) failures.push(`${label}: goodput ${ratio.toFixed(3)} x its aim`);
    }
    assert.deepEqual(failures, []);
    const trickle = recordsByOrigin.bbr.find((r) => r.policy === 'trickle')!;
    assert.equal(trickle.backend, 'bpf');
    // Known and open: on this VBR clip trickle still lifts the clamp a few times on an unconstrained path
    // (see the issue note); reported here so a change shows up, not asserted.
    console.log(`# trickle catch-ups on an unconstrained path: ${catchUpsOf(trickle)}`);
    const trickleClamp = cwndClampOf(trickle)!;
    const clamp = trickleClamp.appliedClampPackets!;
    const cwnd = trickleClamp.cwndWhileClampedPackets!;
    assert.ok(
      Math.abs(cwnd.mean - clamp.mean) <= Math.max(2, 0.1 * clamp.mean),
      `cwnd ${JSON.stringify(cwnd)} held at the clamp ${JSON.stringify(clamp)}`,
    );
    // The kernel's clamp is the one user space computed from the same rtt and mss (within the RTT drift between
    // samples).
    assert.ok(
      Math.abs(clamp.mean - trickleClamp.clampPackets!.mean) <= Math.max(2, 0.15 * clamp.mean),
      `applied ${JSON.stringify(clamp)} vs computed ${JSON.stringify(trickleClamp.clampPackets)}`,
    );
  });

  it(
    'lifts the trickle clamp to catch up when the link drops below R, and clears clamp ' + 'entries when clients go',
    async () => {
      const before = (await flows()).length;
      const download = capture(lab, [
        'curl',
        '-sf',
        '-o',
        '/dev/null',
        '-r',
        '0-4499999',
        `${base}/media/demo/progressive.mp4?policy=trickle`,
      ]);
      // R is ~3 Mbit/s: 1 Mbit/s from 3 s to 6 s puts goodput below R; then the link comes back.
      await new Promise((r) => setTimeout(r, 3000));
      lab.setRate('down', 1e6);
      await new Promise((r) => setTimeout(r, 3000));
      lab.setRate('down', 50e6);
      await download;
      const record = (await flows()).slice(before).find((r) => r.policy === 'trickle')!;
      console.log(
        `# trickle under a 3 s drop to 1 Mbit/s: ${catchUpsOf(record)} catch-up(s), ` +
          `goodput ${(record.throttling!.goodputBps! / 1e6).toFixed(2)} Mbit/s, ` +
          `reason: ${record.reason}`,
      );
      assert.ok(catchUpsOf(record) >= 1, 'the clamp was lifted to catch up');

      // Aborted mid-response: the kernel drops each socket's entry when it closes.
      await Promise.all(
        Array.from({ length: 6 }, (_, i) =>
          capture(lab, [
            'curl',
            '-s',
            '-o',
            '/dev/null',
            '--max-time',
            String(3 + i * 0.3),
            `${base}/media/demo/progressive.mp4?policy=trickle`,
          ]),
        ),
      );
      let entries = -1;
      for (let i = 0; i < 50 && entries !== 0; i++) {
        entries = (await getJson<{ delivery: { clamp: { entries: number }; activeResponses: number } }>('/healthz'))
          .delivery.clamp.entries;
        if (entries !== 0) await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(entries, 0, 'no clamp map entries left');
      const health = await getJson<{ delivery: { activeResponses: number; drainingResponses: number } }>('/healthz');
      assert.equal(health.delivery.activeResponses, 0);
      assert.equal(health.delivery.drainingResponses, 0);
    },
  );

  it(
    'gives each A/B group its initial window, and 40 packets save the slow-start rounds ' + 'of a 50 kB response',
    async () => {
      // 50 kB is 35 packets: from 10 packets, slow start needs three rounds (10 + 20 + 40); from 40, one,
      // if the receiver lets it: Linux opens with a receive window of about 20 packets, so the player
      // advertises 64 for this (as the Windows and macOS clients of the seeds' measurements do).
      const routes = (await capture(lab, ['ip', 'route', 'show']))
        .split('\n')
        .filter((line) => line.trim() !== '')
        .map((line) => line.trim().split(/\s+/));
      for (const route of routes)
        assert.equal(await lab.exec('player', ['ip', 'route', 'change', ...route, 'initrwnd', '64']), 0);
      // Connections born reno (allowed in a namespace, unlike cubic here), not switched to: a paced congestion control
      // (BBR, or one switched
      // to from BBR, which leaves TCP's internal pacing on) paces the first round at the rate of the
      // kernel's initial window, which hides most of a larger one (the README says so).
      const previousCc = (await capture(lab, ['sysctl', '-n', 'net.ipv4.tcp_congestion_control'], 'origin')).trim();
      assert.equal(await lab.exec('origin', ['sysctl', '-qw', 'net.ipv4.tcp_congestion_control=reno']), 0);
      // What the player sees: the time from the first response byte to the last, by client port.
      const transferMsByPort = new Map<number, number>();
      try {
        for (let i = 0; i < 12; i++) {
          const out = await capture(lab, [
            'curl',
            '-sf',
            '-o',
            '/dev/null',
            '-w',
            '%{local_port} %{time_starttransfer} %{time_total}',
            '-r',
            '0-49999',
            `${iwBase}/media/demo/progressive.mp4`,
          ]);
          const [port, firstByteSec, totalSec] = out.trim().split(' ').map(Number) as [number, number, number];
          transferMsByPort.set(port, (totalSec - firstByteSec) * 1000);
        }
      } finally {
        for (const route of routes) await lab.exec('player', ['ip', 'route', 'change', ...route]);
        await lab.exec('origin', ['sysctl', '-qw', `net.ipv4.tcp_congestion_control=${previousCc}`]);
      }
      const records = await flows(iwBase);
      const byGroup = new Map<string, FlowRecord[]>();
      for (const record of records) byGroup.set(record.group!, [...(byGroup.get(record.group!) ?? []), record]);
      const meanMs = (group: string) =>
        byGroup.get(group)!.reduce((sum, r) => sum + transferMsByPort.get(r.client.port!)!, 0) /
        byGroup.get(group)!.length;
      for (const [group, packets] of [
        ['iw10', 10],
        ['iw40', 40],
      ] as const) {
        const groupRecords = byGroup.get(group) ?? [];
        assert.ok(groupRecords.length >= 2, `${group}: ${groupRecords.length} connections of 12`);
        for (const record of groupRecords) {
          assert.deepEqual(record.initialWindow, { packets, status: 'applied' });
          assert.equal(record.congestionControl, 'reno');
        }
      }
      console.log(
        `# 50 kB over a 100 ms RTT, first to last byte at the player: ` +
          `iw10 ${meanMs('iw10').toFixed(0)} ms (n=${byGroup.get('iw10')!.length}), ` +
          `iw40 ${meanMs('iw40').toFixed(0)} ms (n=${byGroup.get('iw40')!.length})`,
      );
      // Two rounds saved; one and a half asserted, for the delayed ACKs and timer slack of a real path.
      assert.ok(meanMs('iw10') - meanMs('iw40') >= 150, 'iw40 finishes about two RTTs sooner');
    },
  );
});
