/**
 * The kernel pacer's decisions through a recording SocketControl port (the real port and kernel
 * are measured through the lab in e2e/test/policies): the rate asked for covers the previous
 * block's unsent rest, rates below the floor go to writes, failures leave the response unpaced.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { SocketControl, TcpInfo } from '@trickle/native';
import { KernelPacer } from '../../../src/delivery/policies/kernel-pacer.js';

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
      if (options.failPacing === true) throw Object.assign(new Error('setsockopt: Operation not permitted'), { code: 'EPERM' });
      recorded.rates.push(bytesPerSecond);
    },
    setCongestionControl: () => undefined,
    getCongestionControl: () => 'cubic',
    setNotsentLowat: (_socket, bytes) => void recorded.lowats.push(bytes),
    socketCookie: () => 1n,
    clamp: undefined as unknown as SocketControl['clamp'],
  };
  return Object.assign(recorded, { control });
}

function pacer(recorded: Recorded): KernelPacer {
  const env = { socket: 3, control: recorded.control, tcpInfo: () => recorded.control.tcpInfo(3), socketError: (operation: string) => void recorded.errors.push(operation) };
  return new KernelPacer(env, { blockBytes: 65_536, floorPackets: 10 });
}

describe('kernel pacer', () => {
  it('paces each block at its rate, blended with what the previous block left unsent', () => {
    const recorded = recordingControl();
    const kernel = pacer(recorded);
    kernel.startThrottling({ sizeBytes: 0, rateBytesPerSec: 0 });
    assert.deepEqual(recorded.lowats, [65_536]);
    assert.equal(kernel.pace(500_000, 65_536, 0), 0);
    kernel.written(65_536, 0);
    // 16 kB of the 500 kB/s block still unsent when a 200 kB/s block comes: both leave under one rate,
    // the one that gives each part its own time: (16 + 64) kB / (16/500 + 64/200) s.
    recorded.info = { ...recorded.info, notsentBytes: 16_384 };
    kernel.pace(200_000, 65_536, 100);
    kernel.written(65_536, 100);
    assert.equal(recorded.rates[0], 500_000);
    assert.equal(recorded.rates[1], Math.round((16_384 + 65_536) / (16_384 / 500_000 + 65_536 / 200_000)));
    kernel.end();
    assert.deepEqual(recorded.rates.slice(2), [null]);
    assert.deepEqual(recorded.lowats, [65_536, 0]);
    const report = kernel.report('test');
    assert.equal(report.backend, 'kernel-pacing');
    // What the blocks were aimed at (bytes over the time at each block's own rate), not the blend.
    assert.equal(report.paceRateBps!.mean, Math.round((2 * 65_536 * 8) / (65_536 / 500_000 + 65_536 / 200_000)));
    assert.equal(report.throttledWriteBlocks, 0);
  });

  it('counts startup bytes still unsent when throttling began toward the aim, at the first rate set', () => {
    const recorded = recordingControl();
    const kernel = pacer(recorded);
    kernel.startThrottling({ sizeBytes: 100_000, rateBytesPerSec: 900_000 });
    kernel.pace(300_000, 65_536, 0);
    kernel.written(65_536, 0);
    kernel.pace(600_000, 65_536, 200);
    kernel.written(65_536, 200);
    // They leave under the rate set for the first block, so that is what they were aimed at.
    const aimedBytesPerSec = (100_000 + 2 * 65_536) / ((100_000 + 65_536) / 300_000 + 65_536 / 600_000);
    assert.equal(kernel.report('test').paceRateBps!.mean, Math.round(aimedBytesPerSec * 8));
  });

  it('below the floor paces at the floor and spaces writes at the rate, from an empty bucket', () => {
    const recorded = recordingControl();
    const kernel = pacer(recorded);
    kernel.startThrottling({ sizeBytes: 0, rateBytesPerSec: 0 });
    // 25 kB/s is far below the floor: the block waits its own time (65,536 / 25,000 s) before it goes.
    assert.equal(kernel.pace(25_000, 65_536, 0), 2621.44);
    assert.equal(kernel.pace(25_000, 65_536, 2621.44), 0);
    kernel.written(65_536, 2621.44);
    assert.deepEqual(recorded.rates, [144_800]);
    // The next one waits another block time; back above the floor the kernel paces again, at once.
    assert.equal(kernel.pace(25_000, 65_536, 2621.44), 2621.44);
    assert.equal(kernel.pace(400_000, 65_536, 3000), 0);
    assert.deepEqual(recorded.rates, [144_800, 400_000]);
    const report = kernel.report('test');
    assert.equal(report.throttledWriteBlocks, 1);
    assert.match(report.reason, /1 block\(s\) below the floor of 10 packets per srtt/);
  });

  it('serves unpaced after a failed SO_MAX_PACING_RATE, and says so', () => {
    const recorded = recordingControl({ failPacing: true });
    const kernel = pacer(recorded);
    assert.equal(kernel.pace(500_000, 65_536, 0), 0);
    assert.equal(kernel.pace(500_000, 65_536, 10), 0);
    kernel.written(65_536, 10);
    kernel.end();
    assert.deepEqual(recorded.errors, ['setMaxPacingRate']);
    const report = kernel.report('test');
    assert.equal(report.backend, 'none');
    assert.match(report.fallbackReason!, /served unpaced/);
    assert.equal(report.paceRateBps, null);
  });
});
