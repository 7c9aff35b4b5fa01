/**
 * The issue's "done when": `trickle serve --ab ...` serves the demo to dash.js under every policy.
 * One origin with all six policies as A/B groups, in the lab's origin namespace; Debian Chromium
 * in the player namespace (every byte crosses a 40 Mbit/s, 40 ms link, three sessions at a time). Each dash.js session pins
 * one policy with `?policy=` (the player page adds it to every media request), plays the 24 s
 * demo to the end without a rebuffer, and the origin's flow records and /metrics show that policy
 * served it: full speed for the first 5 s of media, throttled after, and what each policy adds
 * (trickle's BPF clamp, cmcd's CMCD keys). An hls.js session without a pin gets the connections'
 * A/B groups.
 */
import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '@trickle/native';
import { cwndClampOf, type FlowRecord, kernelPhaseOf } from '@trickle/origin';
import { labDown, labUp, launchChromium, symmetricLink, type Lab, type LaunchedChromium } from '../../src/index.js';
import { machineStalls, playToEnd, starvedStalls, type PlayedSession } from '../../src/index.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const media = testMediaRoot();
const skip = skipUnless('the player-per-policy tests', { root: true, chromium: true });

const cli = resolve(import.meta.dirname, '..', '..', '..', '..', 'bin', 'trickle.js');
const policies = ['bulk', 'app-pacing', 'app-pacing-16k', 'trickle', 'pacing', 'cmcd', 'sammy'] as const;
const clampCgroup = 'trickle-test-players';
const clampPinDir = '/run/trickle/bpf-test-players';
/** Not a multiple of the 2 s segments: AAC segments start a few ms before the video ones. */
const startupSeconds = 5;
const demoSegments = 12;

