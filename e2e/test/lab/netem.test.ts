/**
 * The lab's netem backend on a kernel that has netem (root): directly where this kernel has it,
 * else inside a guest kernel that has it (`scripts/netem-vm`: Debian's kernel under qemu TCG, the
 * host's userland and this checkout shared), where this same file runs again. Two profiles (idle
 * RTT within 2 ms of the configured RTT plus the path's own, 3 ms from 100 ms where ping prints whole ms,
 * 3 ms more in the guest, whose emulated timers fire late,
 * bulk goodput within 3% of the rate, down to 25% below it in the guest, whose emulated sender is CPU-bound),
 * random loss (the kernel's own, unseeded) within its binomial interval, a trace's rate step seen
 * at the player within a second, and one response from `trickle serve` to curl under the trickle
 * policy (which clamp backend ran is said; with bpf the clamp must have been applied). In the
 * guest the tail-drop burst check is left out: the emulated sender cannot make a line-rate burst
 * (lab.test.ts checks tail drop on the delay line).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { release } from 'node:os';
import { resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { teardownClamp } from '@trickle/native';
import { cwndClampOf, type FlowRecord } from '@trickle/origin/flow-records';
import { stepTrace } from '@trickle/player-sim';
import { mean } from '../../src/experiment/statistics.js';
import {
  binomialInterval,
  bulkFlow,
  labDown,
  labUp,
  measureBulkGoodputBps,
  measureBurstDelivery,
  measureIdleRtt,
  measureRandomLoss,
  netemAvailable,
  profileLink,
  symmetricLink,
  tcpPayloadEfficiency,
  type Lab,
} from '../../src/lab/index.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const checkout = resolve(import.meta.dirname, '..', '..', '..', '..');
const cli = resolve(checkout, 'bin', 'trickle.js');
const inGuest = process.env.TRICKLE_NETEM_VM === '1';
const skip = skipUnless('the netem backend tests', { root: true });
const netemHere = skip === false ? netemAvailable() : { available: false, reason: 'not root' };
const where = inGuest ? `guest kernel ${release()} under qemu TCG` : `this kernel (${release()})`;

if (skip === false && (inGuest || netemHere.available)) {
  describe(`the lab's netem backend on ${where}`, () => {
    const name = 'tnem';
    after(() => labDown(name));

    // An emulated machine's own path costs time too (TCG: ~1 ms through the lab's three namespaces,
    // where a real host takes ~0.05 ms): measured on the same lab with netem at zero delay (1 Gbit/s),
    // and said beside each RTT.
    let pathRttMs = 0;

    it("measures the path's own RTT", async () => {
      const lab = await labUp(name, symmetricLink({ rateBps: 1e9, rttMs: 0 }), { backend: 'netem' });
      pathRttMs = (await measureIdleRtt(lab)).medianMs;
      console.log(`# netem on ${where}: the path's own RTT (netem at 0 ms) ${pathRttMs.toFixed(2)} ms`);
      assert.ok(pathRttMs < 2, `the path's own RTT ${pathRttMs} ms`);
    });

    // A DSL line, and the paper's DC2-like slow line (0.7 Mbit/s, 300 ms RTT, deep buffer). In the guest the slow
    // line's goodput is not measured: its transfer was most of the 47 s this line took there (the guest's run is
    // on the test budget's critical path) and judges the same rate conversion the DSL line judges; its long delay
    // is judged by its RTT. Where netem runs in this kernel both lines judge both.
    for (const profile of ['dsl-6mbit', 'slow-1mbit']) {
      const judgesGoodput = !inGuest || profile === 'dsl-6mbit';
      const link = profileLink(profile);
      const configuredRttMs = link.down.delayMs + link.up.delayMs;
      // ping prints whole milliseconds from 100 ms on: a path that long is read to 1 ms less finely. In the guest
      // netem's two delay timers (one each way) fire late, the emulated machine's lateness, not netem's: over the
      // path's own RTT (measured without timers) a 300 ms RTT read 2.2-3.1 ms long in 4 CI runs on this machine
      // kind (Intel hosts; 0.5 on AMD ones), 1.8-3.3 ms in 12 tickless boots on loopback, 0.5-1.7 in 8 boots with
      // the periodic tick netem-vm now keeps. 3 ms more in the guest: a bound of 6 ms there at 300 ms, 2.7 ms over
      // the longest reading; it still fails a delay lost on one direction (150 ms) or read in the wrong unit.
      const guestTimerLatenessMs = inGuest ? 3 : 0;
      const boundMs = 2 + (configuredRttMs >= 100 ? 1 : 0) + guestTimerLatenessMs;
      it(`${profile}: idle RTT within ${boundMs} ms${judgesGoodput ? ', bulk goodput at the rate' : ''}`, async () => {
        const lab = await labUp(name, link, { backend: 'netem' });
        assert.equal(lab.state.backend, 'netem');
        const rttMs = (await measureIdleRtt(lab)).medianMs;
        // What netem adds to the path, against what was configured.
        const errorMs = rttMs - pathRttMs - configuredRttMs;
        const rttLine =
          `# netem on ${where}, ${profile}: RTT configured ${configuredRttMs} ms, measured ${rttMs.toFixed(2)} ms ` +
          `(the path's own ${pathRttMs.toFixed(2)} ms, netem's error ${errorMs.toFixed(2)} ms)`;
        const judgeRtt = () =>
          assert.ok(
            Math.abs(errorMs) <= boundMs,
            `idle RTT ${rttMs} ms for ${configuredRttMs} ms on a path of ${pathRttMs} ms (bound ${boundMs} ms)`,
          );
        if (!judgesGoodput) {
          console.log(rttLine);
          judgeRtt();
          return;
        }
        // From 5 s: past slow start's overshoot and its recovery, which an emulated guest can stretch into a
        // retransmission timeout.
        const goodputBps = await measureBulkGoodputBps(lab, { durationMs: 16_000, fromMs: 5000 });
        const expectedBps = link.down.rateBps * tcpPayloadEfficiency;
        console.log(
          `${rttLine}; goodput ${(goodputBps / 1e6).toFixed(3)} Mbit/s ` +
            `= ${((goodputBps / expectedBps - 1) * 100).toFixed(1)}% of the payload rate ${(expectedBps / 1e6).toFixed(3)}`,
        );
        judgeRtt();
        // netem never lets more through than its rate (+3 %: the measurement's window): that is netem's property,
        // judged as tightly in the guest. Below it, a real host's sender keeps the queue full (-3 %); an emulated
        // guest's sender is the CPU-bound side at 6 Mbit/s, and its shortfall follows the host's CPU, not netem
        // (TCG: -0.0 to -3.6 % over 11 CI and hunt runs, then -10.8 % in a hunt's run 7 on a loaded host). In the
        // guest the lower bound only catches a rate set wrong by units (8x, 1000x): -25 %, which a stalled host
        // would have to hold for a quarter of the 11 s window to reach. A rate a few % low is not seen in the
        // guest; where netem runs in the host's own kernel this check judges it at -3 %.
        const shortfallBound = inGuest ? 0.25 : 0.03;
        const ratio = goodputBps / expectedBps;
        assert.ok(
          ratio <= 1.03 && ratio >= 1 - shortfallBound,
          `goodput ${goodputBps} vs ${expectedBps} (${((ratio - 1) * 100).toFixed(1)} %; bounds -${shortfallBound * 100} %, +3 %)`,
        );
      });
    }

    it('applies random loss within its binomial interval', async () => {
      const lossRate = 0.05;
      const lab = await labUp(
        name,
        { ...profileLink('dsl-6mbit'), down: { ...profileLink('dsl-6mbit').down, lossRate } },
        { backend: 'netem' },
      );
      // 2000 datagrams of 200 B every 2 ms: 0.8 Mbit/s, well below the link, slow enough for an emulated sender.
      const result = await measureRandomLoss(lab, 2000, 2000);
      // Judged at netem's own counters (what it dropped of what it was offered): end to end, an
      // emulated receiver that falls behind loses datagrams too (CI once read 17 % for 5 %). netem's
      // loss is the kernel's, unseeded: a binomial draw, outside this 99.99 % interval by chance in
      // 1 run of 10,000.
      const interval = binomialInterval(result.link.offered, lossRate, 3.89);
      console.log(
        `# netem on ${where}: loss configured 5%, netem ` +
          `dropped ${(result.link.lossRate * 100).toFixed(2)}% of ${result.link.offered} ` +
          `(99.99% interval ${(interval.low * 100).toFixed(2)}-${(interval.high * 100).toFixed(2)}%); ` +
          `end to end ${(result.lossRate * 100).toFixed(2)}% of ${result.sent} datagrams`,
      );
      // An emulated sender outruns its emulated kernel: datagrams are lost before netem (CI: netem saw
      // 1,765 of 2,000, and dropped 4.65 % of them). netem's draw is judged on what it saw, enough of it.
      assert.ok(
        result.link.offered >= 0.5 * result.sent,
        `netem saw ${result.link.offered} packets of ${result.sent} datagrams`,
      );
      assert.ok(
        result.link.lossRate >= interval.low && result.link.lossRate <= interval.high,
        `loss ${result.link.lossRate} outside [${interval.low}, ${interval.high}]`,
      );
    });

    it('drops the part of a burst that does not fit the buffer', {
      skip: inGuest ? 'an emulated sender cannot burst at line rate (the delay line is checked in lab.test.ts)' : false,
    }, async () => {
      const bufferBytes = 30_000;
      const link = profileLink('dsl-6mbit');
      const lab = await labUp(name, { ...link, down: { ...link.down, bufferBytes } }, { backend: 'netem' });
      const { sent, received, dropsAtBottleneck } = await measureBurstDelivery(lab, 200);
      const fits = Math.floor(bufferBytes / 1514);
      assert.ok(
        received >= fits && received <= fits + 10,
        `${received} of ${sent} delivered through a ${bufferBytes} B buffer`,
      );
      assert.equal(dropsAtBottleneck, sent - received, 'every loss is a tail drop at the bottleneck');
    });

    it("follows a trace's rate step within a second", async () => {
      // labUp returns once the replayer applied the trace's first point, and the trace's clock starts
      // there (the replayer takes ~3 s to start in the guest). The flow runs from the start (2.1 s in, in the
      // guest); its last 2.5 s before the step at 7 s are judged.
      const stepAtMs = 7000;
      // Under TCG an emulated sender reaches ~6 Mbit/s (the dsl-6mbit check) but not 8 (CI read
      // 5.0-6.5 Mbit/s in every bin for an 8 Mbit/s link): the guest steps 4 -> 1 Mbit/s, a host 8 -> 2.
      const highBps = inGuest ? 4e6 : 8e6;
      const lowBps = highBps / 4;
      // The replayer's change returns when `tc` has applied it. A host starts `ip netns exec .. tc` in
      // milliseconds; a guest under TCG took 0.7-1.1 s (17 CI runs, read from the first bin after the step, before
      // the replayer logged its changes). Netem is judged from where the change took effect; the replayer's delay
      // is judged on its own, against a bound three times the slowest seen in the guest.
      const lateBoundMs = inGuest ? 3000 : 250;
      const lab = await labUp(
        name,
        {
          ...symmetricLink({ rateBps: highBps, rttMs: 20, bufferBdp: 2 }),
          trace: stepTrace(highBps, lowBps, stepAtMs, 600_000),
        },
        { backend: 'netem' },
      );
      const zeroMs = Date.parse(lab.state.traceStartedAt!);
      const binMs = 250;
      const { binsBps, startedAtEpochMs } = await bulkFlow(
        lab,
        stepAtMs + lateBoundMs + 4000 - (Date.now() - zeroMs),
        0,
        1000,
        binMs,
        7003,
      );
      const step = (await lab.traceRateChanges()).find((change) => change.rateBps === lowBps);
      assert.ok(step !== undefined, 'the replayer applied the step');
      const appliedMs = step.appliedAtEpochMs - zeroMs;
      // The player's goodput per 250 ms on the trace's clock.
      const rates = binsBps.map((bps, i) => ({ atMs: startedAtEpochMs - zeroMs + i * binMs, bps }));
      const before = rates.filter((r) => r.atMs > stepAtMs - 2500 && r.atMs + binMs < stepAtMs);
      const settled = rates.filter((r) => r.atMs >= appliedMs + 1000 && r.atMs + binMs <= appliedMs + 3500);
      const show = (list: typeof rates) => list.map((r) => (r.bps / 1e6).toFixed(2)).join(', ');
      console.log(
        `# netem on ${where}: ${highBps / 1e6} -> ${lowBps / 1e6} Mbit/s at ${stepAtMs / 1000} s (flow ` +
          `from ${((startedAtEpochMs - zeroMs) / 1000).toFixed(1)} s; the replayer's change applied at ` +
          `${(appliedMs / 1000).toFixed(2)} s): before ${show(before)}; from 1 s after ${show(settled)} Mbit/s`,
      );
      assert.ok(
        appliedMs - stepAtMs <= lateBoundMs,
        `the replayer applied the step ${appliedMs - stepAtMs} ms late (bound ${lateBoundMs} ms)`,
      );
      // An emulated guest's coarse timers can move a chunk from one 250 ms bin to the next (CI read
      // 5.56 then 9.64 for 8 Mbit/s; 0.28 then 1.62 for 1): bins are judged against half the old rate (twice the
      // new one), the rate by their mean (81 % of the old rate, 115 % of the new).
      assert.ok(
        before.length >= 8 &&
          before.every((r) => r.bps > highBps / 2) &&
          mean(before.map((r) => r.bps)) > 0.8125 * highBps,
        `before the step: ${show(before)} Mbit/s`,
      );
      // A clear change (under half the old rate) in every bin taken with the bin before it: after the step's
      // losses, the receiver gets what waited behind a retransmission all at once (CI read 1.53 Mbit/s in the first
      // bin 1 s after the applied step, then 0.97), and a stalled guest reader moves a chunk to the next bin. On the
      // whole, the new rate.
      const pairsBps = settled.map((r) => (r.bps + (rates[rates.indexOf(r) - 1]?.bps ?? r.bps)) / 2);
      assert.ok(
        settled.length >= 8 &&
          pairsBps.every((bps) => bps < highBps / 2) &&
          mean(settled.map((r) => r.bps)) < 1.15 * lowBps,
        `from 1 s after the step: ${show(settled)} Mbit/s`,
      );
    });

    it('carries a response from trickle serve under the trickle policy', async () => {
      const lab: Lab = await labUp(name, profileLink('dsl-6mbit'), { backend: 'netem' });
      const base = `http://${lab.address('origin')}:8080`;
      // A clamp of its own (cgroup, program, pinned maps), removed after.
      const clamp = { cgroup: 'trickle-test-netem', pinDir: '/run/trickle/bpf-test-netem' };
      const origin = lab.spawn(
        'origin',
        [
          process.execPath,
          cli,
          'serve',
          '--media',
          testMediaRoot(),
          '--host',
          lab.address('origin'),
          '--public-ops',
          '--port',
          '8080',
          '--allow-policy-override',
          '--startup-seconds',
          '2',
          '--log-level',
          'warn',
        ],
        {
          stdio: 'inherit',
          env: {
            ...process.env,
            TRICKLE_DELIVERY__CLAMP__CGROUP: clamp.cgroup,
            TRICKLE_DELIVERY__CLAMP__PIN_DIR: clamp.pinDir,
          },
        },
      );
      try {
        const exited = once(origin, 'exit').then(([code]) => {
          throw new Error(`trickle serve exited (${String(code)}) before it answered`);
        });
        await Promise.race([lab.waitForHttp(`${base}/healthz`, { attempts: 600 }), exited]);
        const health = JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/healthz`])) as {
          delivery: { clamp: { backend: string; fallbackReason: string | null } };
        };
        // 1.5 MB of the ~3 Mbit/s progressive file: 2 s of startup, then ~2 s under the policy.
        const length = 1_500_000;
        const size = Number(
          await lab.output('player', [
            'curl',
            '-sf',
            '-o',
            '/dev/null',
            '-w',
            '%{size_download}',
            '-r',
            `0-${length - 1}`,
            `${base}/media/demo/progressive.mp4?policy=trickle`,
          ]),
        );
        const { flows } = JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/flows`])) as {
          flows: FlowRecord[];
        };
        const record = flows.find((r) => r.policy === 'trickle');
        console.log(
          `# netem on ${where}: trickle served ${size} B; clamp ` +
            `backend ${health.delivery.clamp.backend}` +
            `${health.delivery.clamp.fallbackReason === null ? '' : ` (${health.delivery.clamp.fallbackReason})`}; ` +
            `record: backend ${record?.backend}, throttled ` +
            `goodput ` +
            `${record?.throttling?.goodputBps === undefined || record.throttling.goodputBps === null ? '-' : (record.throttling.goodputBps / 1e6).toFixed(2)} ` +
            `Mbit/s, R ` +
            `${record?.targetRateBps === null || record?.targetRateBps === undefined ? '-' : (record.targetRateBps.mean / 1e6).toFixed(2)} ` +
            `Mbit/s, clamp ${JSON.stringify(record === undefined ? null : cwndClampOf(record)?.appliedClampPackets)}, ` +
            `srtt ${record?.srttUs} us`,
        );
        assert.equal(size, length);
        assert.ok(record?.completed, 'a completed trickle flow record');
        assert.equal(record.backend, health.delivery.clamp.backend, 'the record says the backend that ran');
        if (record.backend === 'bpf')
          assert.ok(
            (cwndClampOf(record)?.appliedClampPackets ?? null) !== null,
            'with the bpf backend the clamp was applied',
          );
      } finally {
        if (origin.exitCode === null && origin.signalCode === null) {
          origin.kill('SIGTERM');
          await once(origin, 'exit');
        }
        await teardownClamp(clamp);
      }
    });
  });
} else if (skip === false) {
  describe(`the lab's netem backend in a guest kernel (${netemHere.reason ?? 'no netem here'})`, () => {
    const script = resolve(checkout, 'scripts', 'netem-vm');
    const check = spawnSync(script, ['check'], { encoding: 'utf8' });
    const noGuest =
      check.status === 0
        ? false
        : `no guest kernel can start here: ${(check.stdout || check.stderr || check.error?.message || '').trim()}`;
    // In CI a guest that cannot start fails the test; elsewhere its checks are skipped, the reason printed.
    const guestSkip = noGuest !== false && process.env.CI !== 'true' ? noGuest : false;
    if (guestSkip !== false) console.log(`# skipping the netem checks in a guest kernel: ${guestSkip}`);

    it('says what is wrong with a bad command line, in one line', () => {
      const none = spawnSync(script, ['run', '--'], { encoding: 'utf8' });
      assert.equal(none.status, 2);
      assert.match(none.stderr, /^netem-vm: run: no command \(usage: .*\)\n$/);
      const unknown = spawnSync(script, ['start'], { encoding: 'utf8' });
      assert.equal(unknown.status, 2);
      assert.match(unknown.stderr, /^netem-vm: usage: scripts\/netem-vm prepare \| check \| run .*\n$/);
    });

    // One boot for every guest check: the guest says its kernel and that netem works there, then runs this file.
    it('boots a kernel with netem, and passes every check inside it', {
      skip: guestSkip,
      timeout: 20 * 60_000,
    }, async () => {
      assert.equal(noGuest, false);
      const started = Date.now();
      const command =
        `uname -r; tc qdisc add dev lo root netem delay 1ms && tc qdisc del dev lo root && ` +
        `echo netem-here; exec ${process.execPath} --test ` +
        `--test-reporter=spec ${resolve(import.meta.filename)}`;
      const guest = spawn(script, ['run', '--timeout', '1080', '--', 'sh', '-c', command], {
        cwd: checkout,
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, NO_COLOR: '1' },
      });
      const lines: string[] = [];
      createInterface({ input: guest.stdout }).on('line', (line) => {
        lines.push(line);
        console.log(`# guest: ${line}`);
      });
      const [code] = (await once(guest, 'exit')) as [number | null];
      console.log(`# guest run: ${((Date.now() - started) / 1000).toFixed(0)} s, exit ${code}`);
      const release = lines.findIndex((line) => /^6\.\d+\.\d+-\d+-amd64$/.test(line));
      assert.ok(release >= 0, 'the guest kernel says its release');
      assert.equal(lines[release + 1], 'netem-here', 'the guest kernel has netem');
      assert.equal(code, 0, `the checks failed in the guest:\n${lines.slice(-40).join('\n')}`);
      // The guest ran every check of this file: 7 tests, the burst one skipped there (an emulated sender cannot burst
      // at line rate).
      const summary = (key: string) =>
        Number(lines.find((line) => line.startsWith(`ℹ ${key} `))?.slice(`ℹ ${key} `.length));
      assert.deepEqual(
        { tests: summary('tests'), pass: summary('pass'), fail: summary('fail'), skipped: summary('skipped') },
        { tests: 7, pass: 6, fail: 0, skipped: 1 },
      );
    });
  });
}
