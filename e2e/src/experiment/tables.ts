/**
 * The experiment's CSVs: one row per response (flows.csv), per viewer session (sessions.csv) and per group
 * (groups.csv).
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { catchUpsOf } from '@trickle/origin';
import type { GroupRow } from './analysis.js';
import type { RunData } from './run-data.js';
import type { ExperimentResults } from './analysis.js';
import type { Estimate } from './statistics.js';

function csvCell(value: unknown): string {
  if (value === null || value === undefined || (typeof value === 'number' && !Number.isFinite(value))) return '';
  const text = String(value);
  return /[",\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

export function toCsv(header: readonly string[], rows: readonly (readonly unknown[])[]): string {
  return `${[header.join(','), ...rows.map((row) => row.map(csvCell).join(','))].join('\n')}\n`;
}

const estimateColumns = (name: string) => [name, `${name}Low`, `${name}High`];
const estimateCells = (e: Estimate) => [e.value, e.low, e.high];

const groupEstimates: readonly [string, (row: GroupRow) => Estimate][] = [
  ['srttAtStartupEndMs', (r) => r.srttAtStartupEndMs],
  ['startupGoodputMbps', (r) => r.startupGoodputMbps],
  ['throttledGoodputMbps', (r) => r.throttledGoodputMbps],
  ['goodputToTarget', (r) => r.goodputToTarget],
  ['goodputToPaceRate', (r) => r.goodputToPaceRate],
  ['retransmissionRatePercent', (r) => r.retransmissionRatePercent],
  ['retransmissionImprovementPercent', (r) => r.retransmissionImprovementPercent],
  ['wholeResponseRetransmissionRatePercent', (r) => r.wholeResponseRetransmissionRatePercent],
  ['srttThrottledMs', (r) => r.srttThrottledMs],
  ['srttImprovementPercent', (r) => r.srttImprovementPercent],
  ['srttEndMs', (r) => r.srttEndMs],
  ['rebufferChancePercent', (r) => r.rebufferChancePercent],
  ['rebufferFrequencyPerSec', (r) => r.rebufferFrequencyPerSec],
];

export async function writeTables(out: string, results: ExperimentResults, runs: readonly RunData[]): Promise<void> {
  const flowRows = runs.flatMap((run) => {
    const captures = new Map(run.captures.map((c) => [c.recordId, c]));
    return run.records.map((r) => {
      const c = captures.get(r.id);
      return [
        run.profile,
        run.id,
        r.id,
        r.connectionId,
        r.group,
        r.policy,
        r.role,
        r.rendition,
        r.segmentNumber,
        r.status,
        r.completed,
        r.bytes,
        r.durationMs,
        r.startup.goodputBps,
        r.throttling?.goodputBps,
        r.targetRateBps?.mean,
        r.throttledGoodputToTarget,
        r.retransmissionRate,
        r.throttling?.retransmissionRate,
        r.srttAtStartupEndUs,
        r.srttUs,
        r.minRttUs,
        catchUpsOf(r),
        r.backend,
        c?.dataPackets,
        c?.retransmittedPackets,
        c?.throttledBursts.length,
        c === undefined || c.bursts.length === 0 ? undefined : Math.max(...c.bursts),
        c?.lossPhases.initialBurst,
        c?.lossPhases.ackClocking,
        c?.lossPhases.trailingAcks,
      ];
    });
  });
  await writeFile(
    join(out, 'flows.csv'),
    toCsv(
      [
        'profile',
        'run',
        'record',
        'connection',
        'group',
        'policy',
        'role',
        'rendition',
        'segment',
        'status',
        'completed',
        'bytes',
        'durationMs',
        'startupGoodputBps',
        'throttledGoodputBps',
        'targetRateBps',
        'throttledGoodputToTarget',
        'retransmissionRate',
        'throttledRetransmissionRate',
        'srttAtStartupEndUs',
        'srttUs',
        'minRttUs',
        'catchUps',
        'clampBackend',
        'capturedPackets',
        'capturedRetransmissions',
        'throttledBursts',
        'largestBurstPackets',
        'lossesInitialBurst',
        'lossesAckClocking',
        'lossesTrailingAcks',
      ],
      flowRows,
    ),
  );
  const sessionRows = runs.flatMap((run) => [
    ...run.viewers.map((v) => {
      const r = 'result' in v ? v.result : undefined;
      return [
        run.profile,
        run.id,
        v.kind,
        v.index,
        v.group,
        r?.startupDelayMs,
        r?.rebuffers.length,
        r?.stalledSec,
        r?.sessionSec,
        r?.playedSec,
        r?.meanBitrateBps,
        r?.switches,
        r?.bytesDownloaded,
        'error' in v ? v.error : '',
      ];
    }),
    ...run.browsers.map((b) => [
      run.profile,
      run.id,
      `browser-${b.player}`,
      b.index,
      '',
      b.startupMs,
      b.rebuffers.length,
      b.rebuffers.reduce((s, x) => s + x.durationMs, 0) / 1000,
      b.sessionMs / 1000,
      b.playedSeconds,
      b.meanBitrateBps,
      b.switches,
      '',
      b.errors.join('; '),
    ]),
  ]);
  await writeFile(
    join(out, 'sessions.csv'),
    toCsv(
      [
        'profile',
        'run',
        'kind',
        'index',
        'group',
        'startupDelayMs',
        'rebuffers',
        'stalledSec',
        'sessionSec',
        'playedSec',
        'meanBitrateBps',
        'switches',
        'bytesDownloaded',
        'error',
      ],
      sessionRows,
    ),
  );
  const groupRows = results.profiles.flatMap((p) =>
    p.kinds.flatMap((k) =>
      k.rows.map((r) => [
        p.profile,
        k.kind,
        r.group,
        r.policy,
        r.flows,
        r.connections,
        r.throttledFlows,
        r.sessions,
        r.burstsAtMost10Percent,
        r.goodputWithin3Percent,
        ...groupEstimates.flatMap(([, pick]) => estimateCells(pick(r))),
      ]),
    ),
  );
  await writeFile(
    join(out, 'groups.csv'),
    toCsv(
      [
        'profile',
        'kind',
        'group',
        'policy',
        'flows',
        'connections',
        'throttledFlows',
        'sessions',
        'burstsAtMost10Percent',
        'goodputWithin3Percent',
        ...groupEstimates.flatMap(([name]) => estimateColumns(name)),
      ],
      groupRows,
    ),
  );
}
