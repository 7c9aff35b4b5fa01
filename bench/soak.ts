/**
 * Soak: the origin (`trickle serve`, trickle policy) on the lab's origin side with `players` live
 * simulated players on the player side for `minutes`, each starting a new session (and connection)
 * when the last one ends. Every few seconds the origin's /metrics are sampled: resident memory,
 * event-loop delay, open descriptors, active paced flows, socket errors. Goal: RSS growth < 5 %
 * after the warm-up (the first 10 % of the run), 0 errors. Writes bench/results/soak.md and
 * bench/results/soak.html (Vega-Lite charts of RSS and event-loop delay over time).
 * `npx trickle bench soak [--minutes 60] [--players 1000] [--link lan-1gbit]` (root; needs media/demo).
 */
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { Command } from 'commander';
import {
  assetPath,
  labDown,
  labUp,
  profileLink,
  renderReportPage,
  requireLabPrivileges,
  startLabOrigin,
  type Lab,
  stageProgress,
  examples,
} from '@trickle/e2e';
import { runIfMain } from './entry.js';
import { numberOption } from './options.js';
import { writeResults } from './results-file.js';
import { metricTotal } from './prometheus-text.js';

interface Sample {
  readonly minute: number;
  readonly rssMB: number;
  /** Event-loop delay p99 and max over the sampling window, ms (prom-client's timer, 10 ms resolution, subtracted). */
  readonly loopDelayP99Ms: number;
  readonly loopDelayMaxMs: number;
  readonly openFds: number;
  readonly activePacedFlows: number;
  readonly socketErrors: number;
  readonly sessions: number;
  readonly playerErrors: number;
}

const eventLoopResolutionMs = 10;

async function sampleOrigin(lab: Lab, url: string): Promise<Omit<Sample, 'minute' | 'sessions' | 'playerErrors'>> {
  const text = await lab.output('player', ['curl', '-sf', '--max-time', '5', url]);
  return {
    rssMB: metricTotal(text, 'process_resident_memory_bytes') / 1e6,
    loopDelayP99Ms: Math.max(0, metricTotal(text, 'nodejs_eventloop_lag_p99_seconds') * 1000 - eventLoopResolutionMs),
    loopDelayMaxMs: Math.max(0, metricTotal(text, 'nodejs_eventloop_lag_max_seconds') * 1000 - eventLoopResolutionMs),
    openFds: metricTotal(text, 'process_open_fds'),
    activePacedFlows: metricTotal(text, 'trickle_active_paced_flows'),
    socketErrors: metricTotal(text, 'trickle_socket_errors_total') || 0,
  };
}

