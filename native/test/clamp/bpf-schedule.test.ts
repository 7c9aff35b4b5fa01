/**
 * Algorithm 1 in the kernel (TRICKLE_MODE_SCHEDULE) on a real path (server -- router with delay
 * line and TBF bottleneck -- client, 40 ms RTT): a low-R flow sits at the 10-packet floor and the
 * program paces it at R (goodput at R, no train of more than 10 back-to-back packets in a capture);
 * a flow whose link drops below R falls behind its schedule, the program lifts the clamp, and once
 * the link is back the flow catches up and is clamped again. Kernel pacing on the same schedule
 * (TRICKLE_MODE_PACE_SCHEDULE): no clamp, SO_MAX_PACING_RATE at gain x R of each piece as the
 * bytes being sent reach it, and goodput at that rate. Needs root (CI runs it).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '../../src/index.js';
import { createNetPath, type NetPath } from '../helpers/netpath.js';
import { rootSkipReason } from '../helpers/privilege.js';
import { goodputBps, medianGoodputBps, runStream } from '../helpers/stream-run.js';

const skip = rootSkipReason('the in-kernel Trickle tests');
const pinDir = '/run/trickle/bpf-test-schedule';
const cgroup = 'trickle-test-schedule';

/** Longest run of data packets leaving the server less than `gapUs` apart, from tcpdump's timestamps. */
function longestTrain(timesUs: readonly number[], gapUs: number): number {
  let longest = 0;
  let run = 0;
  for (let i = 0; i < timesUs.length; i++) {
    run = i > 0 && timesUs[i]! - timesUs[i - 1]! < gapUs ? run + 1 : 1;
    longest = Math.max(longest, run);
  }
  return longest;
}

