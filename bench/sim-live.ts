/**
 * Live mode capacity: how many concurrent simulated players one process sustains against a
 * running origin (a separate `trickle serve` process on loopback) with correct timing: every
 * session lasts its configured length, starts quickly and never stalls on an unconstrained
 * link. Also the time to first byte the players saw (p50, p99). Writes bench/results/sim-live.md.
 * `npm run bench:live` (needs media/demo).
 */
import { writeResults } from './results-file.js';
import { startTrickleServer } from './trickle-server.js';
import { aggregate, loadContent, percentile, runLive } from '@trickle/player-sim';

const sessionSeconds = 40;

async function main(): Promise<void> {
  const origin = await startTrickleServer(['--policy', 'bulk']);
  const url = origin.url;
  const rows: string[] = [];
  try {
    const content = await loadContent(`${url}/media/demo/manifest.mpd`);
    for (const players of [100, 250, 500, 750]) {
      const ttfbMs: number[] = [];
      const cpuStart = process.cpuUsage();
      const results = await runLive({
        content,
        abr: 'dynamic',
        sessions: players,
        concurrency: players,
        settings: { sessionSeconds, maxBufferSec: 12 },
        onTimeToFirstByte: (ms) => ttfbMs.push(ms),
      });
      const cpu = process.cpuUsage(cpuStart);
      const agg = aggregate(results);
      const late = results.filter((r) => Math.abs(r.sessionSec - sessionSeconds) > 0.5).length;
      const correct = agg.rebufferChance === 0 && late === 0 && agg.startupDelayMs.p95 < 2000;
      process.stderr.write(
        `${players} players: rebuffer chance ${agg.rebufferChance}%, late ${late}, startup ` +
          `p95 ${agg.startupDelayMs.p95.toFixed(0)} ms, TTFB ` +
          `p99 ${percentile(ttfbMs, 99).toFixed(1)} ms\n`,
      );
      rows.push(
        `| ${players} | ${correct ? 'yes' : 'no'} | ${agg.rebufferChance.toFixed(1)} % ` +
          `| ${late} | ${agg.startupDelayMs.p95.toFixed(0)} ` +
          `| ${percentile(ttfbMs, 50).toFixed(1)} / ${percentile(ttfbMs, 99).toFixed(1)} ` +
          `| ${(((cpu.user + cpu.system) / 1e6 / sessionSeconds) * 100).toFixed(0)} % ` +
          `| ${(agg.meanBitrateBps / 1e6).toFixed(2)} |`,
      );
    }
  } finally {
    await origin.stop();
  }
  const lines = [
    `Command: \`npm run bench:live\`. One player process against one \`trickle serve\` ` +
      `process (the demo), loopback, no link emulation; every player starts at once, ABR ` +
      `dynamic, ${sessionSeconds} s sessions, 12 s maximum buffer, its own keep-alive ` +
      `connection. "Correct timing": no rebuffer, every session within 0.5 s of its ` +
      `length, startup p95 < 2 s. Goal: at least 500 players.`,
    '',
    '| players | correct timing | rebuffer chance | sessions off by > 0.5 s | startup ' +
      'p95 ms | TTFB p50 / p99 ms | player process CPU | mean bitrate Mbit/s |',
    '| ---: | --- | ---: | ---: | ---: | --- | ---: | ---: |',
    ...rows,
    '',
  ];
  await writeResults('sim-live.md', 'Player simulator, live mode capacity', lines);
}

await main();
