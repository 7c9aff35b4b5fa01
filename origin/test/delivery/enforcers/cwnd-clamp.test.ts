/**
 * The cwnd-clamp enforcer (Algorithm 1) through a recording clamp backend: the clamp set at R with
 * the gain and floor, lifted when the flow meter says goodput is behind the schedule (catch-up)
 * and set again when it is back, writes throttled at R at the floor, what each block was aimed at,
 * and the clamp undone at the end. (The kernel's side is measured through the lab in
 * e2e/test/policies.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClampBackend, SocketControl, TcpInfo } from '@trickle/native';
import { cwndClampEnforcer } from '../../../src/delivery/enforcers/cwnd-clamp.js';
import type { PhaseClocks } from '../../../src/delivery/enforcers/kernel-phase.js';
import type {
  Block,
  EnforcerReport,
  ResponseLimits,
  ScheduleProgress,
} from '../../../src/delivery/enforcers/enforcer.js';
import { drive } from './schedule-harness.js';

function recordingClamp() {
  const calls: string[] = [];
  const clamp: ClampBackend = {
    backend: 'bpf',
    fallbackReason: undefined,
    setRate: (_socket, target) =>
      void calls.push(`rate ${target.rateBytesPerSec} gain ${target.gain} min ${target.minPackets}`),
    setPackets: (_socket, packets) => void calls.push(`packets ${packets}`),
    release: (_socket, options) => void calls.push(`release ${options?.mode}`),
    setInitialWindow: () => undefined,
    setSchedule: (_socket, schedule) =>
      void calls.push(
        `schedule ${schedule.throttleOffsetBytes} ` +
          `${schedule.pieces.map((p) => `${p.endOffsetBytes}@${p.rateBytesPerSec}`).join(',')} ` +
          `gain ${schedule.gain} min ${schedule.minPackets} limit ${schedule.limit}`,
      ),
    forget: () => undefined,
    state: () => ({ backend: 'bpf', appliedPackets: 42 }),
    takeClosedPhase: () => undefined,
    stats: () => ({ backend: 'bpf', entries: 0, updatesApplied: 0, errors: 0 }),
    close: () => undefined,
  };
  const lowats: number[] = [];
  const control = {
    clamp,
    setNotsentLowat: (_socket: unknown, bytes: number) => void lowats.push(bytes),
  } as unknown as SocketControl;
  return { calls, lowats, control };
}

/** The cwnd clamp's own part of a report (fails on any other kind). */
function clampRecord(report: EnforcerReport) {
  const { enforcer } = report;
  if (enforcer.kind !== 'cwnd-clamp') assert.fail(`a cwnd-clamp report, not ${enforcer.kind}`);
  return enforcer;
}

/** 40 ms srtt, 1448 B mss: 1.2 x 1.25 MB/s x 40 ms / 1448 = 42 packets; 250 kB/s gives 8.3, below the floor. */
const reading = (extra: Partial<TcpInfo> = {}): TcpInfo => ({
  kernelLengthBytes: 280,
  rttUs: 40_000,
  mss: 1448,
  cwnd: 40,
  ...extra,
});
const block = (rateBytesPerSec: number, nowMs: number): Block => ({
  offset: 0,
  sizeBytes: 65_536,
  rateBytesPerSec,
  nowMs,
});

/**
 * Fixed clocks: the program's CLOCK_MONOTONIC and the engine's clock stand still, 7 s apart (times convert exactly).
 */
const clocks: PhaseClocks = { monotonicMs: () => 1_000_000, engineMs: () => 993_000 };

/** The cwnd clamp with its phase in the kernel: the paper's gain and floor, a 4 s send buffer, the fixed clocks. */
function startInKernel(
  control: SocketControl,
  socketError: (operation: string) => void = assert.fail,
  limits: ResponseLimits | undefined = undefined,
) {
  return cwndClampEnforcer('cwnd-clamp', {
    gain: 1.2,
    floorPackets: 10,
    blockBytes: 65_536,
    release: 'gradual',
    clampRtt: 'srtt',
    inKernel: true,
    sendBufferSeconds: 4,
    clocks,
  }).start({ socket: 3, control, socketError }, limits);
}

