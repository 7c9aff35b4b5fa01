/** summary.md of an experiment: the headline tables (the shape of bench/results/trickle-ab.md). */
import { writeFile } from 'node:fs/promises';
import type { ExperimentResults } from './run.js';
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
    'Values are means (retransmission rate, srtt) or medians (goodput / target) over flows with a 95 % interval in brackets (cluster bootstrap over connections; rebuffering chance: Wilson). Statistics over the throttling phase, as in the paper. Improvement: 1 - group / baseline.',
  ];
  for (const profile of results.profiles) {
    const { down, up } = profile.link;
    lines.push('', `## ${profile.profile}`, '', `${down.rateBps / 1e6} Mbit/s down, ${up.rateBps / 1e6} Mbit/s up, RTT ${down.delayMs + up.delayMs} ms, buffer ${Math.round(down.bufferBytes / 1000)} kB; ${profile.runs.filter((r) => r.kind === 'mixed').length} mixed runs, ${profile.runs.filter((r) => r.kind === 'isolated').length} isolated.`);
    for (const kind of profile.kinds) {
      lines.push(
        '',
        `### ${kind.kind === 'progressive' ? 'Progressive downloads' : 'Segment responses'}`,
        '',
        '| group | flows (conn.) | srtt at startup end ms | retrans. % (throttling) | improvement % | srtt ms (throttling) | srtt improvement % | goodput / R | goodput / rate aimed at | bursts <= 10 pkts | sessions | rebuffer chance % | rebuffers / s |',
        '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
        ...kind.rows.map(
          (r) =>
            `| ${r.group} (${r.policy}) | ${r.flows} (${r.connections}) | ${ci(r.srttAtStartupEndMs, 1)} | ${ci(r.retransmissionRatePercent, 3)} | ${ci(r.retransmissionImprovementPercent, 0)} | ${ci(r.srttThrottledMs, 1)} | ${ci(r.srttImprovementPercent, 0)} | ${ci(r.goodputToTarget, 3)} | ${ci(r.goodputToPaceRate, 3)} | ${formatNumber(r.burstsAtMost10Percent, 1)} % of ${r.throttledBursts} | ${r.sessions} | ${ci(r.rebufferChancePercent, 1)} | ${ci(r.rebufferFrequencyPerSec, 4)} |`,
        ),
      );
      if (kind.aa !== null) {
        const disagree = kind.aa.metrics.filter((x) => x.agree === false).map((x) => x.metric);
        const undecided = kind.aa.metrics.filter((x) => x.agree === null).map((x) => x.metric);
        lines.push('', `A/A (${kind.aa.groups.join(' vs ')}): ${disagree.length === 0 ? 'intervals overlap on every judged metric' : `intervals do not overlap on ${disagree.join(', ')}`}${undecided.length === 0 ? '' : `; not judged: ${undecided.join(', ')}`}.`);
      }
      const compass = profile.compass[kind.kind];
      if (compass !== undefined && compass.length > 0) {
        lines.push('', '| compass goal | measured | verdict |', '| --- | --- | --- |', ...compass.map((c) => `| ${c.goal} | ${c.measured} | ${c.verdict} |`));
      }
    }
    if (profile.queueing.length > 0) {
      lines.push(
        '',
        'Probe queueing delay, ms (p50 / p95, while no response was in its startup phase; whole run in brackets): ' +
          profile.queueing.map((q) => `${q.label} ${formatNumber(q.throttling.p50Ms, 1)} / ${formatNumber(q.throttling.p95Ms, 1)} (${formatNumber(q.all.p50Ms, 1)} / ${formatNumber(q.all.p95Ms, 1)})`).join('; ') +
          '.',
      );
    }
  }
  return `${lines.join('\n')}\n`;
}

export async function writeSummaryMarkdown(path: string, results: ExperimentResults, command: string): Promise<void> {
  await writeFile(path, summaryMarkdown(results, command));
}
