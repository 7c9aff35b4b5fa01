/**
 * The QoE matrix: real dash.js and hls.js in Chromium and player-sim's live players through the
 * lab, on several links, under every delivery policy, CMCD off and on, several sessions a cell,
 * each session on a fresh lab of its own. Per cell what viewers saw (mean bitrate, switches,
 * startup, rebuffering chance and frequency, abandoned requests) and what the network saw
 * (throttling-phase retransmissions, an interactive probe's queueing delay), with intervals; the
 * issue's goals; the simulator's agreement with dash.js. Writes bench/results/qoe-matrix.md and
 * qoe-matrix.html (charts). Resumable: finished sessions are kept in --work.
 * `npx trickle bench qoe [--links ..] [--policies ..] [--players ..] [--cmcd off,on] [--sessions 10]` (root; needs
 * media/demo).
 */
import { mkdir } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { defaultDeliveryConfig, policyNames } from '@trickle/origin/rules';
import {
  matrixLinks,
  matrixPlayers,
  matrixReport,
  parseMatrixPolicy,
  requireLabPrivileges,
  runMatrix,
  writeMatrixHtml,
  writeMatrixSvgs,
  type MatrixPlayer,
  stageProgress,
  examples,
} from '@trickle/e2e';
import { runIfMain } from './entry.js';
import { numberOption } from './options.js';
import { resultsFileName, writeResults } from './results-file.js';

