/**
 * HTTPS through the lab (root): `trickle serve --tls-cert --tls-key` with a throwaway CA, in the
 * origin namespace; curl (told to trust the CA) and Debian's Chromium (trusting the CA's key) in
 * the player namespace, over 20 Mbit/s with a 40 ms RTT. TLS ends in the origin, so the BPF clamp
 * and the kernel's schedule act on the viewer's own TCP connection: a progressive response under
 * the default policy is clamped and its throttled goodput lies in Algorithm 1's band, its schedule
 * placed on the TCP stream's bytes (TLS records and all). dash.js plays the demo over HTTPS to the
 * end, every body equal to its file. ALPN offers HTTP/1.1 only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '@trickle/native';
import {
  cwndClampOf,
  type DevCertificates,
  type FlowRecord,
  kernelPhaseOf,
  makeDevCertificates,
} from '@trickle/origin';
import { labDown, labUp, launchChromium, symmetricLink, type Lab, type LaunchedChromium } from '../../src/index.js';
import { playToEnd } from '../../src/index.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const media = testMediaRoot();
const skip = skipUnless('the HTTPS tests', { root: true, chromium: true });
const cli = resolve(import.meta.dirname, '..', '..', '..', '..', 'bin', 'trickle.js');
const clampCgroup = 'trickle-test-https';
const clampPinDir = '/run/trickle/bpf-test-https';
/** Trickle's gain over R: its throttled goodput lies between R (catch-up) and gain x R (the clamp). */
const gain = 1.2;

describe('HTTPS from the origin through the lab', { skip }, () => {
  let lab: Lab;
  let base: string;
  let certificates: DevCertificates;
  let certificateDir: string;
  let chromium: LaunchedChromium | undefined;

  const curl = (args: readonly string[]) =>
    lab.output('player', ['curl', '-sf', '--cacert', certificates.caCert, ...args]);
  const flows = async () => (JSON.parse(await curl([`${base}/api/flows`])) as { flows: FlowRecord[] }).flows;

  before(async () => {
    lab = await labUp('thttps', symmetricLink({ rateBps: 20e6, rttMs: 40, bufferBdp: 2 }));
    base = `https://${lab.address('origin')}:8443`;
    certificateDir = await mkdtemp(join(tmpdir(), 'trickle-https-'));
    certificates = await makeDevCertificates(certificateDir, [lab.address('origin')]);
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
        '8443',
        '--tls-cert',
        certificates.cert,
        '--tls-key',
        certificates.key,
        '--startup-seconds',
        '5',
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
    // Until the origin listens (curl --cacert: the CA is the only one trusted).
    for (let attempt = 0; ; attempt++) {
      const ok = await curl([`${base}/healthz`]).then(
        () => true,
        () => false,
      );
      if (ok) break;
      if (attempt > 100) throw new Error(`the HTTPS origin did not answer at ${base}/healthz`);
      await new Promise((done) => setTimeout(done, 200));
    }
  });

  after(async () => {
    await chromium?.close();
    await labDown('thttps');
    await teardownClamp({ cgroup: clampCgroup, pinDir: clampPinDir });
    if (certificateDir !== undefined) await rm(certificateDir, { recursive: true, force: true });
  });

  it('speaks HTTP/1.1 over TLS, to a client offering h2 as well', async () => {
    const version = await curl([
      '--http2',
      '-o',
      '/dev/null',
      '-w',
      '%{http_version}',
      `${base}/media/demo/manifest.mpd`,
    ]);
    assert.equal(version, '1.1');
  });

  it("clamps a progressive response over HTTPS with the BPF program, within Algorithm 1's band", async () => {
    await curl(['-o', '/dev/null', '-r', '0-4499999', `${base}/media/demo/progressive.mp4`]);
    const record = (await flows()).find((flow) => flow.role === 'progressive');
    assert.ok(
      record?.completed && record.throttling !== null,
      `a completed, throttled flow: ${JSON.stringify(record?.throttling)}`,
    );
    const overR = record.throttling.goodputBps! / record.targetRateBps!.mean;
    console.log(
      `# https ${record.policy}: throttled ` +
        `goodput ${(record.throttling.goodputBps! / 1e6).toFixed(2)} Mbit/s ` +
        `= ${overR.toFixed(3)} x R over ${record.throttling.durationMs} ms; ` +
        `backend ${record.backend}; kernel phase ${JSON.stringify(kernelPhaseOf(record))}; ` +
        `clamp ${JSON.stringify(cwndClampOf(record)?.appliedClampPackets)}, cwnd ` +
        `then ${JSON.stringify(cwndClampOf(record)?.cwndWhileClampedPackets)}`,
    );
    assert.equal(record.backend, 'bpf');
    assert.equal(
      kernelPhaseOf(record)?.started,
      true,
      `the phase ran in the kernel: ${JSON.stringify(kernelPhaseOf(record))}`,
    );
    assert.equal(kernelPhaseOf(record)?.heldAtFirstByte, true);
    // Above: the clamp (gain x R, 5 % for the srtt's drift). Below: R, less what host stalls take from a
    // sender that encrypts in the origin's event loop beside a browser test: CI and the flake hunt read
    // 0.986-1.021 x R, and 0.936 once (half a second of an 8 s flow lost). A clamp computed wrong (MSS,
    // RTT units, TLS overhead) is off by a factor, not by 15 %: the bound is 0.85, a stall of 1.2 s of 8.
    assert.ok(overR >= 0.85 && overR <= gain * 1.05, `goodput ${overR.toFixed(3)} x R, outside [0.85, ${gain} x 1.05]`);
  });

  it('plays the demo in dash.js over HTTPS to the end, every body equal to its file, segments clamped', async () => {
    chromium = await launchChromium({ namespace: lab.namespace('player'), trustCertificates: [certificates.caCert] });
    const session = await playToEnd(chromium.context, base, 'demo', resolve(media!, 'demo'), 'player=dashjs');
    assert.deepEqual(session.errors, []);
    assert.deepEqual(session.corrupt, [], 'every media body equals its file');
    assert.ok(session.bodiesChecked >= 12, `${session.bodiesChecked} media bodies checked`);
    assert.equal(session.ended, true);
    const segments = (await flows()).filter(
      (flow) =>
        flow.role === 'segment' && flow.completed && flow.throttling !== null && kernelPhaseOf(flow)?.started === true,
    );
    assert.ok(segments.length > 0, 'throttled segments in the kernel');
    for (const flow of segments) assert.equal(flow.backend, 'bpf', `segment ${flow.segmentNumber}: ${flow.reason}`);
  });
});
