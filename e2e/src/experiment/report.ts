/**
 * report.html of an experiment: per profile the paper's tables (control variables, outcomes over
 * the throttling phase, rebuffering), the A/A check and the compass, CDFs, loss phases, sample
 * time-sequence graphs and the probe's queueing delay, each with a short reading written from
 * the measured numbers. Charts are Vega-Lite (renderReportPage inlines the libraries).
 */
import { writeFile } from 'node:fs/promises';
import { renderReportPage, type ReportSection } from '../report/vega-page.js';
import {
  minimumAaClusters,
  minimumRatedBytes,
  minimumVerdictConnections,
  minimumVerdictSessions,
  type CompassCheck,
  type GroupRow,
  type KindSummary,
  type ProfileSummary,
  type QueueingDistribution,
} from './analysis.js';
import type { DesignComparison, ExperimentResults } from './analysis.js';
import { designReading, designTable } from './design-comparison.js';
import { formatEstimate, formatNumber } from './statistics.js';
import { dataCentreOf, paperComparison, paperFigures } from './paper.js';
import { minimumPairs, simBrowserVerdicts } from './population-analysis.js';

const kindTitle = {
  progressive: "progressive downloads (the paper's flows)",
  segment: 'segment responses (DASH players)',
} as const;

const ci = formatEstimate;

const pct = (value: number) => formatNumber(value, 1);

function cdfChart(
  title: string,
  axis: string,
  points: readonly { group: string; value: number; fraction: number }[],
  logScale = false,
): Record<string, unknown> {
  return {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title,
    width: 620,
    height: 260,
    data: { values: points },
    mark: { type: 'line', interpolate: 'step-after' },
    encoding: {
      x: { field: 'value', type: 'quantitative', title: axis, ...(logScale ? { scale: { type: 'symlog' } } : {}) },
      y: { field: 'fraction', type: 'quantitative', title: 'fraction of flows', scale: { domain: [0, 1] } },
      color: { field: 'group', type: 'nominal', title: 'group' },
      tooltip: [{ field: 'group' }, { field: 'value', format: '.3f' }, { field: 'fraction', format: '.2f' }],
    },
  };
}

function rowOf(kind: KindSummary, group: string): GroupRow | undefined {
  return kind.rows.find((r) => r.group === group);
}

function readingRetransmissions(kind: KindSummary, baseline: string): string {
  const base = rowOf(kind, baseline);
  const parts = kind.rows
    .filter((r) => r.group !== baseline && Number.isFinite(r.retransmissionImprovementPercent.value))
    .map(
      (r) =>
        `${r.group} ` +
        (r.retransmissionImprovementPercent.value >= 0
          ? `${pct(r.retransmissionImprovementPercent.value)} % lower `
          : `${pct(-r.retransmissionImprovementPercent.value)} % higher `) +
        `(95 % interval ${pct(r.retransmissionImprovementPercent.low)} ` +
        `to ${pct(r.retransmissionImprovementPercent.high)} %)`,
    );
  if (base === undefined || !Number.isFinite(base.retransmissionRatePercent.value))
    return 'No throttled flows in the baseline group: no comparison.';
  return (
    `Mean retransmission rate over the throttling ` +
    `phase: ${baseline} ${ci(base.retransmissionRatePercent, 3)} %. Against ` +
    `it: ${parts.join('; ') || 'no other group throttled'}. A curve further up and to ` +
    `the left means fewer flows with losses.`
  );
}

