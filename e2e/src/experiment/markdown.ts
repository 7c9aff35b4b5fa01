/** summary.md of an experiment: the headline tables (the shape of bench/results/trickle-ab.md). */
import { writeFile } from 'node:fs/promises';
import type { DesignComparison, ExperimentResults } from './analysis.js';
import { designReading, designTable } from './design-comparison.js';
import { dataCentreOf, paperComparison } from './paper.js';
import { minimumPairs, simBrowserVerdicts } from './population-analysis.js';
import { formatEstimate, formatNumber } from './statistics.js';

const ci = formatEstimate;

export function summaryMarkdown(results: ExperimentResults, command: string): string {
  const m = results.machine;
  const lines = [
    `# Experiment ${results.name}`,
    '',
    `Machine: ${m.hostname}, ${m.cores} x ${m.cpus}, Linux ${m.kernel}, Node ${m.node}`,
    `Date: ${results.date}`,
    `Command: \`${command}\``,
    '',
    results.description,
    '',
    'Values are means (retransmission rate, srtt) or medians (goodput / target) over ' +
      'flows with a 95 % interval in brackets (cluster bootstrap over connections; ' +
      'rebuffering chance: Wilson). Statistics over the throttling phase, as in the paper. ' +
      'Improvement: 1 - group / baseline.',
  ];
  for (const profile of results.profiles) {
    const { down, up } = profile.link;
    const runCounts =
      `${profile.runs.filter((r) => r.kind === 'mixed').length} mixed ` +
      `runs, ${profile.runs.filter((r) => r.kind === 'isolated').length} isolated`;
    const population = profile.population;
    lines.push(
      '',
      `## ${profile.profile}`,
      '',
      population === null
        ? `${down.rateBps / 1e6} Mbit/s down, ${up.rateBps / 1e6} Mbit/s up, ` +
            `RTT ${down.delayMs + up.delayMs} ms, buffer ${Math.round(down.bufferBytes / 1000)} ` +
            `kB; ${runCounts}.`
        : `A population: every viewer on its own access link, ${population.viewersPerRun} per ` +
            `run drawn from ${population.source} (a new draw each run); ` +
            `the ${population.links.count} links met had a median ` +
            `of ${population.links.medianRateMbps.toFixed(2)} ` +
            `Mbit/s, ${population.links.medianRttMs.toFixed(0)} ms RTT ` +
            `and ${population.links.medianBufferMs.toFixed(0)} ms of buffer; ${runCounts}.`,
    );
    for (const kind of profile.kinds) {
      lines.push(
        '',
        `### ${kind.kind === 'progressive' ? 'Progressive downloads' : 'Segment responses'}`,
        '',
        '| group | flows (conn.) | srtt at startup end ms | retrans. % (throttling) | ' +
          'improvement % | srtt ms (throttling) | srtt improvement % | goodput / R | goodput / ' +
          'rate aimed at | bursts <= 10 pkts | sessions | rebuffer chance % | rebuffers / s |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...kind.rows.map(
          (r) =>
            `| ${r.group} (${r.policy}) | ${r.flows} (${r.connections}) ` +
            `| ${ci(r.srttAtStartupEndMs, 1)} | ${ci(r.retransmissionRatePercent, 3)} ` +
            `| ${ci(r.retransmissionImprovementPercent, 0)} | ${ci(r.srttThrottledMs, 1)} ` +
            `| ${ci(r.srttImprovementPercent, 0)} | ${ci(r.goodputToTarget, 3)} ` +
            `| ${ci(r.goodputToPaceRate, 3)} | ${formatNumber(r.burstsAtMost10Percent, 1)} % ` +
            `of ${r.throttledBursts} | ${r.sessions} | ${ci(r.rebufferChancePercent, 1)} ` +
            `| ${ci(r.rebufferFrequencyPerSec, 4)} |`,
        ),
      );
      const bulkRow = kind.rows.find((r) => r.policy === 'bulk');
      const againstBulk = kind.rows.filter((r) => r.versusBulk !== undefined);
      if (bulkRow !== undefined && againstBulk.length > 0)
        lines.push(
          '',
          `Against unpaced delivery (${bulkRow.group}), whole responses (bulk has no throttling phase): ` +
            `retransmission rate and the srtt of the response's last reading, % lower = 1 - group / ${bulkRow.group}.`,
          '',
          '| group | whole-response retrans. % | % lower than bulk | srtt at end ms | % lower than bulk |',
          '| --- | ---: | ---: | ---: | ---: |',
          `| ${bulkRow.group} (${bulkRow.policy}) | ${ci(bulkRow.wholeResponseRetransmissionRatePercent, 3)} | - ` +
            `| ${ci(bulkRow.srttEndMs, 1)} | - |`,
          ...againstBulk.map(
            (r) =>
              `| ${r.group} (${r.policy}) | ${ci(r.wholeResponseRetransmissionRatePercent, 3)} ` +
              `| ${ci(r.versusBulk!.retransmissionLowerPercent, 0)} | ${ci(r.srttEndMs, 1)} ` +
              `| ${ci(r.versusBulk!.srttLowerPercent, 0)} |`,
          ),
        );
      if (kind.aa !== null) {
        const disagree = kind.aa.metrics.filter((x) => x.agree === false).map((x) => x.metric);
        const undecided = kind.aa.metrics.filter((x) => x.agree === null).map((x) => x.metric);
        lines.push(
          '',
          `A/A (${kind.aa.groups.join(' vs ')}): ` +
            (disagree.length === 0
              ? 'intervals overlap on every judged metric'
              : `intervals do not overlap on ${disagree.join(', ')}`) +
            `${undecided.length === 0 ? '' : `; not judged: ${undecided.join(', ')}`}.`,
        );
      }
      const compass = profile.compass[kind.kind];
      if (compass !== undefined && compass.length > 0) {
        lines.push(
          '',
          '| compass goal | measured | verdict |',
          '| --- | --- | --- |',
          ...compass.map((c) => `| ${c.goal} | ${c.measured} | ${c.verdict} |`),
        );
      }
    }
    const dc = population === null ? undefined : dataCentreOf(population.source);
    const progressive = profile.kinds.find((k) => k.kind === 'progressive');
    const trickle = results.config.groups.find((g) => g.policy === 'trickle');
    if (dc !== undefined && progressive !== undefined && trickle !== undefined) {
      const baseline = results.config.baseline ?? results.config.groups[0]!.name;
      lines.push(
        '',
        `### Side by side with the paper (${dc}; progressive downloads, the paper's ` +
          `flows; ${trickle.name} vs ${baseline})`,
        '',
        '| metric | the paper | ours (95 % interval) | reading |',
        '| --- | --- | --- | --- |',
        ...paperComparison(progressive, dc, trickle.name, baseline, population!.buckets).map(
          (r) => `| ${r.metric} | ${r.paper} | ${r.ours} | ${r.reading} |`,
        ),
      );
    }
    const agreement = population?.simVsBrowser ?? null;
    if (agreement !== null) {
      const verdicts = simBrowserVerdicts(agreement);
      const verdict = (v: boolean | null) =>
        v === null
          ? agreement.pairs < minimumPairs
            ? `too few (${agreement.pairs} pairs, fewer than ${minimumPairs})`
            : 'undefined (no rebuffering to compare)'
          : v
            ? 'met'
            : 'missed';
      lines.push(
        '',
        `### Simulated DASH players vs dash.js on identical links (${agreement.pairs} ` +
          `pairs: each browser and the simulated player of its index met the same link in the ` +
          `same run)`,
        '',
        '| metric | player-sim | dash.js | dash.js vs player-sim | goal | verdict |',
        '| --- | --- | --- | --- | --- | --- |',
        `| rebuffering chance % | ${ci(agreement.simulated.rebufferChancePercent, 1)} ` +
          `| ${ci(agreement.browser.rebufferChancePercent, 1)} ` +
          `| ${ci(agreement.chanceDifferencePoints, 1)} points | within ±5 points ` +
          `| ${verdict(verdicts.chance)} |`,
        `| rebuffering frequency / min ` +
          `| ${ci(agreement.simulated.rebufferFrequencyPerMin, 2)} ` +
          `| ${ci(agreement.browser.rebufferFrequencyPerMin, 2)} | ` +
          `x ${ci(agreement.frequencyRatio, 2)} | within 20 % | ${verdict(verdicts.frequency)} ` +
          `|`,
        `| mean bitrate Mbit/s | ${ci(agreement.simulated.meanBitrateMbps, 2)} ` +
          `| ${ci(agreement.browser.meanBitrateMbps, 2)} | x ${ci(agreement.bitrateRatio, 3)} ` +
          `| within 10 % | ${verdict(verdicts.bitrate)} |`,
      );
    }
    if (profile.queueing.length > 0) {
      lines.push(
        '',
        'Probe queueing delay, ms (p50 / p95, while no response was in its startup phase; whole run in brackets): ' +
          profile.queueing
            .map(
              (q) =>
                `${q.label} ${formatNumber(q.throttling.p50Ms, 1)} ` +
                `/ ${formatNumber(q.throttling.p95Ms, 1)} (${formatNumber(q.all.p50Ms, 1)} ` +
                `/ ${formatNumber(q.all.p95Ms, 1)})`,
            )
            .join('; ') +
          '.',
      );
    }
  }
  for (const design of results.designs) lines.push('', ...designMarkdown(design));
  return `${lines.join('\n')}\n`;
}

/** The unbiased design (a link per viewer) and the naive one (one shared bottleneck), effect by effect. */
function designMarkdown(design: DesignComparison): string[] {
  const { columns, rows } = designTable(design);
  return [
    `## Unbiased and naive side by side: ${design.population} (a link per viewer) and ${design.shared} ` +
      '(one shared bottleneck)',
    '',
    designReading(design),
    '',
    `| ${columns.join(' | ')} |`,
    '| --- | --- | --- | ---: | ---: | ---: | --- |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
}

export async function writeSummaryMarkdown(path: string, results: ExperimentResults, command: string): Promise<void> {
  await writeFile(path, summaryMarkdown(results, command));
}
