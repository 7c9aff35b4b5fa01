/**
 * The QoE matrix as a Markdown table (bench/results/qoe-matrix.md) and an HTML page with charts
 * (qoe-matrix.html): per link, what viewers saw and what the network saw per policy and player,
 * the goals with their verdicts, and the simulator's agreement with dash.js. The picture a
 * streaming engineer wants first: mean bitrate against probe queueing, per policy.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { renderReportPage, type ReportSection } from '../report/vega-page.js';
import { renderVegaLiteSvg } from '../report/vega-svg.js';
import type { Estimate } from '../experiment/statistics.js';
import {
  agreements,
  goalChecks,
  minimumSessions,
  placesOf,
  placeTitle,
  runConditions,
  sammyAgainstBulk,
  sharedCoresReason,
  type CellSummary,
  type MatrixData,
  type RunConditions,
} from './analysis.js';
import { matrixLinks } from './config.js';

const est = (e: Estimate, digits = 2) =>
  Number.isFinite(e.value)
    ? `${e.value.toFixed(digits)}` +
      `${Number.isFinite(e.low) ? ` [${e.low.toFixed(digits)}, ${e.high.toFixed(digits)}]` : ''}`
    : '-';

/** A Markdown table's lines: its header, the rule under it, a line per row. */
const markdownTable = (header: readonly string[], rows: readonly (readonly string[])[]): string[] => [
  `| ${header.join(' | ')} |`,
  `| ${header.map(() => '---').join(' | ')} |`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
];

const columns = [
  'policy',
  'player',
  'CMCD',
  'sessions',
  'mean bitrate (Mbit/s)',
  'switches/min',
  'startup (ms)',
  'rebuffering chance (%)',
  'rebuffers/min',
  'abandoned/session',
  'throttled retrans. (%)',
  'retrans. after startup (%)',
  'probe queueing p95 (ms)',
  'p95 after startup (ms)',
  'after startup (s)',
];

function row(c: CellSummary): string[] {
  return [
    c.cell.policy.label,
    c.cell.player,
    c.cell.cmcd ? 'on' : 'off',
    `${c.sessions}${c.tooFew ? ' (too few)' : ''}` +
      `${c.neverStarted > 0 ? `, ${c.neverStarted} never started` : ''}` +
      `${c.failedSessions > 0 ? `, ${c.failedSessions} failed` : ''}`,
    est(c.meanBitrateMbps),
    est(c.switchesPerMinute, 1),
    est(c.startupMs, 0),
    est(c.rebufferChancePercent, 0),
    est(c.rebufferPerMinute, 2),
    est(c.abandonedPerSession, 2),
    est(c.throttledRetransmissionPercent, 3),
    est(c.retransmissionAfterStartupPercent, 2),
    est(c.queueingP95Ms, 1),
    est(c.queueingP95AfterStartupMs, 1),
    est(c.afterStartupSec, 0),
  ];
}

export interface MatrixReport {
  readonly markdown: string[];
  readonly sections: ReportSection[];
  /** What the machine did while the reported sessions ran, from their records. */
  readonly conditions: RunConditions;
}

/**
 * How many labs ran at once, from the sessions' records: a warning when they shared cores (or may have), since a
 * browser's startup and the probe's queueing are then the harness's contention as much as the policy's.
 */