function kindSections(
  profile: ProfileSummary & { compass: Readonly<Record<string, readonly CompassCheck[]>> },
  kind: KindSummary,
  baseline: string,
): ReportSection[] {
  const title = `${profile.profile}: ${kindTitle[kind.kind]}`;
  const sections: ReportSection[] = [
    {
      heading: `${title}: control variables (Table 1)`,
      text:
        'Every group uses the same mechanism in the startup phase, so srtt and goodput at ' +
        'its end should match across groups: this validates the random assignment. Intervals ' +
        'are 95 % (cluster bootstrap over connections).',
      table: {
        columns: [
          'group',
          'policy',
          'flows',
          'connections',
          'mean size MB',
          'mean duration s',
          'srtt at end of startup ms',
          'startup goodput Mbit/s (median)',
        ],
        rows: kind.rows.map((r) => [
          r.group,
          r.policy,
          r.flows,
          r.connections,
          Number(r.meanSizeMB.toFixed(3)),
          Number(r.meanDurationSec.toFixed(2)),
          ci(r.srttAtStartupEndMs, 1),
          ci(r.startupGoodputMbps),
        ]),
      },
    },
    {
      heading: `${title}: the throttling phase (Figure 4, Tables 2-3)`,
      text:
        `Statistics over the throttling phase only, as in the paper (groups that never ` +
        `throttle, like bulk, have none). Goodput and goodput / target only over phases of ` +
        `at least ${minimumRatedBytes / 1024} kB (shorter ones, like one-block audio ` +
        `segments, leave at line speed under every policy). Improvement is 1 - group mean ` +
        `/ ${baseline} mean. Rebuffering chance: % of sessions with at least one rebuffer ` +
        `(Wilson interval); frequency: rebuffers per session second.`,
      table: {
        columns: [
          'group',
          'throttled flows',
          'retransmission rate %',
          `improvement vs ${baseline} %`,
          'srtt ms',
          `srtt improvement %`,
          'goodput Mbit/s (median)',
          'goodput / R (median)',
          'goodput / rate aimed at (median)',
          'within ±3 % of it',
          'bursts <= 10 pkts %',
          'whole-response retrans. %',
          'sessions',
          'rebuffering chance %',
          'rebuffering frequency 1/s',
          'startup delay ms',
          'mean bitrate Mbit/s',
        ],
        rows: kind.rows.map((r) => [
          r.group,
          r.throttledFlows,
          ci(r.retransmissionRatePercent, 3),
          ci(r.retransmissionImprovementPercent, 1),
          ci(r.srttThrottledMs, 1),
          ci(r.srttImprovementPercent, 1),
          ci(r.throttledGoodputMbps, 3),
          ci(r.goodputToTarget, 3),
          ci(r.goodputToPaceRate, 3),
          pct(r.goodputWithin3Percent),
          pct(r.burstsAtMost10Percent),
          ci(r.wholeResponseRetransmissionRatePercent, 3),
          r.sessions,
          ci(r.rebufferChancePercent, 1),
          ci(r.rebufferFrequencyPerSec, 4),
          Number.isFinite(r.startupDelayMs) ? Math.round(r.startupDelayMs) : null,
          Number(r.meanBitrateMbps.toFixed(3)),
        ]),
      },
    },
  ];
  const againstBulk = kind.rows.filter((r) => r.versusBulk !== undefined);
  const bulkRow = kind.rows.find((r) => r.policy === 'bulk');
  if (againstBulk.length > 0 && bulkRow !== undefined)
    sections.push({
      heading: `${title}: against unpaced delivery (${bulkRow.group}), whole responses`,
      text:
        `Sammy's (SIGCOMM'23) and a CDN operator's baseline is unpaced delivery, which has no throttling phase: ` +
        `these figures are over whole responses (startup included, the same under every policy), the srtt ` +
        `the response's last TCP_INFO reading. % lower is 1 - group mean / ${bulkRow.group} mean (negative: ` +
        `higher), 95 % cluster bootstrap over connections. Sammy's A/B test against Netflix's unpaced ` +
        `production: retransmissions -35.5 % [-37.8, -33.4], RTT -13.7 % [-16.4, -12.3].`,
      table: {
        columns: [
          'group',
          'flows',
          'whole-response retrans. %',
          '% lower than bulk',
          'srtt at end ms',
          '% lower than bulk',
        ],
        rows: [bulkRow, ...againstBulk].map((r) => [
          r.group,
          r.flows,
          ci(r.wholeResponseRetransmissionRatePercent, 3),
          r.versusBulk === undefined ? '-' : ci(r.versusBulk.retransmissionLowerPercent, 1),
          ci(r.srttEndMs, 1),
          r.versusBulk === undefined ? '-' : ci(r.versusBulk.srttLowerPercent, 1),
        ]),
      },
    });
  if (kind.aa !== null) {
    const disagreements = kind.aa.metrics.filter((m) => m.agree === false).map((m) => m.metric);
    const undecided = kind.aa.metrics.filter((m) => m.agree === null).map((m) => m.metric);
    sections.push({
      heading: `${title}: A/A control (${kind.aa.groups.join(' vs ')})`,
      text:
        (disagreements.length === 0
          ? 'The two identical groups agree within their 95 % intervals on every metric that ' +
            'could be judged: differences between other groups larger than these intervals are ' +
            'not noise of the setup.'
          : `The two identical groups disagree on ${disagreements.join(', ')}: on these metrics ` +
            `the experiment's noise is larger than its intervals say (too few flows, or ` +
            `something in the setup differs between them), so differences of that size between ` +
            `other groups are not evidence.`) +
        (undecided.length === 0
          ? ''
          : ` Not judged (fewer than ${minimumAaClusters} connections or no values in a ` +
            `group): ${undecided.join(', ')}.`),
      table: {
        columns: ['metric', kind.aa.groups[0], kind.aa.groups[1], 'intervals overlap'],
        rows: kind.aa.metrics.map((m) => [
          m.metric,
          ci(m.a, 3),
          ci(m.b, 3),
          m.agree === null ? 'too few' : m.agree ? 'yes' : 'NO',
        ]),
      },
    });
  }
  const compass = profile.compass[kind.kind];
  if (compass !== undefined && compass.length > 0) {
    sections.push({
      heading: `${title}: compass goals (trickle vs 64 kB application pacing)`,
      text:
        `The product's goals for the high-bandwidth case. Figures are as measured; where a ` +
        `goal is missed, the note beside the results says why. A goal is "too few" to call ` +
        `with fewer than ${minimumVerdictConnections} connections (flow metrics) ` +
        `or ${minimumVerdictSessions} sessions (rebuffering) in either group.`,
      table: { columns: ['goal', 'measured', 'verdict'], rows: compass.map((c) => [c.goal, c.measured, c.verdict]) },
    });
  }
  sections.push(
    {
      heading: `${title}: retransmission rate (CDF, throttling phase)`,
      text: readingRetransmissions(kind, baseline),
      chart: cdfChart(
        'Retransmission rate in the throttling phase',
        'retransmission rate (%)',
        kind.cdfs.retransmissionRatePercent,
        true,
      ),
    },
    {
      heading: `${title}: smoothed RTT at the end of the response (CDF)`,
      text:
        `Mean srtt: ${kind.rows.map((r) => `${r.group} ${ci(r.srttThrottledMs, 1)} ms`).join('; ')}. ` +
        `Bursty groups fill the bottleneck queue and see a higher RTT.`,
      chart: cdfChart('srtt after the throttling phase', 'srtt (ms)', kind.cdfs.srttThrottledMs),
    },
    {
      heading: `${title}: burst sizes (CDF, throttling phase; Figure 5)`,
      text:
        `A burst: 4 or more data packets with inter-departure times <= 1 ms (Blanton et ` +
        `al.), from the capture at the router. Share of bursts of at most 10 ` +
        `packets: ` +
        `${kind.rows.map((r) => `${r.group} ${pct(r.burstsAtMost10Percent)} % of ${r.throttledBursts}`).join('; ')}.`,
      chart: cdfChart(
        'Burst size in the throttling phase',
        'burst size (packets)',
        kind.cdfs.throttledBurstPackets,
        true,
      ),
    },
    {
      heading: `${title}: throttled goodput / target (CDF; Figure 3)`,
      text:
        `Goodput over the throttling phase against R, the media's own rate: ` +
        `median ${kind.rows.map((r) => `${r.group} ${ci(r.goodputToTarget, 3)}`).join('; ')}. ` +
        `Application pacing aims at 1.25 x R and trickle's clamp at 1.2 x R (R itself at its ` +
        `10-packet floor), so ratios above 1 are by design; against the rate each policy ` +
        `aimed at, the medians ` +
        `are ${kind.rows.map((r) => `${r.group} ${ci(r.goodputToPaceRate, 3)}`).join('; ')}.`,
      chart: cdfChart('Goodput over the throttling phase / target rate', 'goodput / target', kind.cdfs.goodputToTarget),
    },
  );
  if (kind.kind === 'segment') {
    const shares = kind.rows.map((r) => {
      const phases = kind.lossPhases.filter((p) => p.group === r.group);
      const total = phases.reduce((s, p) => s + p.retransmissions, 0);
      return (
        `${r.group}: ${total} ` +
        `retransmissions` +
        `${total === 0 ? '' : ` (${phases.map((p) => `${p.phase} ${pct(p.share * 100)} %`).join(', ')})`}`
      );
    });
    sections.push({
      heading: `${title}: where losses happen (Esteban et al.)`,
      text:
        `Each retransmitted packet of a segment response by the phase of the transfer it ` +
        `belongs to: initial burst (first sent within one RTT of the response's first ` +
        `packet), ACK clocking, trailing ACKs (retransmitted after the last new data: ` +
        `recovered by probe or timeout, the costliest). ${shares.join('; ')}.`,
      chart: {
        $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
        width: 620,
        height: 220,
        data: { values: kind.lossPhases },
        mark: 'bar',
        encoding: {
          y: { field: 'group', type: 'nominal', title: null },
          x: { field: 'retransmissions', type: 'quantitative', title: 'retransmitted packets' },
          color: {
            field: 'phase',
            type: 'nominal',
            title: 'phase',
            sort: ['initialBurst', 'ackClocking', 'trailingAcks'],
          },
          tooltip: [
            { field: 'group' },
            { field: 'phase' },
            { field: 'retransmissions' },
            { field: 'share', format: '.1%' },
          ],
        },
      },
    });
  }
  if (kind.unattributedSessions > 0)
    sections.push({
      heading: `${title}: unattributed sessions`,
      text:
        `${kind.unattributedSessions} sessions met more than one group (their connection ` +
        `was replaced) or failed before a response, and are left out of the rebuffering ` +
        `figures.`,
    });
  return sections;
}