const list = (value: string) =>
  value
    .split(',')
    .map((v) => v.trim())
    .filter((v) => v !== '');

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench qoe')
    .description(
      'the QoE matrix: real players and simulated ones through the lab, per link, policy ' +
        'and CMCD, with intervals (root)',
    )
    .option('--links <names>', `links (${Object.keys(matrixLinks).join(', ')})`, Object.keys(matrixLinks).join(','))
    .option(
      '--policies <names>',
      'policies, each optionally with a congestion control (pacing@bbr)',
      policyNames.join(','),
    )
    .option('--players <names>', `players (${matrixPlayers.join(', ')})`, matrixPlayers.join(','))
    .option('--cmcd <modes>', 'off, on (on: only for policies whose rate rule reads CMCD)', 'off,on')
    .option('--sessions <n>', 'sessions per cell', '10')
    .option(
      '--seconds <n>',
      'session length (180 s or more judges a steady state: needs an asset longer than the start plus this)',
      '190',
    )
    .option('--starts <secs>', 'where players begin, media seconds: a cell per start (e.g. 0,60)', '0')
    .option(
      '--parallel <n>',
      'labs at once (startup and probe queueing are skewed when labs share cores: judge them with 1)',
      '3',
    )
    .option('--congestion-control <cc>', "the origin's congestion control (the paper's servers: cubic)", 'cubic')
    .option('--media <dir>', 'media directory holding the asset', 'media')
    .option(
      '--asset <name>',
      'the asset played (make it: npx trickle media demo --out media/demo-300 --duration 300)',
      'demo-300',
    )
    .option('--work <dir>', 'where finished sessions are kept (resume)', '.cache/bench-qoe')
    .option('--fresh', 'discard finished sessions in --work')
    .option('--report-only', 'write the results from the sessions already in --work, run nothing')
    .option('--results <name>', 'results file name in bench/results (and .html beside it)', 'qoe-matrix')
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle bench qoe',
        'sudo npx trickle bench qoe --links dsl-6mbit --policies ' +
          'bulk,trickle-abr,pacing@bbr --players dashjs,sim --sessions 8 --seconds 60 --asset demo',
        'sudo npx trickle bench qoe --links 3g-trace --policies bulk,trickle-abr --players dashjs --cmcd off ' +
          '--sessions 24 --results qoe-3g-long',
        'sudo npx trickle bench qoe --links dsl-6mbit --starts 60 --policies bulk,trickle-abr,trickle ' +
          '--players dashjs --cmcd off --sessions 8 --results qoe-mid-asset',
      ),
    )
    .parse(['node', 'bench', ...argv])
    .opts<{
      links: string;
      policies: string;
      players: string;
      cmcd: string;
      sessions: string;
      seconds: string;
      starts: string;
      parallel: string;
      congestionControl: string;
      media: string;
      asset: string;
      work: string;
      fresh?: boolean;
      reportOnly?: boolean;
      results: string;
    }>();
  resultsFileName(options.results);
  requireLabPrivileges();
  const players = list(options.players);
  for (const player of players)
    if (!(matrixPlayers as readonly string[]).includes(player))
      throw Object.assign(new Error(`--players: no player "${player}"; known: ${matrixPlayers.join(', ')}`), {
        code: 'E2E_ERR_OPTIONS',
      });
  const cmcd = list(options.cmcd);
  for (const mode of cmcd)
    if (mode !== 'off' && mode !== 'on')
      throw Object.assign(new Error(`--cmcd: "${mode}" is not off or on`), { code: 'E2E_ERR_OPTIONS' });
  const matrix = {
    links: list(options.links),
    policies: list(options.policies).map(parseMatrixPolicy),
    players: players as MatrixPlayer[],
    cmcd: cmcd as ('off' | 'on')[],
    sessions: numberOption('--sessions', options.sessions, 'positive-integer'),
    sessionSeconds: numberOption('--seconds', options.seconds, 'positive'),
    starts: list(options.starts).map((start) => numberOption('--starts', start, 'non-negative')),
    congestionControl: options.congestionControl,
    probeIntervalMs: 100,
    asset: options.asset,
    media: options.media,
  };
  const parallel = numberOption('--parallel', options.parallel, 'positive-integer');
  const work = resolve(options.work);
  await mkdir(work, { recursive: true });
  const progress = stageProgress();
  const data = await runMatrix({
    ...matrix,
    work,
    parallel,
    fresh: options.fresh === true,
    reportOnly: options.reportOnly === true,
    onProgress: (p) => {
      if (p.stage === 'failed') process.stderr.write(`\n${p.key}: ${p.error}\n`);
      progress.update('sessions', p.done / p.total);
    },
  });
  progress.stop();
  const commandLine = `npx trickle bench qoe ${argv.join(' ')}`.trim();
  const report = matrixReport(data, {
    defaultPolicy: defaultDeliveryConfig.policy,
    sessionSeconds: matrix.sessionSeconds,
    commandLine,
  });
  const { harnessRetries, retriesUnrecorded } = report.conditions;
  await writeResults(`${options.results}.md`, 'QoE matrix: what pacing costs viewers, and what it saves the network', [
    `Links: ${matrix.links.join(', ')}; ` +
      `policies: ${matrix.policies.map((p) => p.label).join(', ')} (congestion ` +
      `control ${matrix.congestionControl} unless named); ` +
      `players: ${matrix.players.join(', ')}; ` +
      `CMCD: ${matrix.cmcd.join(', ')}; players begin at ${matrix.starts.map((s) => `${s} s`).join(', ')}; ` +
      `${matrix.sessions} sessions ` +
      `of ${matrix.sessionSeconds} s per cell; ${harnessRetries} harness retries` +
      `${retriesUnrecorded > 0 ? ` (${retriesUnrecorded} sessions did not record theirs)` : ''}. Charts: ` +
      `bench/results/${options.results}.html.`,
    ...report.markdown,
  ]);
  await writeMatrixSvgs(join(import.meta.dirname, '..', '..', 'bench', 'results'), options.results, report);
  await writeMatrixHtml(
    join(import.meta.dirname, '..', '..', 'bench', 'results', `${options.results}.html`),
    report,
    `${matrix.sessions} sessions of ${matrix.sessionSeconds} s per cell, ${new Date().toISOString().slice(0, 10)}`,
  );
}

await runIfMain(import.meta.url, main);
