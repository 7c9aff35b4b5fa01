/**
 * The kernel-pacing enforcer's decisions through a recording SocketControl port (the real port and
 * kernel are measured through the lab in e2e/test/policies): the rate asked for covers the
 * previous block's unsent rest, rates below the floor go to writes, goodput behind the schedule
 * lifts the cap until it is back, failures leave the response unpaced. In the kernel: the phase
 * goes to the program once as a pacing schedule, and the end reads it and undoes its rate.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClampBackend, ClampSchedule, ScheduleState, SocketControl, TcpInfo } from '@trickle/native';
import type { Enforcement, EnforcerReport, ScheduleProgress } from '../../../src/delivery/enforcers/enforcer.js';
import { kernelPacingEnforcer } from '../../../src/delivery/enforcers/kernel-pacing.js';
import { drive } from './schedule-harness.js';

/** Kernel pacing's own part of a report (fails on any other kind). */
function pacingRecord(report: EnforcerReport) {
  const { enforcer } = report;
  if (enforcer.kind !== 'kernel-pacing') assert.fail(`a kernel-pacing report, not ${enforcer.kind}`);
  return enforcer;
}

interface Recorded {
  readonly control: SocketControl;
  readonly rates: (number | null)[];
  readonly lowats: number[];
  readonly errors: string[];
  info: Partial<TcpInfo>;
}

function recordingControl(options: { failPacing?: boolean } = {}): Recorded {
  const recorded: Recorded = {
    rates: [],
    lowats: [],
    errors: [],
    // 100 ms srtt, 1448 B mss: the 10-packet floor is 144,800 B/s.
    info: { kernelLengthBytes: 232, mss: 1448, rttUs: 100_000, notsentBytes: 0 },
    control: undefined as unknown as SocketControl,
  };
  const control: SocketControl = {
    tcpInfo: () => ({ kernelLengthBytes: 232, ...recorded.info }),
    setMaxPacingRate: (_socket, bytesPerSecond) => {
      if (options.failPacing === true)
        throw Object.assign(new Error('setsockopt: Operation not permitted'), { code: 'EPERM' });
      recorded.rates.push(bytesPerSecond);
    },
    setCongestionControl: () => undefined,
    getCongestionControl: () => 'cubic',
    setNotsentLowat: (_socket, bytes) => void recorded.lowats.push(bytes),
    raiseSendBuffer: () => 0,
    socketCookie: () => 1n,
    openFileSend: () => assert.fail('an enforcer never writes a body'),
    clamp: undefined as unknown as SocketControl['clamp'],
  };
  return Object.assign(recorded, { control });
}

/** The enforcer at 1.25 x R, driven with R values such that its aims are round numbers. */
function pacer(recorded: Recorded): {
  kernel: Enforcement;
  start: (unsent?: { sizeBytes: number; rateBytesPerSec: number }) => void;
  pace: (aimBytesPerSec: number, nowMs: number, progress?: ScheduleProgress) => number;
  written: (nowMs: number) => void;
} {
  const kernel = kernelPacingEnforcer({
    headroom: 1.25,
    blockBytes: 65_536,
    floorPackets: 10,
    inKernel: false,
    sendBufferSeconds: 4,
  }).start({ socket: 3, control: recorded.control, socketError: (operation) => void recorded.errors.push(operation) });
  const run = drive(kernel, () => recorded.control.tcpInfo(3));
  const block = (aimBytesPerSec: number, nowMs: number) => ({
    offset: 0,
    sizeBytes: 65_536,
    rateBytesPerSec: aimBytesPerSec / 1.25,
    nowMs,
  });
  let last = block(1, 0);
  return {
    kernel,
    start: (unsent) => run.start(0, unsent),
    pace: (aim, nowMs, progress) => {
      last = block(aim, nowMs);
      return run.before(last, progress);
    },
    written: (nowMs) => run.after({ ...last, nowMs }),
  };
}