function labsAtOnceNote(conditions: RunConditions): string[] {
  const { labsAtOnce, labsUnrecorded, sessions, cores } = conditions;
  if (sessions === 0) return [];
  if (sharedCoresReason(conditions) === null) {
    // Said as plainly as the shared case, so a reader knows the startup and queueing figures stand.
    return [
      '',
      `Labs ran one at a time${cores === null ? '' : ` on ${cores} cores`} (every session's record says so): ` +
        `startup and the probe's queueing are judged from this run.`,
    ];
  }
  const ran =
    labsAtOnce !== null && labsAtOnce > 1
      ? `Labs ran up to ${labsAtOnce} at once${cores === null ? '' : ` on ${cores} cores`}`
      : 'Labs may have run several at once';
  const unrecorded =
    labsUnrecorded > 0
      ? ` (${labsUnrecorded} of ${sessions} sessions were written before their records said how many labs ran ` +
        `beside them)`
      : '';
  return [
    '',
    `${ran}${unrecorded}: with labs sharing cores a browser's startup came later under the paced policies than ` +
      `under bulk in every such cell measured (up to 450 ms), and 16 ms apart one lab at a time ` +
      `(bench/results/qoe-startup-probe.md). Read startup here as the harness's contention, and the probe's ` +
      `queueing too (the delay line and the ping wait behind the browsers); judge both from a run with ` +
      `\`--parallel 1\`.`,
  ];
}