describe('Trickle in the kernel over a 40 ms path', { skip }, () => {
  let path: NetPath;

  before(async () => {
    path = await createNetPath({ name: 'tks', subnet: 63, rateMbit: 50, oneWayDelayMs: 20, bufferBytes: 250_000 });
  });

  after(async () => {
    await path?.down();
    await teardownClamp({ pinDir, cgroup }).catch(() => undefined);
  });

  it('paces a flow at the floor at R in the kernel, in trains of at most 10 packets', async () => {
    const rateBytesPerSec = 62_500; // 0.5 Mbit/s: 1.2 R srtt / mss = 2 packets, under the floor
    const capture = spawn(
      'ip',
      [
        'netns',
        'exec',
        path.serverNs,
        'tcpdump',
        '-i',
        'tkss0',
        '-nn',
        '-tt',
        '-l',
        '--immediate-mode',
        'tcp src port 5203 and greater 1000',
      ],
      { stdio: ['ignore', 'pipe', 'ignore'] },
    );
    const lines: string[] = [];
    capture.stdout!.on('data', (chunk: Buffer) =>
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((line) => line.length > 0),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 500));
    const run = await runStream(path, {
      port: 5203,
      durationMs: 8000,
      sampleMs: 100,
      backend: 'bpf',
      cgroup,
      pinDir,
      steps: [{ atMs: 0, action: 'schedule', pieces: [{ sizeBytes: 100e6, rateBytesPerSec }] }],
    });
    capture.kill('SIGINT');
    await once(capture, 'exit');
    assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason})`);
    const late = run.samples.filter((s) => s.tMs > 2000);
    assert.ok(late.length > 10, 'samples after the first 2 s');
    // A host stall inflates srtt for a sample or two (ci19: 'clamped' at 2.2 s); from ~190 ms the exact window,
    // 1.2 R x srtt, passes the 10-packet floor and the program, by its rule, clamps instead. Such samples are judged
    // by that rule at the RTT the program computed from, and there may be a few.
    const aboveFloor = late.filter(
      (s) =>
        s.appliedAt !== undefined && 1.2 * rateBytesPerSec * (s.appliedAt.rttUs / 1e6) >= 10 * s.appliedAt.mssBytes,
    );
    assert.ok(
      aboveFloor.length <= 3,
      `${aboveFloor.length} samples with srtt above the floor's: ${aboveFloor.map((s) => `${s.tMs} ms: ${s.appliedAt!.rttUs} us`).join(', ')}`,
    );
    for (const sample of aboveFloor)
      assert.equal(
        sample.schedule?.state,
        'clamped',
        `t=${sample.tMs} ms: state ${sample.schedule?.state} above the floor`,
      );
    for (const sample of late.filter((s) => !aboveFloor.includes(s))) {
      assert.equal(sample.schedule?.state, 'floor', `t=${sample.tMs} ms: state ${sample.schedule?.state}`);
      assert.equal(sample.appliedPackets, 10, `t=${sample.tMs} ms: clamp ${sample.appliedPackets}`);
      assert.equal(
        sample.pacingBytesPerSec,
        rateBytesPerSec,
        `t=${sample.tMs} ms: pacing rate ${sample.pacingBytesPerSec}`,
      );
    }
    const goodput = goodputBps(run.samples, 2000, 8000) / 8;
    assert.ok(
      Math.abs(goodput / rateBytesPerSec - 1) < 0.05,
      `goodput ${Math.round(goodput)} B/s, R ${rateBytesPerSec} B/s`,
    );
    const times = lines.map((line) => Math.round(Number(line.split(' ')[0]) * 1e6)).filter((t) => Number.isFinite(t));
    assert.ok(times.length > 100, `captured ${times.length} data packets`);
    // Back to back on 50 Mbit/s is ~0.25 ms per packet; paced at R, ~23 ms apart.
    const train = longestTrain(times.slice(Math.floor(times.length / 4)), 1000);
    assert.ok(train <= 10, `longest train of packets < 1 ms apart after startup: ${train}`);
  });

  it(
    'lifts the clamp while a slow link holds the flow behind its schedule, and clamps ' + 'again once it has caught up',
    async () => {
      const rateBytesPerSec = 500_000; // 4 Mbit/s: a clamp of ~17 packets at 40 ms
      // On the samples' clock (from the server's accept): the server's start (loading the BPF program) takes a varying
      // while.
      let slow: NodeJS.Timeout | undefined;
      let fast: NodeJS.Timeout | undefined;
      let run: Awaited<ReturnType<typeof runStream>>;
      try {
        run = await runStream(
          path,
          {
            port: 5204,
            durationMs: 12_000,
            sampleMs: 50,
            backend: 'bpf',
            cgroup,
            pinDir,
            steps: [{ atMs: 0, action: 'schedule', pieces: [{ sizeBytes: 100e6, rateBytesPerSec }] }],
          },
          () => {
            slow = setTimeout(() => path.setRateMbit(2), 2000);
            fast = setTimeout(() => path.setRateMbit(50), 5000);
          },
        );
      } finally {
        clearTimeout(slow);
        clearTimeout(fast);
        path.setRateMbit(50);
      }
      assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason})`);
      // On schedule before the slow link. Not at every sample from 1 s: a host stall early in the run (the delay
      // line is a user-space process) puts the flow behind, and the program rightly catches up from it (ci69: behind
      // until 1.45 s, then clamped). Failing needs the flow behind for the whole second before the link slows.
      const before = run.samples.filter((s) => s.tMs > 1000 && s.tMs < 2000);
      const clampedBefore = before.filter((s) => s.schedule?.state === 'clamped');
      assert.ok(
        clampedBefore.length > 0,
        `clamped before the slow link: ${before.map((s) => s.schedule?.state).join(',')}`,
      );
      const catching = run.samples.filter((s) => s.schedule?.state === 'catching-up');
      assert.ok(catching.length > 0, 'the program caught up');
      const last = run.samples.at(-1)!;
      // The slow link's own catch-up: counted after the last clamped sample before it.
      const catchUpsBefore = clampedBefore.at(-1)!.schedule?.catchUps ?? 0;
      assert.ok(
        (last.schedule?.catchUps ?? 0) > catchUpsBefore,
        `catch-ups ${last.schedule?.catchUps}, ${catchUpsBefore} of them before the slow link`,
      );
      // Catching up after the link came back: goodput well above 1.2 R for a while, then back on schedule and clamped.
      assert.equal(last.schedule?.state, 'clamped', `state at the end: ${last.schedule?.state}`);
      // Behind while the link was slow (2-5 s); the catch-up that caused ends at the first clamped
      // sample after the link came back (5 s). Not at the last catching-up sample: a host stall later
      // (the delay line is a user-space process) can put the flow behind again, and the program
      // catching up from that is right (the hunt: a second catch-up ending at 11.7 s, the run
      // clamped at its end). Printed, not judged.
      const catchUpEnd = run.samples.find((s) => s.tMs > 5000 && s.schedule?.state === 'clamped')?.tMs;
      assert.ok(
        catchUpEnd !== undefined && catchUpEnd < 11_000 && catching.some((s) => s.tMs > 2000 && s.tMs < 5000),
        `caught up at ${catchUpEnd} ms (catching up at ${catching.map((s) => s.tMs).join(', ')} ms)`,
      );
      const laterCatchUps = catching.filter((s) => catchUpEnd !== undefined && s.tMs > catchUpEnd);
      if (laterCatchUps.length > 0)
        console.log(
          `# caught up at ${catchUpEnd} ms; behind again later (a stall of the path) and caught up: ` +
            `${laterCatchUps.map((s) => s.tMs).join(', ')} ms`,
        );
      const phaseGoodput = goodputBps(run.samples, 0, 12_000) / 8;
      assert.ok(
        phaseGoodput >= rateBytesPerSec * 0.97,
        `goodput over the phase ${Math.round(phaseGoodput)} B/s, R ${rateBytesPerSec} B/s: back on schedule`,
      );
    },
  );

  it('sends the startup at full speed and holds the phase to gain x R from its first byte', async () => {
    const rateBytesPerSec = 500_000;
    // A startup that slow start delivers without overflowing the bottleneck (its last round, 160
    // packets, is under the path's BDP plus buffer): in loss recovery the kernel takes no RTT
    // samples (Karn), so the program acts on the first one after it, a recovery late.
    const startupBytes = 300_000;
    const run = await runStream(path, {
      port: 5205,
      durationMs: 4000,
      sampleMs: 20,
      backend: 'bpf',
      cgroup,
      pinDir,
      steps: [{ atMs: 0, action: 'schedule', startupBytes, pieces: [{ sizeBytes: 100e6, rateBytesPerSec }] }],
    });
    assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason})`);
    assert.equal(run.samples.at(-1)!.totalRetrans, 0, 'the startup fits the path: no losses');
    assert.ok(
      run.samples.some((s) => (s.schedule?.phaseStartMonotonicMs ?? 0) > 0),
      'the phase began',
    );
    // The startup went at full speed: over a 50 Mbit/s, 40 ms path, slow start's five round trips.
    const crossed = run.samples.find((s) => s.bytesAcked >= startupBytes)!;
    assert.ok(
      crossed !== undefined && crossed.tMs < 600,
      `the startup's bytes were acknowledged by ${crossed?.tMs} ms`,
    );
    // RTT samples come about once per round trip, a window late at slow start's pace: the packet
    // carrying the phase's first byte holds the phase itself (the header callback), so from then on
    // the phase's bytes leave at gain x R: at every sample of the next 2 s, no more than 1.2 R since
    // the last sample before any left (x 1.1: the clamp's whole packets, 17 for 16.6 here) plus a
    // floor window. Held a round late (RTT samples only), 80-90 kB had left by the first sample.
    const held = run.samples.find((s) => (s.schedule?.heldMonotonicMs ?? 0) > 0);
    assert.ok(held !== undefined, "the packet carrying the phase's first byte held the phase");
    const before = run.samples.findLast((s) => s.bytesSent <= startupBytes)!;
    const window = run.samples.filter((s) => s.tMs > before.tMs && s.tMs <= before.tMs + 2000);
    // A sample's time and its byte count are two readings: a stall of this VM's host between them
    // (10-20 ms, at times for every process at once) counts bytes sent after the time read. The bound
    // allows 40 ms of 1.2 R for it (24 kB here): a phase held a round late is 60-70 kB over it at once.
    const stallSlackBytes = 0.04 * 1.2 * rateBytesPerSec;
    const excess = window.map((s) => ({
      s,
      overBytes:
        s.bytesSent -
        startupBytes -
        (((s.tMs - before.tMs) / 1000) * 1.2 * rateBytesPerSec * 1.1 + 10 * crossed.mss + stallSlackBytes),
    }));
    const worst = excess.reduce((a, b) => (b.overBytes > a.overBytes ? b : a));
    const later = window.at(-1)!;
    const elapsedSec = (later.tMs - before.tMs) / 1000;
    const sentBytes = later.bytesSent - startupBytes;
    const first = window[0]!;
    console.log(
      `# startup ${startupBytes} B acknowledged by ${crossed.tMs} ms; phase held by the ` +
        `packet carrying its first byte; ${first.bytesSent - startupBytes} B of the phase ` +
        `sent ${first.tMs - before.tMs} ms after the last sample before it; ` +
        `over ${elapsedSec.toFixed(2)} s ${sentBytes} B (1.2 ` +
        `R: ${Math.round(elapsedSec * 1.2 * rateBytesPerSec)} B); worst ` +
        `sample ${Math.round(worst.overBytes)} B over the bound ` +
        `at ${worst.s.tMs - before.tMs} ms; cwnd then ${later.cwnd}`,
    );
    assert.ok(
      worst.overBytes <= 0,
      `${Math.round(worst.overBytes)} B more of the phase than 1.2 R allows had ` +
        `left ${worst.s.tMs - before.tMs} ms after its first byte`,
    );
    assert.ok(sentBytes >= elapsedSec * rateBytesPerSec * 0.95, `and at least R: ${sentBytes} B`);
  });

  it(
    'paces a schedule without a clamp: the pacing rate follows each piece at gain x R, ' + 'and so does goodput',
    async () => {
      // 2 Mbit/s then 6 Mbit/s: at 1.25 x, 312.5 kB/s and 937.5 kB/s, both far under the 50 Mbit/s link.
      const pieces = [
        { sizeBytes: 1_500_000, rateBytesPerSec: 250_000 },
        { sizeBytes: 100e6, rateBytesPerSec: 750_000 },
      ];
      const run = await runStream(path, {
        port: 5206,
        durationMs: 9000,
        sampleMs: 100,
        backend: 'bpf',
        cgroup,
        pinDir,
        steps: [{ atMs: 0, action: 'schedule', limit: 'pacing', gain: 1.25, pieces }],
      });
      assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason})`);
      assert.ok(
        run.samples.every((s) => s.appliedPackets === undefined),
        `no clamp: ${run.samples.map((s) => s.appliedPackets).join(',')}`,
      );
      // The first piece takes 1.5 MB / 312.5 kB/s = 4.8 s; judged away from its edges.
      const first = run.samples.filter((s) => s.tMs > 1000 && s.tMs < 4000);
      const second = run.samples.filter((s) => s.tMs > 6000);
      assert.ok(first.length > 10 && second.length > 10, 'samples in both pieces');
      for (const sample of first)
        assert.equal(
          sample.pacingBytesPerSec,
          312_500,
          `t=${sample.tMs} ms: pacing ${sample.pacingBytesPerSec} (state ${sample.schedule?.state})`,
        );
      for (const sample of second)
        assert.equal(
          sample.pacingBytesPerSec,
          937_500,
          `t=${sample.tMs} ms: pacing ${sample.pacingBytesPerSec} (state ${sample.schedule?.state})`,
        );
      assert.equal(run.samples.at(-1)!.schedule?.state, 'paced');
      // Medians of 250 ms goodputs (12 per piece, each ~80 or ~230 kB: a packet or two of ACK timing is
      // under 2 %): a stall of the host spoils the windows it falls in (the hunt: the second piece's
      // mean 6.4 % low under 16-26 % steal), the median only when it spoils half of the 3 s.
      const firstGoodput = medianGoodputBps(run.samples, 1000, 4000, 250) / 8;
      const secondGoodput = medianGoodputBps(run.samples, 6000, 9000, 250) / 8;
      assert.ok(
        Math.abs(firstGoodput / 312_500 - 1) < 0.05,
        `goodput in the first piece ${Math.round(firstGoodput)} B/s, aim 312,500`,
      );
      assert.ok(
        Math.abs(secondGoodput / 937_500 - 1) < 0.05,
        `goodput in the second piece ${Math.round(secondGoodput)} B/s, aim 937,500`,
      );
    },
  );

  it("finds each piece of a full schedule in turn (the program's piece lookup over all 64)", async () => {
    // 64 pieces of 40 kB, each at its own rate (400 to 1,030 kB/s, under the link): the phase passes through them in
    // ~3 s. Every rate the pacer holds (outside a catch-up, which lifts it) must be one of theirs at gain x R, in
    // the schedule's order, up to the last, whatever the host's speed.
    const rates = Array.from({ length: 64 }, (_, i) => 400_000 + i * 10_000);
    const pieces = rates.map((rateBytesPerSec, i) => ({ sizeBytes: i === 63 ? 100e6 : 40_000, rateBytesPerSec }));
    const run = await runStream(path, {
      port: 5207,
      durationMs: 6000,
      sampleMs: 50,
      backend: 'bpf',
      cgroup,
      pinDir,
      steps: [{ atMs: 0, action: 'schedule', limit: 'pacing', gain: 1.25, pieces }],
    });
    assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason})`);
    const held = run.samples.filter((s) => s.schedule?.state === 'paced' && s.pacingBytesPerSec !== null);
    const indices = held.map((s) => rates.findIndex((rate) => Math.round(rate * 1.25) === s.pacingBytesPerSec));
    assert.ok(
      !indices.includes(-1),
      `pacing rates not in the schedule: ${held.map((s) => s.pacingBytesPerSec).join(',')}`,
    );
    assert.ok(
      indices.every((index, i) => i === 0 || index >= indices[i - 1]!),
      `pieces in order: ${indices.join(',')}`,
    );
    assert.equal(indices.at(-1), 63, `reaches the last piece: ${indices.join(',')}`);
    assert.ok(new Set(indices).size >= 16, `passes through the pieces: ${indices.join(',')}`);
  });
});
