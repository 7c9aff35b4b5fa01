/**
 * The population lab's accuracy per link at the population's load: in rounds, a share of the
 * viewers gets a datagram flood at 1.1x its link's rate while another share pings through its idle
 * link (RTT under the others' load; the rate each flooded queue sends; every flood on its own
 * link), then a burst into each viewer's buffer whose drops must be at its own queue, and the
 * CPU of the delay line and of the machine. Writes bench/results/population-accuracy.md and .html.
 * `npx trickle bench population [--population dc1-like,dc2-like] [--viewers 100] [--rounds 2,5]` (root).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Command } from 'commander';
import {
  drawLinks,
  labDown,
  linkDistributions,
  linkPopulation,
  measurePopulationAccuracy,
  populationUp,
  renderReportPage,
  type LinkAccuracy,
  type PopulationAccuracy,
  examples,
} from '@trickle/e2e';
import { runIfMain } from './entry.js';
import { numberOption } from './options.js';
import { writeResults } from './results-file.js';

interface Flags {
  population: string;
  rounds: string;
  viewers: string;
  seed: string;
  seconds: string;
}

interface Measured {
  readonly distribution: string;
  readonly accuracy: PopulationAccuracy;
  readonly setupMs: number;
}

const rttErrorMs = (l: LinkAccuracy) => l.measuredRttMs - l.rttMs;
const rateError = (l: LinkAccuracy) => l.linkRateBps / l.rateBps - 1;
const ownLink = (l: LinkAccuracy) => Math.abs(l.queueFramesPerReceived - 1) <= 0.002;
const burstRight = (l: LinkAccuracy) =>
  l.burst.dropsElsewhere === 0 &&
  l.burst.dropsHere === l.burst.sent - l.burst.received &&
  l.burst.received >= l.burst.fits - 2 &&
  l.burst.received <= l.burst.atMost + 2;

function share(links: readonly LinkAccuracy[], predicate: (l: LinkAccuracy) => boolean): string {
  if (links.length === 0) return 'none';
  const n = links.filter(predicate).length;
  return `${n}/${links.length} (${((n / links.length) * 100).toFixed(0)} %)`;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

/** Median / p95 / max of the finite values, and how many had none (no echo came back). */
function spread(values: readonly number[], digits: number, unit: string): string {
  const finite = values.filter(Number.isFinite);
  const missing = values.length - finite.length;
  const text =
    finite.length === 0
      ? '-'
      : `${quantile(finite, 0.5).toFixed(digits)} ` +
        `/ ${quantile(finite, 0.95).toFixed(digits)} ` +
        `/ ${Math.max(...finite).toFixed(digits)} ${unit}`;
  return missing === 0 ? text : `${text} (${missing} links: no echo back)`;
}