function populationSections(
  profile: ExperimentResults['profiles'][number],
  config: ExperimentResults['config'],
  baseline: string,
): ReportSection[] {
  const population = profile.population;
  if (population === null) return [];
  const sections: ReportSection[] = [];
  const dc = dataCentreOf(population.source);
  const progressive = profile.kinds.find((k) => k.kind === 'progressive');
  const trickle = config.groups.find((g) => g.policy === 'trickle');
  if (dc !== undefined && progressive !== undefined && trickle !== undefined) {
    const rows = paperComparison(progressive, dc, trickle.name, baseline, population.buckets);
    sections.push({
      heading: `${profile.profile}: side by side with the paper (${dc})`,
      text:
        `The paper's figures for ${dc} (sections 5.1-5.4, Tables 2 and 3) beside ours for ` +
        `progressive downloads (the paper's flows), ${trickle.name} against ${baseline}, ` +
        `each with its 95 % interval. Table 2 buckets flows by their startup-phase goodput, ` +
        `as the paper did.`,
      table: {
        columns: ['metric', 'the paper', 'ours (95 % interval)', 'reading'],
        rows: rows.map((r) => [r.metric, r.paper, r.ours, r.reading]),
      },
    });
    if (population.buckets !== null) {
      const paper = paperFigures[dc].buckets;
      const values = population.buckets.flatMap((bucket, index) => [
        {
          bucket: bucket.label,
          source: 'the paper',
          improvement: paper[index]!.improvementPercent,
          low: null,
          high: null,
        },
        {
          bucket: bucket.label,
          source: 'ours',
          improvement: Number.isFinite(bucket.improvementPercent.value) ? bucket.improvementPercent.value : null,
          low: Number.isFinite(bucket.improvementPercent.low) ? bucket.improvementPercent.low : null,
          high: Number.isFinite(bucket.improvementPercent.high) ? bucket.improvementPercent.high : null,
        },
      ]);
      sections.push({
        heading: `${profile.profile}: Table 2, retransmission improvement by bandwidth`,
        chart: {
          $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
          width: 600,
          height: 240,
          data: { values },
          layer: [
            {
              mark: { type: 'point', filled: true, size: 80 },
              encoding: {
                x: { field: 'bucket', type: 'ordinal', sort: null, title: 'startup goodput (Mbit/s)' },
                y: {
                  field: 'improvement',
                  type: 'quantitative',
                  title: 'retransmission rate, % lower than the baseline',
                },
                color: { field: 'source', type: 'nominal', title: null },
              },
            },
            {
              mark: 'rule',
              encoding: {
                x: { field: 'bucket', type: 'ordinal', sort: null },
                y: { field: 'low', type: 'quantitative' },
                y2: { field: 'high' },
                color: { field: 'source', type: 'nominal' },
              },
            },
          ],
        },
      });
    }
  }
  const agreement = population.simVsBrowser;
  if (agreement !== null) {
    const verdicts = simBrowserVerdicts(agreement);
    const verdict = (v: boolean | null) =>
      v === null
        ? agreement.pairs < minimumPairs
          ? `too few (${agreement.pairs} pairs)`
          : 'undefined'
        : v
          ? 'met'
          : 'missed';
    sections.push({
      heading: `${profile.profile}: player-sim against dash.js on identical links`,
      text:
        `${agreement.pairs} pairs: each browser session met the same link, in the same run, ` +
        `as the simulated DASH player of its index. Differences and ratios carry ` +
        `paired-bootstrap intervals.`,
      table: {
        columns: ['metric', 'player-sim', 'dash.js', 'dash.js vs player-sim', 'goal', 'verdict'],
        rows: [
          [
            'rebuffering chance %',
            ci(agreement.simulated.rebufferChancePercent, 1),
            ci(agreement.browser.rebufferChancePercent, 1),
            `${ci(agreement.chanceDifferencePoints, 1)} points`,
            'within ±5 points',
            verdict(verdicts.chance),
          ],
          [
            'rebuffering frequency / min',
            ci(agreement.simulated.rebufferFrequencyPerMin, 2),
            ci(agreement.browser.rebufferFrequencyPerMin, 2),
            `x ${ci(agreement.frequencyRatio, 2)}`,
            'within 20 %',
            verdict(verdicts.frequency),
          ],
          [
            'mean bitrate Mbit/s',
            ci(agreement.simulated.meanBitrateMbps, 2),
            ci(agreement.browser.meanBitrateMbps, 2),
            `x ${ci(agreement.bitrateRatio, 3)}`,
            'within 10 %',
            verdict(verdicts.bitrate),
          ],
        ],
      },
    });
  }
  return sections;
}

