/**
 * Model-mode speed: 10-minute sessions simulated per second on one core (one process, one
 * thread), per ABR rule and delivery policy, on the demo ladder over the shipped traces.
 * Writes bench/results/sim-speed.md. `npm run bench:sim` (needs media/demo: npx trickle media demo).
 */
import { join } from 'node:path';
import { writeResults } from './results-file.js';
import {
  loadContent,
  loopContent,
  lteLikeTrace,
  runModel,
  stepTrace,
  threeGLikeTrace,
  constantTrace,
} from '@trickle/player-sim';

const root = join(import.meta.dirname, '..', '..');
const sessions = 2000;
/** Sabre's speed as quoted from an earlier run (sessions per CPU-second), not measured here. */
const sabreQuotedPerSec = 4.2;

async function main(): Promise<void> {
  const content = loopContent(await loadContent(join(root, 'media', 'demo', 'manifest.mpd')), 600);
  const traces = [
    lteLikeTrace(1, 600_000),
    threeGLikeTrace(1, 600_000),
    stepTrace(8e6, 2e6, 60_000, 600_000),
    constantTrace(6e6, 600_000),
  ];
  const rows: string[] = [];
  for (const [abr, policy] of [
    ['throughput', 'bulk'],
    ['bola', 'trickle'],
    ['bba', 'app-pacing'],
    ['dynamic', 'cmcd'],
  ] as const) {
    await runModel({ content, traces, abr, policy, sessions: 200, seed: 9 });
    const startNs = process.hrtime.bigint();
    const cpuStart = process.cpuUsage();
    await runModel({ content, traces, abr, policy, sessions, seed: 1 });
    const wallSec = Number(process.hrtime.bigint() - startNs) / 1e9;
    const cpu = process.cpuUsage(cpuStart);
    const cpuSec = (cpu.user + cpu.system) / 1e6;
    process.stderr.write(`${abr}/${policy}: ${(sessions / wallSec).toFixed(0)} sessions/s\n`);
    rows.push(
      `| ${abr} | ${policy} | ${sessions} | ${wallSec.toFixed(2)} ` +
        `| ${(sessions / cpuSec).toFixed(0)} ` +
        `| ${(sessions / cpuSec / sabreQuotedPerSec).toFixed(0)}x |`,
    );
  }
  const lines = [
    `Command: \`npm run bench:sim\`. Content: the 120 s demo ladder repeated to 600 s ` +
      `(300 segments per session, 2 s each); traces: LTE-like, 3G-like, step 8->2 Mbit/s, ` +
      `constant 6 Mbit/s. One thread; CPU seconds measured with process.cpuUsage().`,
    `Anchor, quoted, not run by this benchmark: Sabre (Python) simulated ` +
      `about ${sabreQuotedPerSec} ten-minute sessions per second per core in an earlier ` +
      `run on this machine kind; the "vs Sabre" column divides by that quoted figure. The ` +
      `goal is at least 1,000.`,
    '',
    '| ABR rule | policy | sessions | wall s | sessions per CPU-second | vs Sabre (quoted) |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...rows,
    '',
  ];
  await writeResults('sim-speed.md', 'Player simulator, model-mode speed', lines);
}

await main();
