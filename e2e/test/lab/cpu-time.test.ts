import assert from 'node:assert/strict';
import { cpus } from 'node:os';
import { describe, it } from 'node:test';
import { machineCpuSeconds, processCpuSeconds } from '../../src/lab/cpu-time.js';

const spin = (ms: number) => {
  const until = Date.now() + ms;
  while (Date.now() < until);
};

describe('CPU time from /proc', () => {
  it("reads this process's user + system seconds as getrusage(2) counts them", () => {
    const before = processCpuSeconds(process.pid);
    const usageBefore = process.cpuUsage();
    // 300 ms of CPU, not of wall time: other tests may share the cores.
    while (Object.values(process.cpuUsage(usageBefore)).reduce((sum, us) => sum + us, 0) < 300_000) spin(10);
    const used = processCpuSeconds(process.pid) - before;
    const usage = process.cpuUsage(usageBefore);
    const rusageSec = (usage.user + usage.system) / 1e6;
    // /proc reports in clock ticks (10 ms): a tick or two apart at most.
    assert.ok(Math.abs(used - rusageSec) <= 0.03, `/proc ${used} s, getrusage ${rusageSec} s`);
  });

  it(
    "reads the machine's time by kind in seconds: the kinds make the total, which grows " +
      'by about the wall time on every core',
    () => {
      const before = machineCpuSeconds();
      const startedMs = performance.now();
      spin(300);
      const after = machineCpuSeconds();
      const wallSec = (performance.now() - startedMs) / 1000;
      const kinds =
        after.user + after.nice + after.system + after.idle + after.iowait + after.irq + after.softirq + after.steal;
      assert.ok(Math.abs(kinds - after.total) < 1e-6);
      const grew = after.total - before.total;
      const cores = cpus().length;
      assert.ok(
        grew >= (wallSec - 0.1) * cores && grew <= (wallSec + 0.1) * cores,
        `${grew} s over ${wallSec} s of ${cores} cores`,
      );
      assert.ok(after.user + after.system - (before.user + before.system) >= 0.2, 'the spin is busy time');
    },
  );
});
