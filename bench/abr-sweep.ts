/**
 * The ABR-aware rate against the ABR families players ship (issue 37's goal): player-sim's model
 * mode plays the demo ladder (looped to `--minutes`) under bulk, trickle-abr, sammy and trickle,
 * with every throughput family at its own margins and at safety factors 0.7-0.95, and the buffer
 * rules (BOLA, BBA, dash.js's dynamic), on dsl-6mbit, fast-20mbit and the 3G-like trace, players
 * sending no CMCD (the worse case for the origin: it must tell the startup from the presentation's
 * first seconds). Each paced policy's mean bitrate over bulk's with a 95 % bootstrap interval, its
 * rebuffering beside bulk's, the worst case named; a heatmap in bench/results/abr-sweep.html.
 * `npx trickle bench abr-sweep [--sessions 30 --minutes 4 --cmcd]` (needs media/demo:
 * npx trickle media demo); writes bench/results/abr-sweep.md (abr-sweep-cmcd.md with --cmcd). No root, no lab: seconds of CPU.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import { bootstrapComparison, examples, renderReportPage, wilsonInterval } from '@trickle/e2e';
import {
  abrRules,
  constantTrace,
  createThroughputRule,
  loadContent,
  loopContent,
  runModel,
  threeGLikeTrace,
  throughputFamilies,
  withSafetyFactor,
  type AbrRule,
  type SessionResult,
  type Trace,
} from '@trickle/player-sim';
import { BenchError } from './errors.js';
import { numberOption } from './options.js';
import { runIfMain } from './entry.js';
import { writeResults } from './results-file.js';

const root = join(import.meta.dirname, '..', '..');
const safetyFactors = [0.7, 0.8, 0.9, 0.95] as const;
const pacedPolicies = ['trickle-abr', 'sammy', 'trickle'] as const;
/** The goal: a paced policy keeps this share of bulk's mean bitrate. */
const bitrateGoal = 0.95;
/** Fewer sessions than this per cell and an interval is "too few". */
const minimumSessions = 10;

interface Link {
  readonly name: string;
  readonly trace: (durationMs: number, seed: number) => Trace;
  readonly rttMs: number;
}

/** The lab's profiles as traces (player-sim has no buffer: the links' RTT and rate are what it models). */
const links: readonly Link[] = [
  { name: 'dsl-6mbit', trace: (durationMs) => constantTrace(6e6, durationMs), rttMs: 40 },
  { name: 'fast-20mbit', trace: (durationMs) => constantTrace(20e6, durationMs), rttMs: 20 },
  { name: '3g-like', trace: (durationMs, seed) => threeGLikeTrace(seed, durationMs), rttMs: 150 },
];

interface Player {
  readonly name: string;
  readonly family: string;
  readonly rule: () => AbrRule;
}

function players(): Player[] {
  const list: Player[] = [];
  for (const [family, options] of Object.entries(throughputFamilies)) {
    list.push({ name: `${family} (own margins)`, family, rule: () => createThroughputRule(options) });
    for (const factor of safetyFactors)
      list.push({
        name: `${family} x ${factor}`,
        family,
        rule: () => createThroughputRule(withSafetyFactor(options, factor)),
      });
  }
  for (const name of ['bola', 'bba', 'dynamic'])
    list.push({ name, family: name === 'dynamic' ? 'dash.js' : 'buffer-based', rule: abrRules[name]! });
  return list;
}

const meanBitrate = (sessions: readonly SessionResult[]) =>
  sessions.reduce((sum, s) => sum + s.meanBitrateBps, 0) / sessions.length;
const rebuffered = (sessions: readonly SessionResult[]) => sessions.filter((s) => s.rebuffers.length > 0).length;