describe('kernel-pacing enforcer', () => {
  it('paces each block at its rate, blended with what the previous block left unsent', () => {
    const recorded = recordingControl();
    const { kernel, start, pace, written } = pacer(recorded);
    start();
    assert.deepEqual(recorded.lowats, [65_536]);
    assert.equal(pace(500_000, 0), 0);
    written(0);
    // 16 kB of the 500 kB/s block still unsent when a 200 kB/s block comes: both leave under one rate,
    // the one that gives each part its own time: (16 + 64) kB / (16/500 + 64/200) s.
    recorded.info = { ...recorded.info, notsentBytes: 16_384 };
    pace(200_000, 100);
    written(100);
    assert.equal(recorded.rates[0], 500_000);
    assert.equal(recorded.rates[1], Math.round((16_384 + 65_536) / (16_384 / 500_000 + 65_536 / 200_000)));
    kernel.end(undefined);
    assert.deepEqual(recorded.rates.slice(2), [null]);
    assert.deepEqual(recorded.lowats, [65_536, 0]);
    const report = kernel.report();
    assert.equal(report.backend, 'kernel-pacing');
    // What the blocks were aimed at (bytes over the time at each block's own rate), not the blend.
    assert.equal(report.paceRateBps!.mean, Math.round((2 * 65_536 * 8) / (65_536 / 500_000 + 65_536 / 200_000)));
    assert.equal(pacingRecord(report).throttledWriteBlocks, 0);
  });

  it('counts startup bytes still unsent when throttling began toward the aim, at the first rate set', () => {
    const recorded = recordingControl();
    const { kernel, start, pace, written } = pacer(recorded);
    start({ sizeBytes: 100_000, rateBytesPerSec: 900_000 });
    pace(300_000, 0);
    written(0);
    pace(600_000, 200);
    written(200);
    // They leave under the rate set for the first block, so that is what they were aimed at.
    const aimedBytesPerSec = (100_000 + 2 * 65_536) / ((100_000 + 65_536) / 300_000 + 65_536 / 600_000);
    assert.equal(kernel.report().paceRateBps!.mean, Math.round(aimedBytesPerSec * 8));
  });

  it('below the floor paces at the floor and spaces writes on the schedule at the rate', () => {
    const recorded = recordingControl();
    const { kernel, start, pace, written } = pacer(recorded);
    start();
    // 25 kB/s is far below the floor: the first block goes at once, the next when the first is due (65,536 / 25,000 s).
    assert.equal(pace(25_000, 0), 0);
    written(0);
    assert.deepEqual(recorded.rates, [144_800]);
    assert.equal(pace(25_000, 100), 2521.44);
    assert.equal(pace(25_000, 2621.44), 0);
    written(2621.44);
    // Back above the floor the kernel paces again; the first block there waits for the floor's blocks to be due (2 x
    // 65,536 / 25,000 s).
    assert.ok(Math.abs(pace(400_000, 3000) - 2242.88) < 1e-9);
    assert.deepEqual(recorded.rates, [144_800, 400_000]);
    assert.equal(pace(400_000, 5242.88), 0);
    const report = kernel.report();
    assert.equal(pacingRecord(report).throttledWriteBlocks, 2);
    assert.match(report.reason, /2 block\(s\) below the floor of 10 packets per srtt/);
  });

  it('lifts the cap while goodput is behind the schedule, and sets it again once it is back', () => {
    const recorded = recordingControl();
    const { kernel, start, pace, written } = pacer(recorded);
    start();
    pace(500_000, 0);
    written(0);
    // Losses: 300 kB/s taken against a schedule of 400 kB/s (R): behind, network-limited.
    assert.equal(pace(500_000, 1000, { goodputBytesPerSec: 300_000, targetBytesPerSec: 400_000 }), 0);
    written(1000);
    assert.deepEqual(recorded.rates, [500_000, null]);
    assert.match(kernel.report().reason, /behind the schedule.*cap lifted/);
    // Still behind: nothing more to do (one catch-up).
    pace(500_000, 1100, { goodputBytesPerSec: 350_000, targetBytesPerSec: 400_000 });
    // Back on schedule: paced again.
    pace(500_000, 1500, { goodputBytesPerSec: 410_000, targetBytesPerSec: 400_000 });
    assert.deepEqual(recorded.rates, [500_000, null, 500_000]);
    // An app-limited reading is the sender's doing, not the path's: no catch-up.
    recorded.info = { ...recorded.info, deliveryRateAppLimited: true };
    pace(500_000, 2000, { goodputBytesPerSec: 300_000, targetBytesPerSec: 400_000 });
    assert.deepEqual(recorded.rates, [500_000, null, 500_000]);
    assert.equal(pacingRecord(kernel.report()).catchUps, 1);
  });

  it('serves unpaced after a failed SO_MAX_PACING_RATE, and says so', () => {
    const recorded = recordingControl({ failPacing: true });
    const { kernel, pace, written } = pacer(recorded);
    assert.equal(pace(500_000, 0), 0);
    assert.equal(pace(500_000, 10), 0);
    written(10);
    kernel.end(undefined);
    assert.deepEqual(recorded.errors, ['setMaxPacingRate']);
    const report = kernel.report();
    assert.equal(report.backend, 'none');
    assert.match(report.fallbackReason!, /served unpaced/);
    assert.equal(report.paceRateBps, null);
  });

  it(
    'in the kernel: hands the phase over as a pacing schedule at the headroom, and at ' +
      'the end reads what the program did and lifts its rate',
    () => {
      const recorded = recordingControl();
      const schedules: ClampSchedule[] = [];
      const releases: string[] = [];
      const schedule: ScheduleState = {
        state: 'paced',
        catchUps: 1,
        phaseStartMonotonicMs: Number(process.hrtime.bigint()) / 1e6 - 300,
        phaseStartAckedBytes: 2000,
        phaseStartRetransmits: 1,
        phaseStartSegmentsOut: 30,
        phaseStartSrttUs: 40_000,
        floorMs: 0,
        catchingUpMs: 45,
        clampPackets: null,
        cwndPackets: null,
        maxLagMs: 52,
        heldMonotonicMs: 0,
      };
      const clamp = {
        backend: 'bpf',
        fallbackReason: undefined,
        setSchedule: (_socket: unknown, s: ClampSchedule) => void schedules.push(s),
        release: (_socket: unknown, options?: { mode?: string }) => void releases.push(options?.mode ?? ''),
        state: () => ({ backend: 'bpf' as const, pacingRateBytesPerSec: 312_500, schedule }),
        takeClosedPhase: () => undefined,
      } as unknown as ClampBackend;
      const control = { ...recorded.control, clamp, raiseSendBuffer: (_socket: unknown, bytes: number) => 2 * bytes };
      const enforcement = kernelPacingEnforcer({
        headroom: 1.25,
        blockBytes: 65_536,
        floorPackets: 10,
        inKernel: true,
        sendBufferSeconds: 4,
      }).start({ socket: 3, control, socketError: (operation) => void recorded.errors.push(operation) });
      assert.ok(enforcement.kernel !== undefined);
      assert.equal(
        enforcement.kernel.handOver({
          baseBytes: 0,
          throttleOffsetBytes: 50_000,
          pieces: [{ endOffsetBytes: 300_000, rateBytesPerSec: 250_000 }],
          graceUs: 400_000,
        }),
        true,
      );
      assert.equal(schedules.length, 1);
      assert.equal(schedules[0]!.limit, 'pacing');
      assert.equal(schedules[0]!.gain, 1.25);
      enforcement.kernel.phaseWriting(250_000);
      enforcement.kernel.end();
      // No per-block rate from user space: only the end's lift of what the program set.
      assert.deepEqual(recorded.rates, [null]);
      assert.deepEqual(releases, ['gradual']);
      const report = enforcement.kernel.report();
      assert.equal(report.backend, 'kernel-pacing');
      assert.equal(pacingRecord(report).catchUps, 1);
      assert.equal(pacingRecord(report).throttledWriteBlocks, 0);
      assert.deepEqual(pacingRecord(report).kernelPhase, {
        started: true,
        heldAtFirstByte: false,
        floorMs: 0,
        catchingUpMs: 45,
        maxLagMs: 52,
        stateAtEnd: 'paced',
        sendBufferBytes: 500_000,
      });
      assert.match(report.reason, /in the kernel: paced at the end; 1 catch-up/);
      assert.equal(report.paceRateBps!.mean, 1.25 * 250_000 * 8);
      assert.deepEqual(recorded.errors, []);
    },
  );

  it('without the bpf backend the phase stays in user space', () => {
    const recorded = recordingControl();
    const control = { ...recorded.control, clamp: { backend: 'pacing-rate' } as unknown as ClampBackend };
    const enforcement = kernelPacingEnforcer({
      headroom: 1.25,
      blockBytes: 65_536,
      floorPackets: 10,
      inKernel: true,
      sendBufferSeconds: 4,
    }).start({ socket: 3, control, socketError: assert.fail });
    assert.equal(enforcement.kernel, undefined);
  });
});