const mean = (values: readonly number[]) => values.reduce((a, b) => a + b, 0) / values.length;

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench soak')
    .option('--minutes <n>', 'soak length', '60')
    .option('--players <n>', 'concurrent simulated players', '1000')
    .option('--link <profile>', 'lab link profile', 'lan-1gbit')
    .option('--policy <policy>', "the origin's delivery policy", 'trickle')
    .option('--session-seconds <n>', 'length of each player session', '120')
    .option('--sample-seconds <n>', 'metrics sampling interval', '5')
    .option('--media <dir>', 'media directory with the demo asset', 'media')
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle bench soak --minutes 10 --players 200',
        'sudo npx trickle bench soak --minutes 60 --players 1000 --link lan-1gbit',
      ),
    )
    .parse(['node', 'bench', ...argv])
    .opts<{
      minutes: string;
      players: string;
      link: string;
      policy: string;
      sessionSeconds: string;
      sampleSeconds: string;
      media: string;
    }>();
  const minutes = numberOption('--minutes', options.minutes, 'positive');
  const players = numberOption('--players', options.players, 'positive-integer');
  const sessionSeconds = numberOption('--session-seconds', options.sessionSeconds, 'positive');
  const sampleSeconds = numberOption('--sample-seconds', options.sampleSeconds, 'positive');
  requireLabPrivileges();
  const durationMs = minutes * 60_000;
  const lab = await labUp('soak', profileLink(options.link));
  const progress = stageProgress();
  const samples: Sample[] = [];
  const totals = { sessions: 0, errors: 0, rebuffers: 0, lastError: '' };
  try {
    const origin = await startLabOrigin(lab, {
      media: resolve(options.media),
      logLevel: 'warn',
      delivery: { policy: options.policy },
    });
    const originUrl = `http://${lab.address('origin')}:8080`;
    try {
      const plan = {
        manifestUrl: `${originUrl}${assetPath('demo', 'dashjs')}`,
        players,
        durationMs,
        sessionSeconds,
      };
      const child = lab.spawn(
        'player',
        [process.execPath, join(import.meta.dirname, 'soak-players.js'), JSON.stringify(plan)],
        { stdio: ['ignore', 'pipe', 'inherit'] },
      );
      createInterface({ input: child.stdout! }).on('line', (line) =>
        Object.assign(totals, JSON.parse(line) as typeof totals),
      );
      const exited = once(child, 'exit');
      const startMs = performance.now();
      let finished = false;
      void exited.then(() => (finished = true));
      while (!finished) {
        await Promise.race([new Promise((r) => setTimeout(r, sampleSeconds * 1000)), exited]);
        const elapsedMs = performance.now() - startMs;
        samples.push({
          minute: elapsedMs / 60_000,
          ...(await sampleOrigin(lab, `${originUrl}/metrics`)),
          sessions: totals.sessions,
          playerErrors: totals.errors,
        });
        progress.update('soak', Math.min(1, elapsedMs / durationMs));
      }
      const [code] = (await exited) as [number | null];
      if (code !== 0) throw new Error(`the soak players exited with ${code}`);
    } finally {
      origin.kill('SIGTERM');
      await once(origin, 'exit');
    }
  } finally {
    progress.stop();
    await labDown('soak');
  }
  const warmUp = samples.filter((s) => s.minute >= minutes * 0.1);
  const window = Math.max(1, Math.floor(warmUp.length / 10));
  const rssAfterWarmUpMB = mean(warmUp.slice(0, window).map((s) => s.rssMB));
  const rssEndMB = mean(warmUp.slice(-window).map((s) => s.rssMB));
  const growthPercent = ((rssEndMB - rssAfterWarmUpMB) / rssAfterWarmUpMB) * 100;
  const socketErrors = samples.at(-1)?.socketErrors ?? 0;
  const met = growthPercent < 5 && totals.errors === 0 && socketErrors === 0;
  const maxLoopP99 = Math.max(...samples.map((s) => s.loopDelayP99Ms));
  await writeResults('soak.md', 'Soak: the origin under live players for a long run', [
    `Command: \`npx trickle bench soak --minutes ${minutes} --players ${players} ` +
      `--link ${options.link}\` (root). The origin (\`trickle serve ` +
      `--policy ${options.policy}\`) on the lab's origin side; ${players} player-sim live ` +
      `players (dynamic ABR, CMCD, 30 s buffer) on the player side, each starting a ` +
      `new ${options.sessionSeconds} s session on a new connection when the last ends; ` +
      `/metrics sampled every ${options.sampleSeconds} s. Warm-up: the first 10 % of the ` +
      `run. Charts: bench/results/soak.html.`,
    '',
    '| players | minutes | sessions | player errors | origin socket errors | RSS after ' +
      'warm-up MB | RSS at end MB | growth | event-loop delay p99 (max over samples) ms | ' +
      'goal (growth < 5 %, 0 errors) |',
    '| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |',
    `| ${players} | ${minutes} | ${totals.sessions} ` +
      `| ${totals.errors}${totals.errors > 0 ? ` (last: ${totals.lastError})` : ''} ` +
      `| ${socketErrors} | ${rssAfterWarmUpMB.toFixed(1)} | ${rssEndMB.toFixed(1)} ` +
      `| ${growthPercent.toFixed(1)} % | ${maxLoopP99.toFixed(1)} ` +
      `| ${met ? 'met' : 'missed'} |`,
    '',
  ]);
  const line = (field: keyof Sample, title: string, axis: string) => ({
    heading: title,
    chart: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: 700,
      height: 220,
      data: { values: samples },
      mark: { type: 'line', point: false },
      encoding: {
        x: { field: 'minute', type: 'quantitative', title: 'minutes' },
        y: { field, type: 'quantitative', title: axis },
      },
    },
  });
  const html = await renderReportPage({
    title: 'Soak',
    subtitle:
      `${players} players, ${minutes} min, link ${options.link}, ` +
      `policy ${options.policy}: RSS ${rssAfterWarmUpMB.toFixed(1)} ` +
      `-> ${rssEndMB.toFixed(1)} MB after warm-up (${growthPercent.toFixed(1)} ` +
      `%), ${totals.sessions} sessions, ${totals.errors} player errors.`,
    sections: [
      line('rssMB', 'Resident memory', 'RSS (MB)'),
      line('loopDelayP99Ms', 'Event-loop delay, p99 per sample', 'ms'),
      line('activePacedFlows', 'Active paced flows', 'flows'),
      line('openFds', 'Open file descriptors', 'descriptors'),
    ],
  });
  await writeFile(join(import.meta.dirname, '..', '..', 'bench', 'results', 'soak.html'), html);
}

await runIfMain(import.meta.url, main);
