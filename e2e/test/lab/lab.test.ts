/**
 * The lab against its own claims, on the real kernel (root; CI runs it): idle RTT within 1 ms,
 * bulk goodput within 5% of the rate, tail drop of a burst larger than the buffer, seeded random
 * loss within its binomial interval, a rate step seen within a second, clean teardown, and two
 * labs side by side, on the delay-line backend (netem.test.ts checks the netem backend, in a guest
 * kernel where this one has no netem).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, describe, it } from 'node:test';
import {
  binomialInterval,
  bulkFlow,
  labDown,
  labUp,
  measureBulkGoodputBps,
  measureBurstDelivery,
  measureIdleRtt,
  measureRandomLoss,
  symmetricLink,
  tbfBurstBytes,
  tcpPayloadEfficiency,
} from '../../src/index.js';
import { stepTrace } from '@trickle/player-sim';
import { skipUnless } from '../helpers/requirements.js';

const skip = skipUnless('the lab tests', { root: true });
const backend = 'delayline';

function namespaces(): string[] {
  return spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((l) => l.split(' ')[0]!)
    .filter(Boolean);
}

describe(`lab accuracy, ${backend} backend`, { skip }, () => {
  const name = 'tacc';
  after(() => labDown(name));

  it('idle RTT within 1 ms, bulk goodput within 5% of the rate', async () => {
    const lab = await labUp(name, symmetricLink({ rateBps: 6e6, rttMs: 40, bufferBdp: 2 }), { backend });
    assert.equal(lab.state.backend, backend);
    const idle = await measureIdleRtt(lab);
    const rttMs = idle.medianMs;
    assert.ok(Math.abs(rttMs - 40) <= 1, `idle RTT ${rttMs} ms (echoes ${idle.echoesMs.join(', ')} ms)`);
    const goodput = await measureBulkGoodputBps(lab);
    const expected = 6e6 * tcpPayloadEfficiency;
    assert.ok(Math.abs(goodput / expected - 1) <= 0.05, `goodput ${goodput} vs ${expected}`);
    console.log(
      `# ${backend}: RTT configured 40 ms, measured ${rttMs.toFixed(2)} ms; rate 6 Mbit/s ` +
        `(payload ${(expected / 1e6).toFixed(2)}), goodput ${(goodput / 1e6).toFixed(2)} ` +
        `Mbit/s`,
    );
  });

  it('is idempotent', async () => {
    const spec = symmetricLink({ rateBps: 6e6, rttMs: 40, bufferBdp: 2 });
    const first = await labUp(name, spec, { backend });
    const again = await labUp(name, spec, { backend });
    assert.equal(again.state.createdAt, first.state.createdAt);
  });

  it('drops the part of a burst that does not fit the buffer', async () => {
    const bufferBytes = 60_000;
    const rateBps = 6e6;
    const lab = await labUp(name, symmetricLink({ rateBps, rttMs: 40, bufferBytes }), { backend });
    const { sent, received, dropsAtBottleneck, sendDurationUs } = await measureBurstDelivery(lab, 200);
    const frame = 1514;
    const fits = Math.floor(bufferBytes / frame);
    // What gets through besides the buffer's worth: the TBF bucket's frames, and the frames the
    // link sends (one per 2 ms at 6 Mbit/s) while the burst arrives at the queue. It arrives as the
    // delay line releases it, and a host stall can hold that release up (CI saw ~20 ms: 12 more
    // frames): so the bound counts the sender's own measured send time plus 50 ms of release
    // (25 frames, 2.5 times the longest stall seen here). It still fails a buffer twice the size
    // asked for (78 frames would fit; the bound is ~70).
    const bucketFrames = Math.floor(tbfBurstBytes(rateBps) / frame);
    const drainedFrames = Math.ceil(((sendDurationUs / 1e6 + 0.05) * rateBps) / 8 / frame);
    assert.equal(sent, 200);
    assert.ok(
      received >= fits && received <= fits + bucketFrames + drainedFrames,
      `${received} of 200 delivered through a ${bufferBytes} B buffer (${fits} fit, ${bucketFrames} in the ` +
        `bucket, ${drainedFrames} drained during the ${(sendDurationUs / 1000).toFixed(1)} ms burst and 50 ms)`,
    );
    assert.equal(dropsAtBottleneck, sent - received, 'every loss is a tail drop at the bottleneck');
    console.log(
      `# ${backend}: burst of 200 x 1514 B into ${bufferBytes} B: ${received} ` +
        `delivered, ${dropsAtBottleneck} dropped at the bottleneck`,
    );
  });

  it('applies random loss within its binomial interval', async () => {
    const lossRate = 0.05;
    const lab = await labUp(name, symmetricLink({ rateBps: 20e6, rttMs: 10, bufferBdp: 4, lossRate, seed: 7 }), {
      backend,
    });
    const result = await measureRandomLoss(lab, 4000, 500);
    // Judged at the link's own loss (its counters): a binomial draw, outside its 99.9 % interval
    // by chance in 1 run of 1,000 (the delay line's generator is seeded, so a run repeats the draw).
    const interval = binomialInterval(result.link.offered, lossRate);
    console.log(
      `# ${backend}: loss configured 5%, the link ` +
        `dropped ${(result.link.lossRate * 100).toFixed(2)}% of ${result.link.offered} ` +
        `frames (99.9% interval ${(interval.low * 100).toFixed(2)}-${(interval.high * 100).toFixed(2)}%); ` +
        `end to end ${(result.lossRate * 100).toFixed(2)}% of ${result.sent} datagrams`,
    );
    assert.ok(
      result.link.offered >= result.sent,
      `the link saw ${result.link.offered} frames of ${result.sent} datagrams`,
    );
    assert.ok(
      result.link.lossRate >= interval.low && result.link.lossRate <= interval.high,
      `loss ${result.link.lossRate} outside [${interval.low}, ${interval.high}]`,
    );
  });

  it('follows a step trace within a second', async () => {
    const lab = await labUp(
      name,
      { ...symmetricLink({ rateBps: 8e6, rttMs: 20, bufferBdp: 2 }), trace: stepTrace(8e6, 2e6, 4000, 600_000) },
      { backend },
    );
    // The trace's clock: labUp returns once the replayer applied the first point (a loaded host took
    // seconds to start it, and the step came late by that).
    const zeroMs = Date.parse(lab.state.traceStartedAt!);
    // Throughput as the link delivers it: bytes leaving the downlink bottleneck per 250 ms.
    const flow = bulkFlow(lab, 7000 - (Date.now() - zeroMs), 0, 7000, 250, 7003);
    const samples: { atMs: number; sentBytes: number }[] = [];
    while (Date.now() - zeroMs < 7000) {
      // A reading is dated at the middle of the status call: the counter was read somewhere in it.
      const askedMs = Date.now() - zeroMs;
      const sentBytes = (await lab.status()).bottleneck.down.sentBytes;
      samples.push({ atMs: (askedMs + Date.now() - zeroMs) / 2, sentBytes });
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await flow;
    // The mean rate over a window (first reading to last inside it), not every 250 ms bin: a bin's
    // reading can be late by a whole host stall (10-20 ms, 8 % of a bin), while over readings at
    // least 1 s apart the dating error is at most half a status call at each end (< 4 % with 20 ms
    // calls); the bounds leave 15 % (2.3 for 2 Mbit/s) and 19 % (6.5 for 8). Readings come every
    // 250 ms plus a status call (~300 ms, more on a loaded host), so an 1.8 s window holds readings
    // at least 1.8 s - 2 x 0.4 s apart (the hunt saw 1187 ms inside a 1.7 s window once).
    const meanBps = (fromMs: number, toMs: number) => {
      const inside = samples.filter((s) => s.atMs >= fromMs && s.atMs <= toMs);
      const first = inside[0]!;
      const last = inside[inside.length - 1]!;
      return {
        bps: ((last.sentBytes - first.sentBytes) * 8 * 1000) / (last.atMs - first.atMs),
        spanMs: last.atMs - first.atMs,
      };
    };
    // The step is 4 s into the trace; the flow, started within ~1 s (two peers spawned), is past its
    // slow start 2 s in.
    const before = meanBps(2000, 3800);
    const settled = meanBps(4000 + 1000, 7000);
    const readings = samples.map((s) => `${s.atMs.toFixed(0)} ms: ${s.sentBytes} B`).join(', ');
    const show = (m: { bps: number; spanMs: number }) =>
      `${(m.bps / 1e6).toFixed(2)} Mbit/s over ${m.spanMs.toFixed(0)} ms (the bottleneck's counter at ${readings})`;
    assert.ok(before.spanMs >= 1000 && before.bps > 6.5e6, `before the step: ${show(before)}`);
    assert.ok(settled.spanMs >= 1000 && settled.bps < 2.3e6, `from 1 s after the step: ${show(settled)}`);
  });
});

/** The process's state letter from /proc, or undefined when it is gone or a zombie. */
function runningState(pid: number): string | undefined {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0];
    return state === 'Z' ? undefined : state;
  } catch {
    return undefined;
  }
}