describe('dash.js and hls.js from `trickle serve --ab` under every policy, through the lab', { skip }, () => {
  let lab: Lab;
  let base: string;
  let chromium: LaunchedChromium;
  const sessions = new Map<string, PlayedSession>();
  let flows: FlowRecord[] = [];
  let metrics = '';

  before(async () => {
    lab = await labUp('tply', symmetricLink({ rateBps: 40e6, rttMs: 40, bufferBdp: 2 }));
    base = `http://${lab.address('origin')}:8090`;
    const ab = policies.map((policy) => `${policy}:1`).join(',');
    lab.spawn(
      'origin',
      [
        process.execPath,
        cli,
        'serve',
        '--media',
        media!,
        '--host',
        lab.address('origin'),
        '--public-ops',
        '--port',
        '8090',
        '--ab',
        ab,
        '--ab-seed',
        '3',
        '--allow-policy-override',
        '--startup-seconds',
        String(startupSeconds),
        '--log-level',
        'warn',
      ],
      {
        stdio: 'inherit',
        env: {
          ...process.env,
          TRICKLE_DELIVERY__CLAMP__CGROUP: clampCgroup,
          TRICKLE_DELIVERY__CLAMP__PIN_DIR: clampPinDir,
        },
      },
    );
    await lab.waitForHttp(`${base}/healthz`);
    chromium = await launchChromium({ namespace: lab.namespace('player') });
    // Rounds of three concurrent sessions: this machine has two cores to decode with, beside a lab test. Rounds of
    // four on a 20 Mbit/s link once made a 'stall the delivery made' under app-pacing-16k (CI, 2026-11-28, once in
    // about 40 runs): four sessions in step ask up to 4 x 1.25 x a 4.8 Mbit/s block (24 Mbit/s) at once, bulk's
    // besides, and four decoders share the two cores.
    const runs: [string, string][] = policies.map((policy) => [
      policy,
      `player=dashjs&policy=${policy}${policy === 'cmcd' ? '&cmcd=1' : ''}`,
    ]);
    runs.push(['hlsjs-ab', 'player=hlsjs']);
    const perRound = 3;
    for (let from = 0; from < runs.length; from += perRound) {
      const round = runs.slice(from, from + perRound);
      const results = await Promise.all(
        round.map(([, query]) => playToEnd(chromium.context, base, 'demo', resolve(media!, 'demo'), query)),
      );
      round.forEach(([name], i) => sessions.set(name, results[i]!));
    }
    flows = (JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/flows`])) as { flows: FlowRecord[] })
      .flows;
    metrics = await lab.output('player', ['curl', '-sf', `${base}/metrics`]);
  });

  after(async () => {
    await chromium?.close();
    await labDown('tply');
    await teardownClamp({ cgroup: clampCgroup, pinDir: clampPinDir });
  });

  for (const policy of policies) {
    it(`dash.js plays the demo to the end under ${policy}, and the flow records show ${policy} served it`, () => {
      const session = sessions.get(policy)!;
      assert.deepEqual(session.corrupt, [], 'every media body equals its file');
      assert.ok(session.bodiesChecked >= demoSegments, `${session.bodiesChecked} media bodies checked`);
      assert.deepEqual(session.errors, []);
      assert.equal(session.ended, true);
      assert.ok(session.startupMs !== null && session.startupMs < 10_000, `startup ${session.startupMs} ms`);
      // Three sessions decode at once on two cores, beside a lab test: a 'waiting' shorter than the
      // watchdog's 500 ms can come from the machine (seen once in CI under app-pacing, 179 ms at 5.4 s,
      // 2026-11-25), under any policy, and so can a confirmed stall with media buffered ahead (the
      // decoder starved), and so can a starved stall right after a video freeze (a 10-run hunt once saw,
      // under trickle, whose 1.2 x R leaves a segment 0.2 of its length to spare, the decoder freeze for
      // 1.5 s and the buffer run out 0.5 s later: the page's requests starved with it). So: no stall
      // the delivery made (confirmed, under half a second ahead, not after a freeze), under every
      // policy; the machine's are printed as such. How often viewers rebuffer under each policy is
      // measured with intervals by the QoE benchmarks, not asserted here.
      assert.deepEqual(starvedStalls(session), [], 'no stall the delivery made on a 40 Mbit/s link');
      const machine = machineStalls(session);
      if (machine.length > 0)
        console.log(
          `# ${policy}: stalls the machine made (after video freezes ${JSON.stringify(session.videoFreezes)}): ` +
            JSON.stringify(machine),
        );
      if (session.rebuffers.length > 0)
        console.log(`# ${policy}: short waiting episodes ${JSON.stringify(session.rebuffers)}`);

      const served = flows.filter(
        (f) => f.policy === policy && f.role === 'segment' && f.reason.startsWith(`?policy=${policy}`),
      );
      // dash.js may abandon a slow segment request and fetch it again at a lower rung: an aborted response, not a
      // failure.
      const completed = new Set(served.filter((f) => f.completed).map((f) => f.segmentNumber));
      assert.equal(
        completed.size,
        demoSegments,
        `segments served completely under ${policy}: ${[...completed].sort((a, b) => a! - b!).join(',')}`,
      );
      for (const flow of served) {
        assert.ok(
          flow.group !== null && (policies as readonly string[]).includes(flow.group),
          `A/B group ${flow.group}`,
        );
        const inStartup = (flow.segmentNumber! - 1) * 2 < startupSeconds;
        // cmcd decides from the player's CMCD (startup, a low buffer, a measured throughput under the next rung), not
        // from the media time; sammy from its initial phase (without CMCD: the presentation's first startup seconds,
        // or a viewer run that has fetched less than that).
        const fullSpeed =
          policy === 'bulk' ||
          (policy === 'cmcd'
            ? /CMCD (su|bl \d+ ms below|mtp)/.test(flow.reason)
            : policy === 'sammy'
              ? /sammy: initial phase/.test(flow.reason)
              : inStartup);
        if (fullSpeed)
          assert.equal(flow.throttling, null, `segment ${flow.segmentNumber} under ${policy}: ${flow.reason}`);
        // Trickle in the kernel: a segment small enough to be acknowledged within its first round trips (a few kB of a
        // near-still scene) has no phase to throttle.
        else if (flow.completed && kernelPhaseOf(flow)?.started !== false)
          assert.ok(
            flow.throttling !== null && flow.targetRateBps !== null,
            `segment ${flow.segmentNumber} under ${policy} throttled: ${flow.reason}`,
          );
      }
      // Completed ones: a response dash.js abandoned after its first block has no later block to sample the clamp at.
      const throttled = served.filter((f) => f.throttling !== null && f.completed);
      const aborted = served.filter((f) => !f.completed).map((f) => f.segmentNumber);
      if (aborted.length > 0) console.log(`# ${policy}: dash.js abandoned segments ${aborted.join(', ')}`);
      if (policy === 'trickle') {
        for (const flow of throttled)
          assert.ok(
            flow.backend === 'bpf' && (cwndClampOf(flow)?.appliedClampPackets ?? null) !== null,
            `segment ${flow.segmentNumber}: backend ${flow.backend}, applied ` +
              `clamp ${JSON.stringify(cwndClampOf(flow)?.appliedClampPackets)}; ${flow.reason}`,
          );
      }
      if (policy === 'cmcd') {
        assert.ok(
          served.every((f) => f.cmcd !== null && typeof f.cmcd.br === 'number'),
          'dash.js sent CMCD with each segment request',
        );
        assert.ok(
          throttled.every((f) => f.paceRateBps !== null),
          'cmcd paced its throttled segments',
        );
      }
      if (policy === 'pacing' || policy === 'app-pacing' || policy === 'app-pacing-16k')
        assert.ok(throttled.length > 0);
      if (policy === 'sammy') {
        // After the initial phase, Algorithm 1's rate: (c1 B + c0 (1 - B)) x the ladder's top bitrate, between 2.8
        // and 3.2 of it, paced by the kernel at exactly that rate.
        assert.ok(throttled.length > 0, 'sammy paced segments after its initial phase');
        for (const flow of throttled) {
          const [, multiplier, topKbps] = flow.reason.match(/(\d\.\d\d) x the highest bitrate (\d+) kbit\/s/) ?? [];
          assert.ok(multiplier !== undefined && topKbps !== undefined, flow.reason);
          assert.ok(Number(multiplier) >= 2.8 && Number(multiplier) <= 3.2, flow.reason);
          const aimBps = Number(multiplier) * Number(topKbps) * 1000;
          assert.ok(
            flow.paceRateBps !== null && Math.abs(flow.targetRateBps!.mean / aimBps - 1) < 0.01,
            `segment ${flow.segmentNumber}: aimed at ${flow.targetRateBps?.mean} for ${aimBps}; ${flow.reason}`,
          );
        }
      }
      assert.match(metrics, new RegExp(`trickle_responses_total\\{[^}]*policy="${policy}"`));
    });
  }

  it('hls.js without a pin is served by its connections’ A/B groups, and /metrics has each group', () => {
    const session = sessions.get('hlsjs-ab')!;
    assert.deepEqual(session.corrupt, [], 'every media body equals its file');
    assert.deepEqual(session.errors, []);
    assert.equal(session.ended, true);
    const byGroup = flows.filter((f) => f.reason.startsWith('A/B group'));
    assert.ok(byGroup.length >= demoSegments, `${byGroup.length} responses by A/B group`);
    for (const flow of byGroup) assert.equal(flow.policy, flow.group, `group ${flow.group} is served by its policy`);
    for (const group of new Set(flows.map((f) => f.group)))
      assert.match(metrics, new RegExp(`trickle_responses_total\\{[^}]*group="${group}"`));
  });
});