function profileSections(
  profile: ExperimentResults['profiles'][number],
  config: ExperimentResults['config'],
  baseline: string,
): ReportSection[] {
  const { down, up } = profile.link;
  const population = profile.population;
  const sections: ReportSection[] = [
    {
      heading: `${profile.profile}: ${population === null ? 'link' : 'links'} and runs`,
      text:
        population === null
          ? `Downlink ${down.rateBps / 1e6} Mbit/s, uplink ${up.rateBps / 1e6} Mbit/s, ` +
            `RTT ${down.delayMs + up.delayMs} ms, bottleneck ` +
            `buffer ${Math.round(down.bufferBytes / 1000)} kB (tail ` +
            `drop)${down.lossRate > 0 ? `, random loss ${down.lossRate * 100} %` : ''}. Mixed ` +
            `runs: all groups at once, connections assigned at random by the origin; isolated ` +
            `runs: one group alone.`
          : `A population: every viewer behind its own access link (rate, RTT, tail-drop ` +
            `buffer), ${population.viewersPerRun} per run drawn from ${population.source}, a new ` +
            `draw each run, all sharing the origin's uplink. The ${population.links.count} links ` +
            `met: median ${population.links.medianRateMbps.toFixed(2)} ` +
            `Mbit/s, ${population.links.medianRttMs.toFixed(0)} ms ` +
            `RTT, ${population.links.medianBufferMs.toFixed(0)} ms of buffer. Connections ` +
            `assigned at random by the origin. "Bottleneck" counts below are every viewer's ` +
            `queues together.`,
      table: {
        columns: [
          'run',
          'kind',
          'seed',
          'group',
          'responses',
          'viewers',
          'viewer errors',
          'bottleneck packets',
          'bottleneck drops',
        ],
        rows: profile.runs.map((r) => [
          r.id,
          r.kind,
          r.seed,
          r.group,
          r.flows,
          r.viewers,
          r.errors,
          r.bottleneckPackets,
          r.bottleneckDrops,
        ]),
      },
    },
  ];
  for (const kind of profile.kinds) sections.push(...kindSections(profile, kind, baseline));
  sections.push(...populationSections(profile, config, baseline));
  if (profile.timeSequences.length > 0) {
    const points = profile.timeSequences.flatMap((t) =>
      t.points.map((p) => ({ group: t.group, ...p, kind: p.retransmission ? 'retransmission' : 'data' })),
    );
    const zoom = profile.timeSequences.flatMap((t) =>
      t.zoom.map((p) => ({ group: t.group, ...p, kind: p.retransmission ? 'retransmission' : 'data' })),
    );
    const chart = (title: string, values: unknown[]) => ({
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title,
      data: { values },
      facet: { field: 'group', type: 'nominal', title: null },
      columns: 3,
      resolve: { scale: { x: 'independent', y: 'independent' } },
      spec: {
        width: 260,
        height: 170,
        mark: { type: 'point', filled: true, size: 6 },
        encoding: {
          // Not from zero: a zoom's window starts seconds into the transfer.
          x: { field: 'timeSec', type: 'quantitative', title: 'time (s)', scale: { zero: false } },
          y: { field: 'offsetMB', type: 'quantitative', title: 'sequence (MB)', scale: { zero: false } },
          color: {
            field: 'kind',
            type: 'nominal',
            scale: { domain: ['data', 'retransmission'], range: ['#1f77b4', '#d62728'] },
            title: null,
          },
          size: { condition: { test: "datum.kind === 'retransmission'", value: 30 }, value: 6 },
        },
      },
    });
    sections.push(
      {
        heading: `${profile.profile}: time-sequence graphs (Figures 1, 2, 6)`,
        text:
          `One sample transfer per group (from its isolated run when there is one): bytes ` +
          `sent against time as captured at the router, retransmissions in ` +
          `red. ${profile.timeSequences.map(describeTransfer).join('; ')}.`,
        chart: chart('Bytes over time, one transfer per group', points),
      },
      {
        heading: `${profile.profile}: time-sequence graphs, 1.5 s of the throttling phase`,
        text:
          'Every packet of a short window: application pacing writes its blocks as ' +
          'back-to-back bursts (vertical steps), trickle and kernel pacing spread packets over ' +
          'the RTT (a slope).',
        chart: chart('Zoom into the throttling phase', zoom),
      },
    );
  }
  if (profile.queueing.length > 0) {
    const fmt = (d: QueueingDistribution) =>
      d.samples === 0 ? 'no samples' : `p50 ${d.p50Ms.toFixed(1)} ms, p95 ${d.p95Ms.toFixed(1)} ms`;
    const cells = (d: QueueingDistribution) => [
      d.samples,
      ...[d.p50Ms, d.p95Ms, d.p99Ms].map((v) => (Number.isFinite(v) ? Number(v.toFixed(2)) : null)),
    ];
    sections.push({
      heading: `${profile.profile}: interactive latency probe (queueing delay)`,
      text:
        `A ping every interval from a host sharing the bottleneck; queueing delay = RTT - ` +
        `the smallest RTT of the run. Isolated runs attribute it to one group's traffic; ` +
        `mixed runs show all groups together. Startup phases are full speed under every ` +
        `policy and fill the queue alike, so the chart shows the replies that arrived while ` +
        `no response was in its startup phase: the policies' own ` +
        `queueing. ` +
        `${profile.queueing.map((q) => `${q.label}: ${fmt(q.throttling)} (whole run: ${fmt(q.all)})`).join('; ')}.`,
      table: {
        columns: [
          'run',
          'traffic',
          'samples (throttling)',
          'p50 ms',
          'p95 ms',
          'p99 ms',
          'samples (whole run)',
          'p50 ms',
          'p95 ms',
          'p99 ms',
        ],
        rows: profile.queueing.map((q) => [q.run, q.label, ...cells(q.throttling), ...cells(q.all)]),
      },
      chart: cdfChart(
        'Queueing delay seen by the probe while every response was throttled',
        'queueing delay (ms)',
        profile.queueing.flatMap((q) => q.throttling.cdf.map((p) => ({ group: q.label, ...p }))),
      ),
    });
  }
  if (profile.browsers !== null) {
    sections.push({
      heading: `${profile.profile}: browser sessions (dash.js in Chromium)`,
      text:
        'Browsers open several connections, each assigned its own group, so their QoE is ' +
        'reported for all groups together.',
      table: {
        columns: ['sessions', 'rebuffering chance %', 'startup delay ms', 'mean bitrate Mbit/s'],
        rows: [
          [
            profile.browsers.sessions,
            ci(profile.browsers.rebufferChancePercent, 1),
            Math.round(profile.browsers.startupDelayMs),
            Number(profile.browsers.meanBitrateMbps.toFixed(3)),
          ],
        ],
      },
    });
  }
  return sections;
}

