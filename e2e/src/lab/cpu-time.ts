/**
 * CPU time from /proc, the one reader for the lab and the benchmarks: a process's user + system
 * seconds, and the whole machine's time by kind (each caller sums the kinds it calls busy).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** The kernel's clock tick (USER_HZ), in which /proc reports CPU time. */
const clockTicksPerSec = Number(spawnSync('getconf', ['CLK_TCK']).stdout?.toString().trim()) || 100;

/** User + system CPU seconds a process has used (/proc/<pid>/stat). */
export function processCpuSeconds(pid: number): number {
  // Fields after "pid (comm) ": utime and stime are stat's 14th and 15th, the 12th and 13th here.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicksPerSec;
}

/** The whole machine's CPU seconds since boot by kind, all cores (/proc/stat's first line). */
export interface MachineCpuSeconds {
  readonly user: number;
  readonly nice: number;
  readonly system: number;
  readonly idle: number;
  readonly iowait: number;
  readonly irq: number;
  readonly softirq: number;
  readonly steal: number;
  /** Every kind together (guest time is inside user and nice already, so it is not added). */
  readonly total: number;
}

export function machineCpuSeconds(): MachineCpuSeconds {
  const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = readFileSync(
    '/proc/stat',
    'utf8',
  )
    .split('\n', 1)[0]!
    .trim()
    .split(/\s+/)
    .slice(1)
    .map((ticks) => Number(ticks) / clockTicksPerSec);
  return {
    user,
    nice,
    system,
    idle,
    iowait,
    irq,
    softirq,
    steal,
    total: user + nice + system + idle + iowait + irq + softirq + steal,
  };
}