export function matrixReport(
  data: MatrixData,
  options: {
    readonly defaultPolicy: string;
    readonly sessionSeconds: number;
    readonly commandLine: string;
  },
): MatrixReport {
  // A section per link and start (mid-asset starts after the link's own).
  const places = placesOf(data.cells);
  const goals = goalChecks(data, options.defaultPolicy);
  const conditions = runConditions([...data.runsByCell.values()].flat());
  const agree = agreements(data.cells);
  const sammy = sammyAgainstBulk(data);
  const md: string[] = [
    '',
    `Command: \`${options.commandLine}\``,
    '',
    `Each session is ${options.sessionSeconds} s on a fresh lab of its own; session i ` +
      `of every cell has the same link draw. A cell "from N s" starts its players N s into ` +
      `the asset (dash.js, Shaka: the start time given to load; hls.js: startPosition; the ` +
      `simulator: the segment that holds it), as a viewer who resumes or follows a link ` +
      `does; its startup window is counted from there. Intervals are 95 %: bootstrap over sessions ` +
      `(bitrate, switches, startup, rebuffers per minute, abandoned requests) or over ` +
      `sessions' runs (retransmissions, probe queueing), Wilson for rebuffering chance. ` +
      `Cells with fewer than ${minimumSessions} sessions say "too few" instead of a ` +
      `verdict. Mean bitrate is what each player reports rendering (dash.js: the video ` +
      `rung's declared bitrate; hls.js: the variant's BANDWIDTH, video and audio; the ` +
      `simulator: the video rung's), so compare within a player. Probe: ping from a host ` +
      `beside the viewer through the same bottleneck, every 100 ms; "after startup" leaves ` +
      `out the time before the first request for a segment past the first 35 s of the ` +
      `presentation (full speed under every policy). "Throttled retrans." counts each ` +
      `policy's own paced phase (its denominator differs by policy: a phase that begins ` +
      `after a response's bytes went out counts their retransmissions over few segments); ` +
      `"retrans. after startup" counts every response begun after the startup window, the ` +
      `same bytes under every policy, bulk's included.`,
    ...labsAtOnceNote(conditions),
    '',
    '## Goals',
    '',
    '| goal | where | measured | verdict |',
    '| --- | --- | --- | --- |',
    ...goals.map((g) => `| ${g.goal} | ${g.scope} | ${g.measured} | ${g.verdict} |`),
  ];
  const sections: ReportSection[] = [
    {
      heading: 'Goals',
      text:
        'Each goal of the issue, where it was measured, the figure with its interval, and ' +
        'the verdict ("too few" below the stated sample size).',
      table: {
        columns: ['goal', 'where', 'measured', 'verdict'],
        rows: goals.map((g) => [g.goal, g.scope, g.measured, g.verdict]),
      },
    },
  ];
  for (const { link, startSec, title } of places) {
    const cells = data.cells.filter((c) => c.cell.link === link && c.cell.startSec === startSec);
    md.push('', `## ${title}`, '', matrixLinks[link]?.description ?? '', '', ...markdownTable(columns, cells.map(row)));
    const points = cells
      .filter((c) => Number.isFinite(c.meanBitrateMbps.value) && Number.isFinite(c.queueingP95AfterStartupMs.value))
      .map((c) => ({
        policy: c.cell.policy.label + (c.cell.cmcd ? ' +CMCD' : ''),
        player: c.cell.player,
        bitrate: c.meanBitrateMbps.value,
        bitrateLow: c.meanBitrateMbps.low,
        bitrateHigh: c.meanBitrateMbps.high,
        queueing: c.queueingP95AfterStartupMs.value,
        rebuffer: c.rebufferChancePercent.value,
      }));
    sections.push({
      heading: `${title}: what viewers saw against what the network saw`,
      text:
        `${matrixLinks[link]?.description ?? ''}. Each mark is a cell: its mean bitrate ` +
        `(with its interval) against the probe's p95 queueing delay after startup. Up and to ` +
        `the left is better: the viewer keeps its bitrate while an interactive flow beside ` +
        `it waits less.`,
      chart: {
        $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
        width: 520,
        height: 300,
        data: { values: points },
        facet: { column: { field: 'player', type: 'nominal' } },
        spec: {
          width: 300,
          height: 260,
          layer: [
            {
              mark: { type: 'rule' },
              encoding: {
                x: { field: 'queueing', type: 'quantitative' },
                y: { field: 'bitrateLow', type: 'quantitative' },
                y2: { field: 'bitrateHigh' },
                color: { field: 'policy', type: 'nominal' },
              },
            },
            {
              mark: { type: 'point', filled: true, size: 80 },
              encoding: {
                x: { field: 'queueing', type: 'quantitative', title: 'probe queueing p95 after startup (ms)' },
                y: { field: 'bitrate', type: 'quantitative', title: 'mean bitrate (Mbit/s)', scale: { zero: false } },
                color: { field: 'policy', type: 'nominal' },
                tooltip: [
                  { field: 'policy' },
                  { field: 'bitrate', format: '.2f' },
                  { field: 'queueing', format: '.1f' },
                  { field: 'rebuffer', title: 'rebuffering chance %', format: '.0f' },
                ],
              },
            },
          ],
        },
      },
    });
    sections.push({ heading: `${title}: every cell`, table: { columns, rows: cells.map(row) } });
    const bars = cells.map((c) => ({
      cell: `${c.cell.policy.label}${c.cell.cmcd ? ' +CMCD' : ''}`,
      player: c.cell.player,
      chance: c.rebufferChancePercent.value,
      low: c.rebufferChancePercent.low,
      high: c.rebufferChancePercent.high,
    }));
    sections.push({
      heading: `${title}: rebuffering chance`,
      text: 'Share of sessions with at least one rebuffer, with its Wilson interval.',
      chart: {
        $schema: 'https://vega.github.io/schema/vega-lite/v5.json',
        data: { values: bars },
        facet: { column: { field: 'player', type: 'nominal' } },
        spec: {
          width: 260,
          height: 200,
          layer: [
            {
              mark: 'bar',
              encoding: {
                x: { field: 'cell', type: 'nominal', title: null },
                y: {
                  field: 'chance',
                  type: 'quantitative',
                  title: 'rebuffering chance (%)',
                  scale: { domain: [0, 100] },
                },
              },
            },
            {
              mark: 'rule',
              encoding: {
                x: { field: 'cell', type: 'nominal' },
                y: { field: 'low', type: 'quantitative' },
                y2: { field: 'high' },
              },
            },
          ],
        },
      },
    });
  }
  if (sammy.length > 0) {
    // A change against nothing (bulk retransmitted no segment) has no value: say so rather than print infinity.
    const change = (e: Estimate) =>
      Number.isFinite(e.value) && Number.isFinite(e.low) && Number.isFinite(e.high)
        ? `${e.value >= 0 ? '+' : ''}${est(e, 1)} %`
        : 'no figure (bulk: none)';
    const sammyColumns = [
      'where',
      'player',
      'sessions sammy / bulk',
      'retransmissions after startup',
      'probe queueing p95',
    ];
    const sammyRows = sammy.map((c) => [
      c.place.title,
      c.player,
      `${c.sessions.sammy} / ${c.sessions.bulk}`,
      change(c.retransmissionChangePercent),
      change(c.queueingP95ChangePercent),
    ]);
    const text =
      "Sammy's own change against unpaced delivery (every response begun after the startup window; the probe's " +
      "queueing p95 after startup), to read beside the paper's production A/B test (Spang et al., SIGCOMM'23, " +
      'section 5: retransmissions -35.5 % [-37.8, -33.4], RTT -13.7 % [-16.4, -12.3]). Where m x the top rung ' +
      "exceeds the link, Sammy's rate does not hold the flow back and it delivers as bulk does.";
    md.push('', "## Sammy against bulk, beside the paper's", '', text, '', ...markdownTable(sammyColumns, sammyRows));
    sections.push({
      heading: "Sammy against bulk, beside the paper's",
      text,
      table: { columns: sammyColumns, rows: sammyRows },
    });
  }
  // Without simulator cells there is nothing to compare.
  if (agree.length > 0) {
    const agreeRows = agree.map((a) => [
      placeTitle(a.link, a.startSec),
      a.policy + (a.cmcd ? ' +CMCD' : ''),
      `${a.sessions.sim} / ${a.sessions.browser}`,
      `${a.rebufferChanceDiffPoints >= 0 ? '+' : ''}${a.rebufferChanceDiffPoints.toFixed(0)} ` +
        `points${a.within.rebufferChance ? '' : ' (beyond ±5)'}`,
      `${a.meanBitrateRatio.toFixed(2)}${a.within.meanBitrate ? '' : ' (beyond ±10 %)'}`,
      a.startupRatio.toFixed(2),
    ]);
    const agreeColumns = [
      'link',
      'policy',
      'sessions sim / dash.js',
      'rebuffering chance, sim - dash.js',
      'mean bitrate, sim / dash.js',
      'startup, sim / dash.js',
    ];
    md.push(
      '',
      '## The simulator against dash.js',
      '',
      `Same links, same policies. Within ±5 points of rebuffering ` +
        `chance: ${agree.filter((a) => a.within.rebufferChance).length} of ${agree.length} ` +
        `cells; within ±10 % of mean ` +
        `bitrate: ${agree.filter((a) => a.within.meanBitrate).length} of ${agree.length}.`,
      '',
      ...markdownTable(agreeColumns, agreeRows),
    );
    sections.push({
      heading: 'The simulator against dash.js',
      text:
        `Same links, same policies: how far player-sim's live players agree with dash.js in ` +
        `Chromium (within ±5 points of rebuffering chance ` +
        `in ${agree.filter((a) => a.within.rebufferChance).length} of ${agree.length} cells, ` +
        `±10 % of mean bitrate in ${agree.filter((a) => a.within.meanBitrate).length}).`,
      table: { columns: agreeColumns, rows: agreeRows },
    });
  }
  return { markdown: md, sections, conditions };
}

/**
 * Each link's "what viewers saw against what the network saw" chart as a standalone SVG beside the
 * results (`<dir>/<name>-<link>.svg`), for pages that show a picture; returns the files written.
 */
export async function writeMatrixSvgs(dir: string, name: string, report: MatrixReport): Promise<string[]> {
  const written: string[] = [];
  for (const section of report.sections) {
    const place = section.heading.match(/^(.+): what viewers saw against what the network saw$/)?.[1];
    if (place === undefined || section.chart === undefined) continue;
    const path = join(dir, `${name}-${place.replaceAll(' ', '-')}.svg`);
    await writeFile(path, await renderVegaLiteSvg(section.chart));
    written.push(path);
  }
  return written;
}

export async function writeMatrixHtml(path: string, report: MatrixReport, subtitle: string): Promise<void> {
  await writeFile(path, await renderReportPage({ title: 'Trickle QoE matrix', subtitle, sections: report.sections }));
}