describe('cwnd-clamp enforcer (Algorithm 1)', () => {
  const start = (
    control: SocketControl,
    info: () => TcpInfo | undefined = () => reading(),
    limits: ResponseLimits | undefined = undefined,
  ) => {
    const clamp = cwndClampEnforcer('cwnd-clamp', {
      gain: 1.2,
      floorPackets: 10,
      blockBytes: 65_536,
      release: 'gradual',
      clampRtt: 'srtt',
      inKernel: false,
      sendBufferSeconds: 4,
    }).start({ socket: 3, control, socketError: assert.fail }, limits);
    return { clamp, run: drive(clamp, info) };
  };

  it("takes a response's own floor (a path that holds fewer packets) only when it is below its own", () => {
    // 250 kB/s: 8.3 packets at 40 ms (9), under the floor of 10 but over a floor of 4: clamped, writes not throttled.
    const lower = recordingClamp();
    const { clamp, run } = start(lower.control, () => reading(), { floorPackets: 4 });
    run.start(0);
    assert.equal(run.before(block(250_000, 0)), 0);
    run.after(block(250_000, 0));
    assert.equal(run.before(block(250_000, 0)), 0);
    assert.deepEqual(lower.calls, ['rate 250000 gain 1.2 min 4']);
    assert.equal(clampRecord(clamp.report()).throttledWriteBlocks, 0);
    assert.deepEqual(clampRecord(clamp.report()).clampPackets, { min: 9, mean: 9, max: 9 });
    assert.match(clamp.report().reason, /= 9 packets/);
    // A higher one is not taken: the enforcer's floor is the operator's.
    const higher = recordingClamp();
    const held = start(higher.control, () => reading(), { floorPackets: 20 });
    held.run.start(0);
    held.run.before(block(250_000, 0));
    assert.deepEqual(higher.calls, ['rate 250000 gain 1.2 min 10']);
  });

  it(
    'clamps at R with the gain, lifts the clamp while goodput is behind the schedule, ' +
      'and clamps again once it is back',
    () => {
      const { calls, lowats, control } = recordingClamp();
      let info = reading();
      const { clamp, run } = start(control, () => info);
      run.start(0);
      assert.deepEqual(lowats, [65_536]);
      assert.equal(run.before(block(1_250_000, 0)), 0);
      run.after(block(1_250_000, 0));
      assert.deepEqual(calls, ['rate 1250000 gain 1.2 min 10']);
      // VBR: this block's R is higher than the schedule's so far; goodput above the schedule keeps the clamp.
      const onSchedule: ScheduleProgress = { goodputBytesPerSec: 700_000, targetBytesPerSec: 600_000 };
      assert.equal(run.before(block(1_250_000, 500), onSchedule), 0);
      assert.deepEqual(calls, ['rate 1250000 gain 1.2 min 10']);
      // Behind the schedule and network-limited: lifted (gradually) to catch up.
      run.before(block(1_250_000, 1000), { goodputBytesPerSec: 500_000, targetBytesPerSec: 600_000 });
      assert.deepEqual(calls.slice(1), ['release gradual']);
      assert.match(clamp.report().reason, /below R .* clamp lifted/);
      // Behind, but app-limited (the sender held the flow back): not a reason to lift.
      info = reading({ deliveryRateAppLimited: true });
      run.before(block(1_250_000, 1500), { goodputBytesPerSec: 500_000, targetBytesPerSec: 600_000 });
      assert.deepEqual(calls.slice(2), ['rate 1250000 gain 1.2 min 10']);
      run.after(block(1_250_000, 1500));
      clamp.end(reading());
      assert.deepEqual(calls.slice(3), ['release gradual']);
      assert.deepEqual(lowats, [65_536, 0]);
      const report = clamp.report();
      assert.equal(report.backend, 'bpf');
      assert.equal(clampRecord(report).catchUps, 1);
      assert.deepEqual(clampRecord(report).clampPackets, { min: 42, mean: 42, max: 42 });
      assert.deepEqual(clampRecord(report).appliedClampPackets, { min: 42, mean: 42, max: 42 });
      // Both blocks went out under the clamp: aimed at gain x R.
      assert.deepEqual(report.paceRateBps, { min: 12e6, mean: 12e6, max: 12e6 });
    },
  );

  it(
    'holds the clamp at the floor and spaces writes on the schedule at R: the first ' +
      'block at once, each next one when the bytes before it are due',
    () => {
      const { control } = recordingClamp();
      const { clamp, run } = start(control);
      run.start(0);
      assert.equal(run.before(block(250_000, 0)), 0);
      run.after(block(250_000, 0));
      // The next waits until the first is due at R: 65,536 / 250,000 s.
      assert.equal(run.before(block(250_000, 0)), 262.144);
      run.after(block(250_000, 262.144));
      // Time the socket held the writes back is made up at once: at 700 ms both blocks are overdue.
      assert.equal(run.before(block(250_000, 700)), 0);
      const report = clamp.report();
      assert.equal(clampRecord(report).throttledWriteBlocks, 2);
      assert.deepEqual(clampRecord(report).clampPackets, { min: 10, mean: 10, max: 10 });
      // At the floor the blocks were aimed at R itself.
      assert.equal(report.paceRateBps!.mean, 2e6);
    },
  );

  it(
    'gives no free block when it comes to the floor after blocks under the clamp (a ' + 'still scene after a busy one)',
    () => {
      const { control } = recordingClamp();
      const { run } = start(control);
      run.start(0);
      assert.equal(run.before(block(1_250_000, 0)), 0);
      run.after(block(1_250_000, 0));
      // 64 kB at 250 kB/s after 64 kB at 1.25 MB/s: it waits for the first to be due (52.4 ms) at R.
      assert.ok(Math.abs(run.before(block(250_000, 10)) - 42.4288) < 1e-9);
      run.after(block(250_000, 52.4288));
      assert.ok(Math.abs(run.before(block(250_000, 52.4288)) - 262.144) < 1e-9);
    },
  );

  it('serves unclamped when TCP_INFO is missing, and says so', () => {
    const { calls, control } = recordingClamp();
    const { clamp, run } = start(control, () => undefined);
    assert.equal(run.before(block(1_250_000, 0)), 0);
    assert.deepEqual(calls, []);
    assert.match(clamp.report().reason, /no TCP_INFO/);
  });

  it(
    'in the kernel: hands the phase over with the gain and floor, and at the end reads ' +
      'what the program did, clears its pacing rate and releases the clamp',
    () => {
      const { calls, control } = recordingClamp();
      const pacing: (number | null)[] = [];
      const raised: number[] = [];
      const schedule = {
        state: 'clamped' as const,
        catchUps: 2,
        phaseStartMonotonicMs: clocks.monotonicMs() - 500,
        phaseStartAckedBytes: 1000,
        phaseStartRetransmits: 3,
        phaseStartSegmentsOut: 40,
        phaseStartSrttUs: 40_000,
        floorMs: 120.4,
        catchingUpMs: 80,
        clampPackets: { min: 10, mean: 17.4, max: 21, samples: 90 },
        cwndPackets: { min: 9, mean: 17.2, max: 22 },
        maxLagMs: 61,
        heldMonotonicMs: 0,
      };
      const kernelControl = {
        ...control,
        clamp: {
          ...control.clamp,
          state: () => ({ backend: 'bpf' as const, appliedPackets: 17, pacingRateBytesPerSec: 62_500, schedule }),
        },
        setMaxPacingRate: (_socket: unknown, rate: number | null) => void pacing.push(rate),
        raiseSendBuffer: (_socket: unknown, bytes: number) => {
          raised.push(bytes);
          return 2 * bytes;
        },
      } as unknown as SocketControl;
      const enforcement = startInKernel(kernelControl);
      assert.ok(enforcement.kernel !== undefined);
      assert.equal(
        enforcement.kernel.handOver({
          baseBytes: 5000,
          throttleOffsetBytes: 100_000,
          pieces: [
            { endOffsetBytes: 200_000, rateBytesPerSec: 250_000 },
            { endOffsetBytes: 400_000, rateBytesPerSec: 500_000 },
          ],
          graceUs: 400_000,
        }),
        true,
      );
      assert.deepEqual(calls, ['schedule 100000 200000@250000,400000@500000 gain 1.2 min 10 limit clamp']);
      // The phase's writes: the buffer holds what is left (less than 4 s at the highest rate, 500 kB/s), once.
      enforcement.kernel.phaseWriting(300_000);
      enforcement.kernel.phaseWriting(200_000);
      assert.deepEqual(raised, [300_000]);
      enforcement.kernel.end();
      assert.deepEqual(pacing, [null]);
      assert.deepEqual(calls.slice(1), ['release gradual']);
      const report = enforcement.kernel.report();
      assert.equal(clampRecord(report).trickleIn, 'kernel');
      assert.equal(clampRecord(report).catchUps, 2);
      assert.deepEqual(clampRecord(report).appliedClampPackets, { min: 10, mean: 17, max: 21 });
      assert.deepEqual(clampRecord(report).cwndWhileClampedPackets, { min: 9, mean: 17, max: 22 });
      assert.deepEqual(clampRecord(report).kernelPhase, {
        started: true,
        heldAtFirstByte: false,
        floorMs: 120,
        catchingUpMs: 80,
        maxLagMs: 61,
        stateAtEnd: 'clamped',
        sendBufferBytes: 600_000,
      });
      // Aimed at gain x R, byte-weighted over the pieces (300,000 bytes over 0.8 s = 375 kB/s), but at R
      // for the share of the phase at the floor (120 of ~500 ms), where the program paces at R.
      const floorShare = 120.4 / 500; // exactly: the clocks stand still
      const aimedBps = 375_000 * 8 * (1.2 * (1 - floorShare) + floorShare);
      assert.ok(
        Math.abs(report.paceRateBps!.mean / aimedBps - 1) < 0.01,
        `aimed at ${report.paceRateBps!.mean} bit/s, expected ~${aimedBps}`,
      );
      assert.equal(report.paceRateBps!.min, 250_000 * 8, 'the floor paces the slower piece at its R');
      const start = enforcement.kernel.phaseStart();
      assert.equal(start?.atMs, clocks.engineMs() - 500, "the phase began 500 ms ago on the engine's clock");
      assert.equal(start.info?.bytesAcked, 1000);
    },
  );

  it(
    'in the kernel: when the socket closed mid-response, takes what the program kept ' +
      '(the phase and the counters at the close) and touches no socket option',
    () => {
      const { calls, control } = recordingClamp();
      const nowMonotonicMs = clocks.monotonicMs();
      const schedule = {
        state: 'floor' as const,
        catchUps: 1,
        phaseStartMonotonicMs: nowMonotonicMs - 2000,
        phaseStartAckedBytes: 900_000,
        phaseStartRetransmits: 4,
        phaseStartSegmentsOut: 700,
        phaseStartSrttUs: 61_000,
        floorMs: 1500,
        catchingUpMs: 30,
        clampPackets: { min: 10, mean: 10, max: 10, samples: 40 },
        cwndPackets: { min: 10, mean: 10.5, max: 12 },
        maxLagMs: 12,
        heldMonotonicMs: nowMonotonicMs - 2000,
      };
      let taken = 0;
      const kernelControl = {
        ...control,
        clamp: {
          ...control.clamp,
          state: assert.fail,
          takeClosedPhase: () => {
            taken++;
            return {
              schedule,
              closedMonotonicMs: nowMonotonicMs - 100,
              bytesAcked: 1_150_000,
              totalRetransmits: 6,
              dataSegmentsOut: 880,
              srttUs: 63_000,
            };
          },
        },
        setMaxPacingRate: assert.fail,
        raiseSendBuffer: (_socket: unknown, bytes: number) => bytes,
      } as unknown as SocketControl;
      const enforcement = startInKernel(kernelControl);
      assert.equal(
        enforcement.kernel!.handOver({
          baseBytes: 0,
          throttleOffsetBytes: 500_000,
          pieces: [{ endOffsetBytes: 3_000_000, rateBytesPerSec: 100_000 }],
          graceUs: 400_000,
        }),
        true,
      );
      const last = enforcement.kernel!.closed();
      assert.equal(taken, 1);
      assert.deepEqual(calls.slice(1), [], 'nothing is asked of a closed socket');
      assert.equal(last?.atMs, clocks.engineMs() - 100, "the close 100 ms ago on the engine's clock");
      assert.deepEqual(last.info, {
        kernelLengthBytes: 0,
        bytesAcked: 1_150_000,
        totalRetrans: 6,
        dataSegsOut: 880,
        rttUs: 63_000,
      });
      assert.equal(enforcement.kernel!.phaseStart()?.info?.bytesAcked, 900_000);
      const report = enforcement.kernel!.report();
      assert.deepEqual(clampRecord(report).kernelPhase, {
        started: true,
        heldAtFirstByte: true,
        floorMs: 1500,
        catchingUpMs: 30,
        maxLagMs: 12,
        stateAtEnd: 'floor',
        sendBufferBytes: null,
      });
      assert.match(report.reason, /floor when the socket closed mid-response; 1 catch-up\(s\), 1500 ms at the floor/);
    },
  );

  it(
    "in the kernel: at the end of a response whose viewer's reset took the program's entry before Node saw " +
      'the socket end, takes the phase the program kept',
    () => {
      const { calls, control } = recordingClamp();
      const nowMonotonicMs = clocks.monotonicMs();
      const schedule = {
        state: 'clamped' as const,
        catchUps: 0,
        phaseStartMonotonicMs: nowMonotonicMs - 9000,
        phaseStartAckedBytes: 2_000_000,
        phaseStartRetransmits: 0,
        phaseStartSegmentsOut: 1400,
        phaseStartSrttUs: 25_000,
        floorMs: 0,
        catchingUpMs: 0,
        clampPackets: { min: 12, mean: 14, max: 20, samples: 300 },
        cwndPackets: { min: 12, mean: 14, max: 20 },
        maxLagMs: 20,
        heldMonotonicMs: nowMonotonicMs - 9000,
      };
      const kernelControl = {
        ...control,
        clamp: {
          ...control.clamp,
          // The entry went with the kernel's socket at the reset; the fd is still open.
          state: () => undefined,
          takeClosedPhase: () => ({
            schedule,
            closedMonotonicMs: nowMonotonicMs - 30,
            bytesAcked: 8_900_000,
            totalRetransmits: 0,
            dataSegmentsOut: 6200,
            srttUs: 26_000,
          }),
        },
        setMaxPacingRate: assert.fail,
        raiseSendBuffer: (_socket: unknown, bytes: number) => bytes,
      } as unknown as SocketControl;
      const enforcement = startInKernel(kernelControl);
      enforcement.kernel!.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 2_000_000,
        pieces: [{ endOffsetBytes: 9_000_000, rateBytesPerSec: 400_000 }],
        graceUs: 400_000,
      });
      enforcement.kernel!.end();
      assert.deepEqual(calls.slice(1), ['release gradual']);
      const start = enforcement.kernel!.phaseStart();
      assert.equal(start?.atMs, clocks.engineMs() - 9000, 'the phase began where the program says');
      assert.equal(start.info?.bytesAcked, 2_000_000);
      const report = enforcement.kernel!.report();
      assert.equal(clampRecord(report).kernelPhase?.stateAtEnd, 'clamped');
      assert.match(report.reason, /clamped when the socket closed mid-response/);
    },
  );

  it('in the kernel: says when the socket closed and nothing was kept', () => {
    const { control } = recordingClamp();
    const enforcement = cwndClampEnforcer('cwnd-clamp', {
      gain: 1.2,
      floorPackets: 10,
      blockBytes: 65_536,
      release: 'gradual',
      clampRtt: 'srtt',
      inKernel: true,
      sendBufferSeconds: 0,
    }).start({ socket: 3, control, socketError: assert.fail });
    assert.equal(
      enforcement.kernel!.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 1000, rateBytesPerSec: 1000 }],
        graceUs: 0,
      }),
      true,
    );
    assert.equal(enforcement.kernel!.closed(), undefined);
    assert.match(
      enforcement.kernel!.report().reason,
      /its state was gone at the end \(the socket closed before it was read, and none was kept\)/,
    );
  });

  it('in the kernel: says so when the response was acknowledged before its phase began', () => {
    const { control } = recordingClamp();
    const schedule = {
      state: 'done' as const,
      catchUps: 0,
      phaseStartMonotonicMs: 0,
      phaseStartAckedBytes: 0,
      phaseStartRetransmits: 0,
      phaseStartSegmentsOut: 0,
      phaseStartSrttUs: 0,
      floorMs: 0,
      catchingUpMs: 0,
      clampPackets: null,
      cwndPackets: null,
      maxLagMs: 0,
      heldMonotonicMs: 0,
    };
    const kernelControl = {
      ...control,
      clamp: { ...control.clamp, state: () => ({ backend: 'bpf' as const, schedule }) },
      setMaxPacingRate: () => undefined,
      raiseSendBuffer: (_socket: unknown, bytes: number) => bytes,
    } as unknown as SocketControl;
    const enforcement = startInKernel(kernelControl);
    assert.equal(
      enforcement.kernel!.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 4500, rateBytesPerSec: 2300 }],
        graceUs: 400_000,
      }),
      true,
    );
    enforcement.kernel!.end();
    const report = enforcement.kernel!.report();
    assert.equal(clampRecord(report).kernelPhase?.started, false);
    assert.match(report.reason, /acknowledged before its phase began/);
    assert.equal(enforcement.kernel!.phaseStart(), undefined);
  });

  it("in the kernel: hands the program a response's lower floor", () => {
    const { calls, control } = recordingClamp();
    const kernelControl = {
      ...control,
      setMaxPacingRate: () => undefined,
      raiseSendBuffer: (_socket: unknown, bytes: number) => bytes,
    } as unknown as SocketControl;
    const enforcement = startInKernel(kernelControl, assert.fail, { floorPackets: 4 });
    assert.equal(
      enforcement.kernel!.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 64_000, rateBytesPerSec: 30_000 }],
        graceUs: 400_000,
      }),
      true,
    );
    assert.deepEqual(calls, ['schedule 0 64000@30000 gain 1.2 min 4 limit clamp']);
  });

  it('in the kernel: a refused send buffer is logged and the phase goes on', () => {
    const { control } = recordingClamp();
    const errors: string[] = [];
    const refusing = {
      ...control,
      raiseSendBuffer: () => {
        throw Object.assign(new Error('setsockopt: Bad file descriptor'), { code: 'EBADF' });
      },
    } as unknown as SocketControl;
    const enforcement = startInKernel(refusing, (operation) => void errors.push(operation));
    assert.equal(
      enforcement.kernel?.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 1000, rateBytesPerSec: 1000 }],
        graceUs: 0,
      }),
      true,
    );
    enforcement.kernel.phaseWriting(1000);
    assert.deepEqual(errors, ['raiseSendBuffer']);
  });

  it('in the kernel: a refused schedule is logged and the response goes block by block', () => {
    const { control } = recordingClamp();
    const errors: string[] = [];
    const refusing = {
      ...control,
      clamp: {
        ...control.clamp,
        setSchedule: () => {
          throw new Error('ENOMEM');
        },
      },
    } as unknown as SocketControl;
    const enforcement = startInKernel(refusing, (operation) => void errors.push(operation));
    assert.equal(
      enforcement.kernel?.handOver({
        baseBytes: 0,
        throttleOffsetBytes: 0,
        pieces: [{ endOffsetBytes: 1000, rateBytesPerSec: 1000 }],
        graceUs: 0,
      }),
      false,
    );
    assert.deepEqual(errors, ['clamp.setSchedule']);
    assert.equal(clampRecord(enforcement.report()).trickleIn, 'user-space');
  });
});