interface Cell {
  readonly link: string;
  readonly player: string;
  readonly policy: string;
  readonly ratio: number;
  readonly low: number;
  readonly high: number;
  readonly bitrateBps: number;
  readonly bulkBitrateBps: number;
  readonly rebufferPercent: number;
  readonly bulkRebufferPercent: number;
  readonly rebufferText: string;
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench abr-sweep')
    .option('--sessions <n>', 'sessions per player, link and policy', '30')
    .option('--minutes <n>', 'playback per session (the demo ladder looped)', '4')
    .option('--cmcd', 'the simulated players send CMCD (their buffer and startup state)')
    .addHelpText('after', examples('npx trickle bench abr-sweep', 'npx trickle bench abr-sweep --sessions 50 --cmcd'))
    .parse(['node', 'bench', ...argv])
    .opts<{ sessions: string; minutes: string; cmcd?: boolean }>();
  const sessions = numberOption('--sessions', options.sessions, 'positive-integer');
  const minutes = numberOption('--minutes', options.minutes, 'positive');
  const manifest = join(root, 'media', 'demo', 'manifest.mpd');
  const content = await loadContent(manifest).catch(() => {
    throw new BenchError('BENCH_ERR_MEDIA', `no demo media at ${manifest}: run \`npx trickle media demo\` first`);
  });
  const looped = loopContent(content, minutes * 60);
  const durationMs = (minutes * 60 + 120) * 1000;
  const list = players();
  const cells: Cell[] = [];
  const total = links.length * list.length;
  let done = 0;
  for (const link of links) {
    const traces = Array.from({ length: 8 }, (_, i) => link.trace(durationMs, i + 1));
    for (const player of list) {
      process.stderr.write(`[${++done}/${total}] ${link.name}: ${player.name}\n`);
      const run = (policy: string) =>
        runModel({
          content: looped,
          traces,
          abr: player.rule,
          policy,
          sessions,
          seed: 37,
          rttMs: link.rttMs,
          cmcd: options.cmcd === true,
        });
      const bulk = await run('bulk');
      const bulkBitrateBps = meanBitrate(bulk);
      const bulkChance = wilsonInterval(rebuffered(bulk), bulk.length);
      for (const policy of pacedPolicies) {
        const paced = await run(policy);
        const ratio = bootstrapComparison(paced, bulk, (a, b) => meanBitrate(a) / meanBitrate(b), {
          resamples: 2000,
          seed: 41,
        });
        const chance = wilsonInterval(rebuffered(paced), paced.length);
        cells.push({
          link: link.name,
          player: player.name,
          policy,
          ratio: ratio.value,
          low: ratio.low,
          high: ratio.high,
          bitrateBps: meanBitrate(paced),
          bulkBitrateBps,
          rebufferPercent: 100 * chance.value,
          bulkRebufferPercent: 100 * bulkChance.value,
          rebufferText:
            `${(100 * chance.value).toFixed(0)} % [${(100 * chance.low).toFixed(0)}, ${(100 * chance.high).toFixed(0)}] ` +
            `vs ${(100 * bulkChance.value).toFixed(0)} % [${(100 * bulkChance.low).toFixed(0)}, ${(100 * bulkChance.high).toFixed(0)}]`,
        });
      }
    }
  }
  const intervalText = (cell: Cell) =>
    sessions < minimumSessions
      ? `${cell.ratio.toFixed(3)} (too few sessions for an interval)`
      : `${cell.ratio.toFixed(3)} [${cell.low.toFixed(3)}, ${cell.high.toFixed(3)}]`;
  const verdict = (cell: Cell) =>
    sessions < minimumSessions
      ? 'too few'
      : cell.high < bitrateGoal
        ? 'missed'
        : cell.ratio >= bitrateGoal
          ? 'met'
          : 'undecided';
  const lines: string[] = [
    `Command: \`npx trickle bench abr-sweep --sessions ${sessions} --minutes ${minutes}` +
      `${options.cmcd === true ? ' --cmcd' : ''}\`. player-sim's model mode (simulated time, deterministic for a seed): ` +
      `the demo ladder looped to ${minutes} min per session, ${sessions} sessions per player, link and policy ` +
      `(8 traces per link, a seeded random offset each; on a constant link sessions differ only where the ` +
      `trace's offset reaches them, so their interval can be narrow by construction), players ` +
      `${options.cmcd === true ? 'sending' : 'not sending'} CMCD. Players: each throughput family at its ` +
      `documented margins and at safety factors ${safetyFactors.join(', ')} both ways (docs/simulator.md), ` +
      `and the buffer rules. Ratio: the policy's mean bitrate over bulk's, 95 % bootstrap interval ` +
      `(from ${minimumSessions} sessions); goal >= ${bitrateGoal}: met when the point is at or above it, ` +
      `missed when the whole interval is below, else undecided. Rebuffering chance with Wilson intervals, ` +
      `the policy's against bulk's.`,
    '',
  ];
  for (const policy of pacedPolicies) {
    const ofPolicy = cells.filter((cell) => cell.policy === policy);
    const worst = ofPolicy.reduce((a, b) => (b.ratio < a.ratio ? b : a));
    const missed = ofPolicy.filter((cell) => verdict(cell) === 'missed');
    lines.push(
      `## ${policy} / bulk`,
      '',
      `Worst case: **${worst.player} on ${worst.link}, ${intervalText(worst)}**; ` +
        `${missed.length} of ${ofPolicy.length} cells miss the goal outright.`,
      '',
      '| link | player | mean bitrate Mbit/s (bulk) | ratio | goal | rebuffering chance (bulk) |',
      '| --- | --- | ---: | ---: | --- | ---: |',
      ...ofPolicy.map(
        (cell) =>
          `| ${cell.link} | ${cell.player} | ${(cell.bitrateBps / 1e6).toFixed(2)} (${(cell.bulkBitrateBps / 1e6).toFixed(2)}) ` +
          `| ${intervalText(cell)} | ${verdict(cell)} | ${cell.rebufferText} |`,
      ),
      '',
    );
  }
  const baseName = options.cmcd === true ? 'abr-sweep-cmcd' : 'abr-sweep';
  await writeResults(`${baseName}.md`, 'The ABR-aware rate against the ABR families players ship (player-sim)', lines);
  const html = await renderReportPage({
    title: 'ABR sweep: mean bitrate over bulk',
    subtitle: `player-sim model mode, ${sessions} sessions per cell, ${minutes} min each, CMCD ${options.cmcd === true ? 'on' : 'off'}`,
    sections: pacedPolicies.map((policy) => ({
      heading: `${policy} / bulk`,
      chart: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        data: { values: cells.filter((cell) => cell.policy === policy) },
        mark: 'rect',
        encoding: {
          x: { field: 'link', type: 'nominal', title: 'link' },
          y: { field: 'player', type: 'nominal', title: 'player (family x safety factor)', sort: null },
          color: {
            field: 'ratio',
            type: 'quantitative',
            title: 'bitrate / bulk',
            scale: { domain: [0.6, 1.05], scheme: 'redyellowgreen' },
          },
          tooltip: [
            { field: 'player' },
            { field: 'link' },
            { field: 'ratio', format: '.3f' },
            { field: 'low', format: '.3f' },
            { field: 'high', format: '.3f' },
            { field: 'rebufferText', title: 'rebuffering (bulk)' },
          ],
        },
      },
    })),
  });
  await writeFile(join(root, 'bench', 'results', `${baseName}.html`), html);
}

await runIfMain(import.meta.url, main);