export async function main(argv: readonly string[]): Promise<void> {
  const flags = new Command('trickle bench population')
    .option(
      '--population <names>',
      `distributions, comma-separated: ${Object.keys(linkDistributions).join(', ')}`,
      'dc1-like,dc2-like',
    )
    .option('--viewers <n>', 'viewers (links) per population', '100')
    .option(
      '--rounds <list>',
      'loads, comma-separated: in R rounds, 1/R of the viewers is flooded at a time (2: half of them)',
      '2,5',
    )
    .option('--seed <n>', 'seed of the draws', '1')
    .option('--seconds <n>', "each round's floods (the rate window starts after a quarter)", '8')
    .addHelpText(
      'after',
      examples(
        'sudo npx trickle bench population',
        'sudo npx trickle bench population --population dc1-like --viewers 200 --rounds 10',
      ),
    )
    .parse(['node', 'bench', ...argv])
    .opts<Flags>();
  const viewers = numberOption('--viewers', flags.viewers, 'positive-integer');
  const seed = numberOption('--seed', flags.seed, 'non-negative-integer');
  const durationMs = numberOption('--seconds', flags.seconds, 'positive') * 1000;
  const loads = flags.rounds.split(',').map((rounds) => numberOption('--rounds', rounds, 'positive-integer'));
  const measured: Measured[] = [];
  for (const distribution of flags.population.split(',')) {
    for (const rounds of loads) {
      const population = linkPopulation(drawLinks(distribution, viewers, seed), { source: distribution, seed });
      process.stderr.write(
        `${distribution}: ${viewers} viewers, ${Math.round(viewers / rounds)} loaded at a time ...\n`,
      );
      const startedMs = performance.now();
      const lab = await populationUp('bpop', population);
      const setupMs = performance.now() - startedMs;
      try {
        const accuracy = await measurePopulationAccuracy(lab, {
          rounds,
          durationMs,
          fromMs: Math.round(durationMs / 4),
          onProgress: (what) => process.stderr.write(`  ${distribution}: ${what}\n`),
        });
        measured.push({ distribution, accuracy, setupMs });
      } finally {
        await labDown('bpop');
      }
    }
  }
  const rows = measured.map(({ distribution, accuracy, setupMs }) => {
    const links = accuracy.links;
    const rttErrors = links.map((l) => Math.abs(rttErrorMs(l)));
    const rateErrors = links.map((l) => Math.abs(rateError(l)) * 100);
    const cells = [
      distribution,
      String(links.length),
      String(accuracy.loadedViewers),
      `${(setupMs / 1000).toFixed(1)} s`,
      share(links, (l) => Math.abs(rttErrorMs(l)) <= 1),
      spread(rttErrors, 2, 'ms'),
      share(links, (l) => Math.abs(rateError(l)) <= 0.03),
      spread(rateErrors, 2, '%'),
      share(links, (l) => l.backlogged),
      share(links, ownLink),
      share(links, burstRight),
      `${(accuracy.loadedRateBps / 1e6).toFixed(0)} Mbit/s`,
      `${(accuracy.delaylineCoreShare * 100).toFixed(1)} %`,
      `${(accuracy.machineBusyShare * 100).toFixed(0)} %`,
    ];
    return `| ${cells.join(' | ')} |`;
  });
  const command =
    `npx trickle bench population --population ${flags.population} --viewers ${viewers} ` +
    `--rounds ${flags.rounds} --seed ${seed} --seconds ${flags.seconds}`;
  await writeResults(
    'population-accuracy.md',
    "Population lab accuracy: every viewer its own link, at the population's load",
    [
      `Command: \`${command}\` (root). Per link table and charts: bench/results/population-accuracy.html.`,
      '',
      'Each viewer\'s link is measured in rounds: in each, 1/R of the population ("loaded ' +
        'at a time") gets a datagram flood at 1.1x its own link\'s rate',
      'while another 1/R pings, until every viewer has been flooded once and has pinged ' +
        'once. RTT: the mean of 20 pings less the 3 fastest and the 3 slowest, from the ' +
        "viewer's own",
      'address through its idle link while the others are loaded (what the delay line and ' +
        "the router add under load). Rate: what the viewer's",
      'own queue sent over the window under its flood (frames with headers, from its ' +
        'class counters) against the link\'s rate; "busy": its queue',
      "held a backlog at both ends of the window (a slow link's flood fills its queue " +
        'slowly). Own link: the frames its queue sent equal the datagrams it received at its ' +
        'own address (±0.2 %). Burst:',
      '2 x (buffer + bucket) / 1514 + 20 datagrams to a viewer, five viewers at a time; ' +
        'right when every drop is at its own queue, none at the',
      'queues of viewers outside its five, and what got through is at least what its ' +
        'buffer and bucket hold and at most that and what the link',
      "sent while the burst was being sent. Load carried: what the loaded viewers' queues " +
        "sent together. CPU: the delay line's share of one",
      'core (its sends carry each frame through the queues and veths to the receiving ' +
        "stack) and the whole machine's (origin, viewers, lab).",
      '',
      '| population | viewers | loaded at a time | set-up | RTT within ±1 ms | RTT error ' +
        'median / p95 / max | rate within ±3 % | rate error median / p95 / max | queue busy ' +
        'at both ends | flood on its own link | burst drops at its own queue | load carried ' +
        '| delay line CPU (one core) | machine busy (2 cores) |',
      '| --- | ---: | ---: | ---: | --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |',
      ...rows,
      '',
    ],
  );
  const points = measured.flatMap(({ distribution, accuracy }) =>
    accuracy.links.map((l) => ({
      population: `${distribution}, ${accuracy.loadedViewers} loaded`,
      viewer: l.viewer,
      rateMbps: l.rateBps / 1e6,
      rttMs: l.rttMs,
      rttErrorMs: rttErrorMs(l),
      rateErrorPercent: rateError(l) * 100,
    })),
  );
  const scatter = (y: string, title: string, x: string, xTitle: string, log: boolean) => ({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    width: 700,
    height: 260,
    data: { values: points },
    mark: { type: 'point', filled: true, opacity: 0.7 },
    encoding: {
      x: { field: x, type: 'quantitative', title: xTitle, scale: log ? { type: 'log' } : {} },
      y: { field: y, type: 'quantitative', title },
      color: { field: 'population', type: 'nominal' },
      tooltip: [{ field: 'viewer' }, { field: 'rateMbps' }, { field: 'rttMs' }, { field: y }],
    },
  });
  const html = await renderReportPage({
    title: 'Population lab accuracy',
    subtitle: command,
    sections: [
      {
        heading: 'RTT error per link (its link idle, others loaded)',
        chart: scatter('rttErrorMs', 'measured - configured RTT (ms)', 'rttMs', 'configured RTT (ms)', false),
      },
      {
        heading: "Rate error per link (its queue's output under a flood at 1.1x its rate)",
        chart: scatter('rateErrorPercent', 'sent / link rate - 1 (%)', 'rateMbps', 'link rate (Mbit/s)', true),
      },
      {
        heading: 'Every link',
        table: {
          columns: [
            'population',
            'viewer',
            'rate Mbit/s',
            'RTT ms',
            'buffer B',
            'measured RTT ms',
            'queue sent Mbit/s',
            'busy',
            'queue frames / received',
            'burst sent',
            'received',
            'fits',
            'at most',
            'drops here',
            'drops elsewhere',
          ],
          rows: measured.flatMap(({ distribution, accuracy }) =>
            accuracy.links.map((l) => [
              `${distribution}, ${accuracy.loadedViewers} loaded`,
              l.viewer,
              +(l.rateBps / 1e6).toFixed(3),
              l.rttMs,
              l.bufferBytes,
              +l.measuredRttMs.toFixed(2),
              +(l.linkRateBps / 1e6).toFixed(3),
              l.backlogged ? 'yes' : 'no',
              +l.queueFramesPerReceived.toFixed(4),
              l.burst.sent,
              l.burst.received,
              l.burst.fits,
              l.burst.atMost,
              l.burst.dropsHere,
              l.burst.dropsElsewhere,
            ]),
          ),
        },
      },
    ],
  });
  await writeFile(join(import.meta.dirname, '..', '..', 'bench', 'results', 'population-accuracy.html'), html);
}

await runIfMain(import.meta.url, main);
