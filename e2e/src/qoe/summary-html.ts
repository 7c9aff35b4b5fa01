/** The HTML summary of a `trickle e2e` run: the QoE figures, a table per session, and charts. */
import { writeFile } from 'node:fs/promises';
import { renderReportPage, type ReportSection } from '../report/vega-page.js';
import type { E2eRunResult } from './session-record.js';

export interface RunDescription {
  readonly date: string;
  readonly url: string;
  readonly player: string;
  readonly policy: string | null;
  readonly link: string | null;
  readonly sessions: number;
  readonly seconds: number | null;
  readonly concurrency: number;
}

const mbit = (bps: number | null) => (bps === null ? null : Math.round(bps / 1e4) / 100);

export function summarySections(result: E2eRunResult): ReportSection[] {
  const a = result.aggregates;
  const figures: ReportSection = {
    heading: 'QoE over all sessions',
    text:
      `Rebuffering chance is the share of sessions with at least one rebuffer; ` +
      `rebuffering frequency is rebuffers per second of session, pooled over sessions (the ` +
      `Trickle paper's definitions, section 5.4). ` +
      (a.rebufferChance === 0 ? 'No session rebuffered.' : `${a.rebufferChance.toFixed(1)}% of sessions rebuffered.`),
    table: {
      columns: [
        'sessions',
        'rebuffering chance %',
        'rebuffering frequency /s',
        'rebuffer ratio',
        'startup mean ms',
        'startup p95 ms',
        'never started',
        'mean bitrate Mbit/s',
        'switches/min',
        'video freezes',
        'failed sessions',
      ],
      rows: [
        [
          a.sessions,
          a.rebufferChance,
          a.rebufferFrequency,
          a.rebufferRatio,
          Math.round(a.startupDelayMs.mean),
          Math.round(a.startupDelayMs.p95),
          a.neverStarted,
          mbit(a.meanBitrateBps),
          a.switchesPerMinute,
          a.videoFreezes,
          a.failedSessions,
        ],
      ],
    },
  };
  const sessions: ReportSection = {
    heading: 'Sessions',
    table: {
      columns: [
        '#',
        'end',
        'session s',
        'startup ms',
        'rebuffers',
        'stalled s',
        'machine-held s',
        'watchdog stalls',
        'freezes',
        'mean Mbit/s',
        'switches',
        'dropped frames',
        'attempts',
        'errors',
      ],
      rows: result.sessions.map((s) => [
        s.index,
        s.endReason,
        Math.round(s.sessionMs / 100) / 10,
        s.startupMs === null ? null : Math.round(s.startupMs),
        s.rebuffers.length,
        Math.round(s.rebuffers.reduce((sum, r) => sum + r.durationMs, 0) / 100) / 10,
        Math.round(s.slowPlayMs / 100) / 10,
        s.stalls.length,
        s.videoFreezes.length,
        mbit(s.meanBitrateBps),
        s.switches,
        s.droppedFrames,
        s.attempts,
        s.errors.join('; ') || null,
      ]),
    },
  };
  const timeline = result.sessions.flatMap((s) =>
    s.bitrateTimeline.map((p) => ({ session: `#${s.index}`, seconds: p.atMs / 1000, mbit: p.bitrateBps / 1e6 })),
  );
  // Each step holds until the session ends.
  const ends = result.sessions
    .filter((s) => s.bitrateTimeline.length > 0)
    .map((s) => ({
      session: `#${s.index}`,
      seconds: s.sessionMs / 1000,
      mbit: s.bitrateTimeline.at(-1)!.bitrateBps / 1e6,
    }));
  const rebuffers = result.sessions.flatMap((s) =>
    s.rebuffers.map((r) => ({ session: `#${s.index}`, from: r.startMs / 1000, to: (r.startMs + r.durationMs) / 1000 })),
  );
  const bitrate: ReportSection = {
    heading: 'Rendered bitrate over time',
    text:
      'The bitrate of what the player rendered, per session, from the player start; ' +
      'shaded spans are rebuffers. A line that stays flat below the top rung is an ABR ' +
      'that did not see enough throughput to switch up.',
    chart: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: 900,
      height: 260,
      layer: [
        ...(rebuffers.length === 0
          ? []
          : [
              {
                data: { values: rebuffers },
                mark: { type: 'rect', opacity: 0.25, color: '#d62728' },
                encoding: { x: { field: 'from', type: 'quantitative' }, x2: { field: 'to' } },
              },
            ]),
        {
          data: { values: [...timeline, ...ends] },
          mark: { type: 'line', interpolate: 'step-after', point: true },
          encoding: {
            x: { field: 'seconds', type: 'quantitative', title: 'seconds since the player started' },
            y: { field: 'mbit', type: 'quantitative', title: 'rendered bitrate, Mbit/s' },
            color: { field: 'session', type: 'nominal' },
          },
        },
      ],
    },
  };
  const startup: ReportSection = {
    heading: 'Startup delay per session',
    chart: {
      $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
      width: 900,
      height: 180,
      data: {
        values: result.sessions
          .filter((s) => s.startupMs !== null)
          .map((s) => ({ session: `#${s.index}`, ms: s.startupMs })),
      },
      mark: 'bar',
      encoding: {
        x: { field: 'session', type: 'nominal', sort: null },
        y: { field: 'ms', type: 'quantitative', title: 'startup, ms' },
      },
    },
  };
  return [figures, sessions, bitrate, startup];
}

export async function writeSummaryHtml(path: string, run: RunDescription, result: E2eRunResult): Promise<void> {
  const subtitle =
    `${run.player} playing ${run.url}` +
    `${run.policy === null ? '' : ` (policy ${run.policy})`} ` +
    `${run.link === null ? 'on this host' : `across the lab link "${run.link}"`}; ` +
    `${run.sessions} ` +
    `session(s)${run.seconds === null ? ' to the end' : ` of ${run.seconds} s`}, ${run.concurrency} ` +
    `at a time; ${run.date}.`;
  await writeFile(
    path,
    await renderReportPage({ title: 'Trickle e2e QoE', subtitle, sections: summarySections(result) }),
  );
}