/** A design comparison's section: its table and each effect from both designs with their intervals. */
function designSection(design: DesignComparison): ReportSection {
  const points = design.effects.flatMap((e) =>
    (
      [
        ['population', e.population],
        ['shared bottleneck', e.shared],
      ] as const
    )
      .filter(([, estimate]) => Number.isFinite(estimate.value))
      .map(([name, estimate]) => ({
        effect: `${e.kind}, ${e.group}: ${e.effect}`,
        design: name,
        value: estimate.value,
        low: Number.isFinite(estimate.low) ? estimate.low : estimate.value,
        high: Number.isFinite(estimate.high) ? estimate.high : estimate.value,
      })),
  );
  const y = { field: 'effect', type: 'nominal', title: null, sort: null };
  const yOffset = { field: 'design', type: 'nominal' };
  const color = { field: 'design', type: 'nominal', title: 'design' };
  return {
    heading: `Unbiased and naive side by side: ${design.population} and ${design.shared}`,
    text: designReading(design),
    table: designTable(design),
    chart: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      title: 'Each effect from both designs (95 % intervals)',
      width: 620,
      data: { values: points },
      layer: [
        {
          mark: { type: 'rule' },
          encoding: {
            y,
            yOffset,
            color,
            x: { field: 'low', type: 'quantitative', title: '% lower', scale: { type: 'symlog' } },
            x2: { field: 'high' },
          },
        },
        {
          mark: { type: 'point', filled: true },
          encoding: {
            y,
            yOffset,
            color,
            x: { field: 'value', type: 'quantitative' },
            tooltip: [{ field: 'effect' }, { field: 'design' }, { field: 'value', format: '.1f' }],
          },
        },
      ],
    },
  };
}

