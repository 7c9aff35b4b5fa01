/**
 * The BPF cwnd clamp on a real path (server -- router with delay line and TBF bottleneck --
 * client, 40 ms RTT, 50 Mbit/s): the kernel keeps snd_cwnd at max(10, ceil(1.2 R srtt / mss)),
 * goodput lands at 1.2 R, the clamp follows an RTT change (a min-RTT clamp does not) and a live rate change, a gradual
 * release grows the clamp step by step where a one-step one lifts it at once, and after a loss (in the throttled
 * phase or at startup speed) a clamp leaves the congestion control's ssthresh alone. Needs root (CI runs it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { teardownClamp } from '../../src/index.js';
import { createNetPath, type NetPath } from '../helpers/netpath.js';
import { rootSkipReason } from '../helpers/privilege.js';
import { goodputBps, median, medianGoodputBps, retransmitsBetween, runStream } from '../helpers/stream-run.js';
import type { ScheduleStep } from '../fixtures/stream-peer.js';

const skip = rootSkipReason('the BPF clamp path tests');
const pinDir = '/run/trickle/bpf-test-path';
const cgroup = 'trickle-test-path';
const linkMbit = 50;
const oneWayDelayMs = 20;
/** The clamps cwnd is judged against: those applied over this long before a sample (see the clamp check). */
const clampLagMs = 200;
/** Goodput is judged on the median of windows this long (see the first test). */
const goodputWindowMs = 250;
/** Samples in a row above every recent clamp that make a clamp the kernel did not keep (see the clamp check). */
const samplesAboveToFail = 3;

/** max(10, ceil(1.2 R srtt / mss)) in the program's integer arithmetic (gain 1200/1000). */
function kernelClamp(rateBytesPerSec: number, srttUs: number, mss: number): number {
  const bytes = Math.floor((Math.floor((rateBytesPerSec * srttUs) / 1e6) * 1200) / 1000);
  return Math.max(10, Math.ceil(bytes / mss));
}