describe('lab lifecycle', { skip }, () => {
  it(
    'builds a lab anew where the one of that name lost its delay line (a killed run), ' + 'and reuses a whole one',
    async () => {
      const spec = symmetricLink({ rateBps: 10e6, rttMs: 20 });
      try {
        const first = await labUp('tdead', spec);
        assert.equal((await labUp('tdead', spec)).state.createdAt, first.state.createdAt, 'a whole lab is reused');
        process.kill(first.state.pids.delayline!, 'SIGKILL');
        await new Promise((resolve) => setTimeout(resolve, 100));
        const again = await labUp('tdead', spec);
        assert.notEqual(again.state.createdAt, first.state.createdAt, 'a lab without its delay line is built anew');
        assert.notEqual(again.state.pids.delayline, first.state.pids.delayline);
        const rttMs = (await measureIdleRtt(again)).medianMs;
        assert.ok(rttMs > 15 && rttMs < 30, `the new lab forwards: RTT ${rttMs} ms for 20`);
      } finally {
        await labDown('tdead');
      }
    },
  );

  it('runs two labs side by side and leaves nothing behind', async () => {
    const a = await labUp('tla', symmetricLink({ rateBps: 10e6, rttMs: 20 }), { cross: true });
    const b = await labUp('tlb', symmetricLink({ rateBps: 10e6, rttMs: 60 }));
    let leftPid: number | undefined;
    try {
      const [idleA, idleB] = await Promise.all([
        measureIdleRtt(a, { samples: 30 }),
        measureIdleRtt(b, { samples: 30 }),
      ]);
      // Two delay lines at once beside a browser test: each RTT is the median of 30 echoes (it moves only if over
      // half of them come back late); within 1.5 ms (CI read 21.06 ms for 20 with the 10 %-trimmed mean of 20). A lab
      // without its own delay reads 0 or 40 ms.
      assert.ok(
        Math.abs(idleA.medianMs - 20) <= 1.5 && Math.abs(idleB.medianMs - 60) <= 1.5,
        `RTTs ${idleA.medianMs} (echoes ${idleA.echoesMs.join(', ')}), ${idleB.medianMs} (echoes ${idleB.echoesMs.join(', ')}) ms`,
      );
      assert.equal(
        await a.exec('cross', ['ping', '-c', '1', '-W', '2', a.address('origin')], { stdio: 'ignore' }),
        0,
        'the cross host reaches the origin',
      );
      // A process left running in a namespace is cleaned up by down.
      // `ip netns exec` execs the command, so the child's pid is the sleep's.
      const left = a.spawn('origin', ['sleep', '600'], { stdio: 'ignore', detached: true });
      left.unref();
      leftPid = left.pid;
    } finally {
      await labDown('tla');
      await labDown('tlb');
    }
    assert.deepEqual(
      namespaces().filter((ns) => ns.startsWith('trickle-tla-') || ns.startsWith('trickle-tlb-')),
      [],
    );
    // That process, not any `sleep 600` on the machine (a shell waiting 600 s made this fail once); a zombie is dead.
    assert.ok(leftPid !== undefined, 'the process was started');
    assert.equal(runningState(leftPid), undefined, 'no process of the lab survives');
    const links = spawnSync('ip', ['-o', 'link'], { encoding: 'utf8' }).stdout;
    assert.ok(!/tla|tlb/.test(links), 'no veth is left on the host');
  });
});