export async function writeExperimentReport(path: string, results: ExperimentResults): Promise<void> {
  const config = results.config;
  const baseline = config.baseline ?? config.groups[0]!.name;
  const html = await renderReportPage({
    title: `Experiment ${results.name}`,
    subtitle:
      `${results.description} ${results.date}, ${results.machine.hostname} ` +
      `(${results.machine.cores} x ${results.machine.cpus}, ` +
      `Linux ${results.machine.kernel}, Node ${results.machine.node}). ` +
      `Groups: ${config.groups.map((g) => `${g.name} = ${g.policy}`).join(', ')}; ${config.seeds.length} ` +
      `mixed run(s) per profile of ${config.sessionSeconds} s; ` +
      `load ${config.load.progressive} progressive + ${config.load.dash} DASH ` +
      `+ ${config.load.browsers} browser viewers; startup phase ${config.startupSeconds} s ` +
      `of media; congestion ` +
      `control ${config.transport.congestionControl ?? 'kernel default'}; slow start after ` +
      `idle ${config.transport.slowStartAfterIdle ? 'on' : 'off'}.`,
    sections: [
      ...results.profiles.flatMap((profile) => profileSections(profile, config, baseline)),
      ...results.designs.map(designSection),
    ],
  });
  await writeFile(path, html);
}

/** "trickle: a progressive response, throttled from 3.2 s" */
function describeTransfer(t: { group: string; role: string; throttlingStartSec: number | null }): string {
  const throttled =
    t.throttlingStartSec === null ? ' never throttled' : `, throttled from ${t.throttlingStartSec.toFixed(1)} s`;
  return `${t.group}: a ${t.role} response${throttled}`;
}