describe('BPF cwnd clamp over a 40 ms, 50 Mbit/s path', { skip }, () => {
  let path: NetPath;
  const stream = (steps: ScheduleStep[], durationMs = 6000, bufferNote = '', onAccepted?: () => void) =>
    runStream(
      path,
      { durationMs, sampleMs: 50, backend: 'bpf', cgroup, pinDir, congestionControl: 'cubic', steps },
      onAccepted,
    ).then((run) => {
      assert.equal(run.attached, 'bpf', `clamp backend: ${run.attached} (${run.reason}) ${bufferNote}`);
      return run;
    });

  before(async () => {
    path = await createNetPath({ name: 'tnc', subnet: 61, rateMbit: linkMbit, oneWayDelayMs, bufferBytes: 250_000 });
  });

  after(async () => {
    await path?.down();
    await teardownClamp({ pinDir, cgroup }).catch(() => undefined);
  });

  it('keeps cwnd at the clamp computed from the live srtt, and goodput at 1.2 R', async () => {
    const table: string[] = [];
    const unclamped = await stream([], 5000);
    const unclampedCwnd = unclamped.samples.filter((s) => s.tMs > 1500).map((s) => s.cwnd);
    const unclampedRetrans = retransmitsBetween(unclamped.samples, 0, 5000);
    assert.ok(
      unclampedRetrans > 0 && path.bottleneckDrops() > 0,
      'an unclamped flow overflows the 1x BDP buffer, and tcpInfo counts the retransmissions',
    );
    table.push(
      `unclamped      cwnd ${Math.min(...unclampedCwnd)}-${Math.max(...unclampedCwnd)}  ` +
        `goodput ${(goodputBps(unclamped.samples, 1500, 5000) / 1e6).toFixed(2)} Mbit/s  ` +
        `retrans ${unclampedRetrans}`,
    );
    for (const rateMbit of [4, 10]) {
      const rateBytesPerSec = (rateMbit * 1e6) / 8;
      // The bottleneck's drops from 1 s on the samples' clock (the server's accept) to the end.
      let dropsAtOneSecond: number | undefined;
      let dropsTimer: NodeJS.Timeout | undefined;
      const run = await stream([{ atMs: 0, action: 'rate', rateBytesPerSec }], 5000, '', () => {
        dropsTimer = setTimeout(() => (dropsAtOneSecond = path.bottleneckDrops()), 1000);
      }).finally(() => clearTimeout(dropsTimer));
      const clampedDrops = path.bottleneckDrops() - (dropsAtOneSecond ?? 0);
      const clamped = run.samples.filter((s) => s.tMs > 1000);
      let aboveInARow: string[] = [];
      for (const [index, sample] of clamped.entries()) {
        // The kernel recomputes the clamp from srtt on every RTT sample and keeps the srtt and MSS
        // it used beside it: the applied clamp is judged exactly against the formula at those
        // (not at the srtt this sampler reads a moment later, which a stall of this VM's host can
        // make another), and that srtt against the path (40 ms of propagation, at most 40 ms of
        // queue in the 250 KB buffer, host stalls aside: 36-200 ms is no chance bound). The pair
        // can disagree only if this read lands between the program's two stores (nanoseconds, a
        // few times a second, against 80 reads a run: well under 1 in a million runs).
        const applied = sample.appliedPackets!;
        const at = sample.appliedAt!;
        // TCP_BPF_SNDCWND_CLAMP sets the clamp (and ssthresh) but leaves snd_cwnd alone: the kernel
        // lowers cwnd to a clamp that fell only at its next cwnd-limited ACK (tcp_cong_avoid's
        // min(cwnd, clamp)). After a host stall srtt spikes, the clamp rises with it (so does
        // ssthresh: cwnd slow-starts into it) and falls back within a few dozen ACKs, while cwnd
        // keeps the higher value until the sender fills it, a round or two. A spike and its fall
        // can both land between two 50 ms samples (the hunt: cwnd 50 -> 67 with every clamp seen
        // at 50-53, under 16-26 % steal), so one sample above the clamps seen proves nothing. Three
        // in a row above every clamp of the 200 ms before each (100 ms from the first to the third:
        // two rounds of cwnd-limited ACKs, each of which lowers it) is a clamp the kernel did not
        // keep; by chance it needs three unseen spikes in successive samples.
        const recent = clamped.slice(0, index + 1).filter((s) => s.tMs >= sample.tMs - clampLagMs);
        const recentMax = Math.max(...recent.map((s) => s.appliedPackets!));
        aboveInARow =
          sample.cwnd <= recentMax + 1
            ? []
            : [
                ...aboveInARow,
                `${sample.tMs} ms: cwnd ${sample.cwnd} (clamps ${recent.map((s) => `${s.appliedPackets} at srtt ${s.appliedAt!.rttUs} us`).join(', ')})`,
              ];
        assert.ok(
          aboveInARow.length < samplesAboveToFail,
          `cwnd above every clamp of the last ${clampLagMs} ms in ${samplesAboveToFail} samples in a row: ${aboveInARow.join('; ')}`,
        );
        // Exact until the congestion control answers a loss (none below the link rate but a host stall's
        // spurious timeout): from then on the clamp moves only where the window meets it (the last test).
        if (sample.lossSsthreshPackets === undefined)
          assert.equal(
            applied,
            kernelClamp(rateBytesPerSec, at.rttUs, at.mssBytes),
            `t=${sample.tMs} ms: applied clamp ${applied} at srtt ${at.rttUs} us, mss ${at.mssBytes}`,
          );
        assert.ok(at.rttUs >= 36_000 && at.rttUs <= 200_000, `t=${sample.tMs} ms: the clamp's srtt ${at.rttUs} us`);
      }
      // And the srtt the clamp follows is the one TCP_INFO reports: over the run their medians agree.
      const clampSrtt = median(clamped.map((s) => s.appliedAt!.rttUs));
      const infoSrtt = median(clamped.map((s) => s.rttUs));
      assert.ok(
        Math.abs(clampSrtt / infoSrtt - 1) < 0.1,
        `median srtt: the clamp's ${clampSrtt} us, TCP_INFO's ${infoSrtt} us`,
      );
      // Within 10 % above 1.2 R, 15 % below, judged on the median of 250 ms windows' goodputs (14, each
      // ~6 RTTs, 150-375 kB): a stall of the host (the delay line forwarding this path is a user-space
      // process, beside a browser test in CI) takes throughput from the windows it falls in and never
      // adds it (the clamp bounds what is in flight), so it moves the median only when it spoils half
      // of them; the mean over a span moves by the stall's share of it (the hunt: 16 % low over 2 s
      // under 11-26 % steal). An old rate (4 against 10 Mbit/s) is 60 % below.
      const goodput = medianGoodputBps(run.samples, 1500, 5000, goodputWindowMs);
      assert.ok(
        goodput / (1.2 * rateMbit * 1e6) > 0.85 && goodput / (1.2 * rateMbit * 1e6) < 1.1,
        `goodput ${goodput} vs 1.2 R = ${1.2 * rateMbit * 1e6}`,
      );
      // What the clamp prevents is the bottleneck's queue overflowing (the unclamped run above drops):
      // judged by the bottleneck's own drop counter, not by TCP's retransmissions, which also count a
      // spurious timeout or a frame the delay line lost while this VM's host held it (the hunt: one
      // retransmission in a clamped run under steal, with at most 44 packets in flight against a
      // 250 kB buffer). The retransmissions are printed.
      assert.ok(dropsAtOneSecond !== undefined, 'the drops were read at 1 s');
      assert.equal(
        clampedDrops,
        0,
        `the bottleneck dropped ${clampedDrops} packets while clamped below the link rate ` +
          `(retransmissions ${retransmitsBetween(run.samples, 1000, 5000)})`,
      );
      const cwnds = clamped.map((s) => s.cwnd);
      table.push(
        `clamped ${String(rateMbit).padStart(2)} Mbit/s ` +
          `cwnd ${Math.min(...cwnds)}-${Math.max(...cwnds)}  ` +
          `goodput ${(goodput / 1e6).toFixed(2)} Mbit/s (median of 250 ms)  ` +
          `retrans ${retransmitsBetween(run.samples, 0, 5000)}  ` +
          `srtt ${Math.round(clamped.at(-1)!.rttUs / 1000)} ms`,
      );
    }
    console.log(
      `# cwnd/goodput over ${2 * oneWayDelayMs} ms RTT, ${linkMbit} Mbit/s, 250 KB ` +
        `buffer, cubic:\n# ${table.join('\n# ')}`,
    );
  });

  it('follows an RTT change without a user-space update', async () => {
    const rateBytesPerSec = 1_250_000;
    // On the samples' clock (from the server's accept): the server's start (loading the BPF program) takes a varying
    // while.
    let change: NodeJS.Timeout | undefined;
    try {
      const run = await stream([{ atMs: 0, action: 'rate', rateBytesPerSec }], 6000, '', () => {
        change = setTimeout(() => void path.setOneWayDelayMs(2 * oneWayDelayMs), 2500);
      });
      const before = run.samples.filter((s) => s.tMs > 1000 && s.tMs < 1800);
      const afterChange = run.samples.filter((s) => s.tMs > 4500);
      // Medians of the 16 samples before and the ~30 after: a host stall inflates the RTT of the
      // samples it falls in (the hunt once read the last sample before at an RTT the doubled path
      // did not reach 1.7 times), the median only if it spans half of a window (0.8 s, 1.5 s).
      const rttBeforeUs = median(before.map((s) => s.rttUs));
      const rttAfterUs = median(afterChange.map((s) => s.rttUs));
      const clampBefore = median(before.map((s) => s.appliedPackets!));
      const clampAfter = median(afterChange.map((s) => s.appliedPackets!));
      assert.ok(rttAfterUs > 1.7 * rttBeforeUs, `the RTT doubled: median srtt ${rttBeforeUs} -> ${rttAfterUs} us`);
      assert.ok(
        clampAfter / clampBefore > 1.7 && clampAfter / clampBefore < 2.3,
        `clamp ${clampBefore} -> ${clampAfter}`,
      );
      // The median of six 250 ms windows (as in the first test).
      const goodput = medianGoodputBps(run.samples, 4500, 6000, goodputWindowMs);
      assert.ok(Math.abs(goodput / (1.2 * rateBytesPerSec * 8) - 1) < 0.15, `goodput after the change ${goodput}`);
    } finally {
      clearTimeout(change);
      await path.setOneWayDelayMs(oneWayDelayMs);
    }
  });

  it("computes a min-RTT clamp from the path's minimum: it stays put when srtt doubles", async () => {
    const rateBytesPerSec = 1_250_000;
    let change: NodeJS.Timeout | undefined;
    try {
      const run = await stream([{ atMs: 0, action: 'rate', rateBytesPerSec, clampRtt: 'min-rtt' }], 6000, '', () => {
        change = setTimeout(() => void path.setOneWayDelayMs(2 * oneWayDelayMs), 2500);
      });
      const before = run.samples.filter((s) => s.tMs > 1000 && s.tMs < 1800);
      const afterChange = run.samples.filter((s) => s.tMs > 4500);
      const last = afterChange.at(-1)!;
      assert.ok(last.rttUs > 1.7 * before.at(-1)!.rttUs, 'the RTT doubled');
      // The kernel's min_rtt keeps the 40 ms path's minimum (its window is minutes): the clamp is computed from it,
      // exactly by the program's formula, and does not move with srtt.
      for (const sample of [...before, ...afterChange]) {
        const at = sample.appliedAt!;
        assert.equal(at.clampRtt, 'min-rtt');
        assert.ok(at.rttUs >= 39_000 && at.rttUs <= 44_000, `t=${sample.tMs} ms: the clamp's RTT ${at.rttUs} us`);
        assert.equal(sample.appliedPackets, kernelClamp(rateBytesPerSec, at.rttUs, at.mssBytes));
      }
      const clampBefore = before.at(-1)!.appliedPackets!;
      const clampAfter = last.appliedPackets!;
      assert.ok(Math.abs(clampAfter / clampBefore - 1) < 0.1, `clamp ${clampBefore} -> ${clampAfter}`);
      // In flight capped at 1.2 R x the minimum RTT, each window now takes srtt: goodput 1.2 R x min / srtt (nothing
      // lifts a bare rate clamp; a response's catch-up would). srtt over the goodput's windows, by their median like
      // the goodput: one sample's can be a queue's or a host stall's (a run read 92 ms last against ~79 ms).
      const [fromMs, toMs] = [4500, 6000];
      const srttUs = median(run.samples.filter((s) => s.tMs >= fromMs && s.tMs <= toMs).map((s) => s.rttUs));
      const expectedBps = 1.2 * rateBytesPerSec * 8 * (last.appliedAt!.rttUs / srttUs);
      const goodput = medianGoodputBps(run.samples, fromMs, toMs, goodputWindowMs);
      assert.ok(
        Math.abs(goodput / expectedBps - 1) < 0.15,
        `goodput after the change ${goodput}, expected ${expectedBps}`,
      );
    } finally {
      clearTimeout(change);
      await path.setOneWayDelayMs(oneWayDelayMs);
    }
  });

  it('applies a live rate change within a second', async () => {
    const run = await stream(
      [
        { atMs: 0, action: 'rate', rateBytesPerSec: 500_000 },
        { atMs: 2500, action: 'rate', rateBytesPerSec: 1_250_000 },
      ],
      5500,
    );
    // From 1 s after the change, every clamp the program applies is the new rate's formula at the
    // srtt it was computed from (exact: the old rate's would be 2.5 times smaller), and cwnd holds
    // to it: the median sample within a packet of the formula at the srtt the sampler read.
    const settled = run.samples.filter((s) => s.tMs >= 3500);
    assert.ok(settled.length >= 30, `${settled.length} samples from 1 s after the change`);
    // (Exact until the congestion control answers a loss, as in the first test.)
    for (const sample of settled.filter((s) => s.lossSsthreshPackets === undefined)) {
      const at = sample.appliedAt!;
      assert.equal(
        sample.appliedPackets,
        kernelClamp(1_250_000, at.rttUs, at.mssBytes),
        `t=${sample.tMs} ms: applied clamp ${sample.appliedPackets} at srtt ${at.rttUs} us`,
      );
    }
    const offsets = settled.map((s) => s.cwnd - kernelClamp(1_250_000, s.rttUs, s.mss)).sort((a, b) => a - b);
    assert.ok(Math.abs(median(offsets)) <= 1, `cwnd - formula over the samples: ${offsets.join(' ')}`);
    // As in the first test: 10 % above, 15 % below, on the median of eight 250 ms windows (a stall
    // takes throughput away; the old rate's goodput would be 60 % below).
    const goodput = medianGoodputBps(run.samples, 3500, 5500, goodputWindowMs);
    assert.ok(goodput / 12e6 > 0.85 && goodput / 12e6 < 1.1, `goodput after the change ${goodput}`);
  });

  // How many retransmissions each release costs varies run to run far more than between the two
  // (one CI read gradual 116, 236 against one-step 212, 222): that comparison is printed, and the
  // mechanism is what is judged. Gradual: the clamp grows by a quarter and a packet at most once per
  // RTT (40 ms), so between two samples 50 ms apart by at most two such steps; one-step: lifted at once.
  it(
    'releases gradually: the clamp grows by bounded steps per RTT until cwnd runs free; ' +
      'a one-step release lifts it at once',
    async () => {
      const retransmits: Record<'gradual' | 'immediate', number> = { gradual: 0, immediate: 0 };
      for (const mode of ['gradual', 'immediate'] as const) {
        const run = await stream(
          [
            { atMs: 0, action: 'rate', rateBytesPerSec: 1_250_000 },
            { atMs: 2500, action: 'release', mode },
          ],
          6500,
        );
        retransmits[mode] = retransmitsBetween(run.samples, 2500, 6500);
        // From 100 ms (2.5 RTTs of ACKs, each running the program) after the release took effect: the kernel
        // applies it at its next RTT sample, and this process's timer can run late (ci36: the release and a
        // sample in one turn after a stall, the sample reading the clamp from before the program ran).
        const releasedAtMs = run.applied.find((step) => step.action === 'release')!.tMs;
        const after = run.samples.filter((s) => s.tMs >= releasedAtMs + 100);
        const lifted = Math.max(...after.map((s) => s.cwnd));
        assert.ok(lifted > 100, `${mode}: cwnd after release reached only ${lifted}`);
        if (mode === 'immediate') {
          const applied = after.map((s) => s.appliedPackets!);
          assert.ok(
            applied.every((packets) => packets === 0x7fffffff),
            `one-step: the clamp lifted at once: ${applied.slice(0, 5).join(' ')}`,
          );
        } else {
          const growing = after.filter((s) => s.appliedPackets! < 0x7fffffff);
          assert.ok(growing.length >= 5, `gradual: ${growing.length} samples while the clamp grew`);
          for (let i = 1; i < growing.length; i++) {
            const [previous, next] = [growing[i - 1]!, growing[i]!];
            // At most one step per srtt in the time between the two readings (however late this process read them), and
            // one more for where the readings fall.
            const steps = Math.floor((next.tMs - previous.tMs) / (Math.min(previous.rttUs, next.rttUs) / 1000)) + 1;
            let bound = previous.appliedPackets!;
            for (let k = 0; k < steps; k++) bound += Math.floor(bound / 4) + 1;
            assert.ok(
              next.appliedPackets! >= previous.appliedPackets! && next.appliedPackets! <= bound,
              `gradual: clamp ${previous.appliedPackets} -> ${next.appliedPackets} ` +
                `in ${next.tMs - previous.tMs} ms (at most ${steps} steps of a quarter: ${bound})`,
            );
          }
        }
      }
      console.log(
        `# retransmissions in the 4 s after release (1x BDP buffer): ` +
          `gradual ${retransmits.gradual}; one-step ${retransmits.immediate}`,
      );
    },
  );

  // TCP_BPF_SNDCWND_CLAMP also sets ssthresh. A clamp above what the path carries that followed srtt on every
  // change raised ssthresh back over the congestion control's answer to each loss and restarted slow start into
  // the full queue (the paper's per-socket cwnd_clamp leaves ssthresh alone). 400 Mbit/s over this 50 Mbit/s
  // path: a clamp of 1,657 packets or more at srtt >= 40 ms, where the path holds about 345 (BDP and buffer),
  // so after the first loss the window can neither press against the clamp nor reach a lower one, and the
  // program must not touch it again: deterministic, whatever the host's stalls do to srtt.
  it("leaves the congestion control's answer to a loss alone: a clamp far above the window no longer moves", async () => {
    const run = await stream([{ atMs: 0, action: 'rate', rateBytesPerSec: 50_000_000 }], 5000);
    const firstLoss = run.samples.findIndex((s) => s.lossSsthreshPackets !== undefined);
    assert.ok(
      firstLoss >= 0 && path.bottleneckDrops() > 0,
      `the flow overflowed the 1x BDP buffer and the program saw the answer (drops ${path.bottleneckDrops()})`,
    );
    const afterLoss = run.samples.slice(firstLoss);
    const clamps = new Set(afterLoss.map((s) => s.appliedPackets));
    assert.equal(
      clamps.size,
      1,
      `the clamp after the loss: ${[...clamps].join(', ')} (srtt ${afterLoss.map((s) => Math.round(s.rttUs / 1000)).join(' ')} ms)`,
    );
    const maxCwnd = Math.max(...afterLoss.map((s) => s.cwnd));
    assert.ok(maxCwnd < afterLoss[0]!.appliedPackets!, `cwnd ${maxCwnd} stayed below the clamp`);
    console.log(
      `# after the first loss (t=${run.samples[firstLoss]!.tMs} ms): clamp ${afterLoss[0]!.appliedPackets}, ` +
        `ssthresh ${Math.min(...afterLoss.map((s) => s.ssthresh))}-${Math.max(...afterLoss.map((s) => s.ssthresh))}, ` +
        `cwnd up to ${maxCwnd}, retransmissions ${retransmitsBetween(run.samples, 0, 5000)}`,
    );
  });

  it('gives a response whose startup lost packets its first clamp only once the window reaches it', async () => {
    // Unclamped (startup speed) until 2.5 s: the flow overflows the 1x BDP buffer and cubic sets ssthresh.
    const run = await stream([{ atMs: 2500, action: 'rate', rateBytesPerSec: 50_000_000 }], 5000);
    const startupLoss = run.samples.some((s) => s.tMs < 2500 && s.ssthresh < 1000);
    assert.ok(startupLoss && path.bottleneckDrops() > 0, 'the startup overflowed the buffer and cubic answered');
    const clamp = kernelClamp(50_000_000, median(run.samples.map((s) => s.rttUs)), run.samples[0]!.mss);
    const throttled = run.samples.filter((s) => s.tMs >= 2600);
    // Applied above the window, the clamp would set ssthresh to itself (~2000 packets) and restart slow start.
    const lifted = throttled.filter((s) => s.ssthresh >= clamp / 2);
    assert.deepEqual(
      lifted.map((s) => `${s.tMs} ms: ssthresh ${s.ssthresh}`),
      [],
      `ssthresh stayed the congestion control's (clamp ~${clamp}, cwnd up to ${Math.max(...throttled.map((s) => s.cwnd))})`,
    );
    // The path holds ~340 packets (BDP and buffer): the window never reaches the clamp, so none is applied.
    const maxCwnd = Math.max(...throttled.map((s) => s.cwnd));
    assert.ok(maxCwnd < clamp, `cwnd ${maxCwnd} stayed below the clamp ${clamp}`);
    assert.deepEqual(
      [...new Set(throttled.map((s) => s.appliedPackets ?? 0))],
      [0],
      'no clamp was applied above the window',
    );
  });
});
