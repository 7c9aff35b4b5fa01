/**
 * Runs the QoE matrix: every session of every cell on a fresh lab of its own (session i of every
 * cell on the same link draw), up to `parallel` labs at once. Per session: the origin
 * (`startOrigin`, as `trickle serve`, with the cell's policy) on the origin side, the player
 * (dash.js or hls.js in Chromium, or the simulator's live player) on the player side, a ping
 * probe from the cross host through the same bottleneck, and the origin's flow records. Each
 * finished session slot is written to `<work>/runs/<cell>/<index>.json` at once (with the most
 * labs that ran beside it, the machine's cores and its harness retries, since a report of the
 * directory may come from another invocation), so an interrupted matrix resumes where it
 * stopped (`fresh` discards what is there); beside it the
 * evidence to explain a session by: the origin's flow records (`<index>.flows.jsonl`) and the
 * browser's own record of the session, its events and rendered bitrates (`<index>.player.json`).
 */
import { once } from 'node:events';
import { copyFile, mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join, resolve } from 'node:path';
import { buildAssetIndex, type AssetIndex, type FlowRecord } from '@trickle/origin';
import { defaultDeliveryConfig } from '@trickle/origin/rules';
import { E2eError } from '../errors.js';
import { readFlowLog, startViewers } from '../experiment/run.js';
import { labDown, labUp, type Lab } from '../lab/lab.js';
import { startProbe } from '../lab/measure.js';
import { queueingDelaysMs } from '../lab/analysis/flows.js';
import { assetPath } from '../qoe/asset-path.js';
import { originPort, startLabOrigin } from '../qoe/run.js';
import { playSession } from '../qoe/session.js';
import { asSessionResult } from '../qoe/session-record.js';
import { summarizeCell, type MatrixData, type MatrixRunData, type MatrixSession, type RunNetwork } from './analysis.js';
import { cellsOf, matrixLinks, runKey, runsOf, type MatrixOptions, type MatrixRun } from './config.js';

export interface MatrixProgress {
  readonly done: number;
  readonly total: number;
  readonly key: string;
  readonly stage: 'started' | 'finished' | 'resumed' | 'failed';
  readonly error?: string;
}

export interface MatrixRunnerOptions extends MatrixOptions {
  /** Where session slots are kept (and resumed from). */
  readonly work: string;
  /** Labs at once. */
  readonly parallel: number;
  readonly fresh?: boolean;
  /** Analyse the session slots already in `work`, run nothing. */
  readonly reportOnly?: boolean;
  /** Harness retries of a session slot (the browser or the lab failed, never because of what the player did). */
  readonly retries?: number;
  readonly onProgress?: (progress: MatrixProgress) => void;
}

const startupSecOf = (options: MatrixOptions) => options.startupSec ?? defaultDeliveryConfig.startupSec;

const runFile = (work: string, run: MatrixRun) =>
  join(work, 'runs', run.cell.id.replaceAll('/', '_').replaceAll('+', '-'), `${run.index}.json`);

async function readRun(path: string): Promise<MatrixRunData | undefined> {
  try {
    const data = JSON.parse(await readFile(path, 'utf8')) as MatrixRunData;
    return data.version === 1 ? data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * When the session's startup window ended: the first request for a segment past the first `startupSec` of media
 * from where playback began (`fromSec`; the presentation's start for most cells).
 */
function startupWindowEndMs(
  records: readonly FlowRecord[],
  index: AssetIndex,
  startupSec: number,
  fromSec: number,
): number {
  let end = Number.POSITIVE_INFINITY;
  for (const record of records) {
    const rendition = index.renditions.find((r) => r.id === record.rendition);
    const segment = rendition?.segments.find((s) => s.number === record.segmentNumber);
    if (rendition === undefined || segment === undefined) continue;
    if (segment.startSec - (rendition.segments[0]?.startSec ?? 0) >= fromSec + startupSec)
      end = Math.min(end, record.startedAtEpochMs);
  }
  return end;
}

function networkOf(
  records: readonly FlowRecord[],
  probe: readonly { atEpochMs: number; rttMs: number }[],
  startupEndMs: number,
  sessionEndEpochMs: number,
  bottleneckDrops: number,
): RunNetwork {
  const throttled = records.filter((r) => r.throttling !== null && r.throttling.dataSegmentsOut !== null);
  const afterStartup = records.filter((r) => r.startedAtEpochMs >= startupEndMs && r.dataSegmentsOut !== null);
  const delays = queueingDelaysMs(probe.map((s) => s.rttMs));
  const round = (ms: number) => Math.round(ms * 10) / 10;
  return {
    flows: records.length,
    throttledFlows: throttled.length,
    throttledRetransmittedSegments: throttled.reduce((sum, r) => sum + (r.throttling!.retransmittedSegments ?? 0), 0),
    throttledDataSegments: throttled.reduce((sum, r) => sum + r.throttling!.dataSegmentsOut!, 0),
    afterStartupRetransmittedSegments: afterStartup.reduce((sum, r) => sum + (r.retransmittedSegments ?? 0), 0),
    afterStartupDataSegments: afterStartup.reduce((sum, r) => sum + r.dataSegmentsOut!, 0),
    queueingMs: delays.map(round),
    queueingAfterStartupMs: delays.filter((_, i) => probe[i]!.atEpochMs >= startupEndMs).map(round),
    afterStartupSec: Number.isFinite(startupEndMs) ? Math.max(0, round((sessionEndEpochMs - startupEndMs) / 1000)) : 0,
    bottleneckDrops,
  };
}

/** Responses aborted mid-body at least a second before the session ended: requests the player abandoned. */
function abandonedBefore(records: readonly FlowRecord[], sessionEndEpochMs: number): number {
  return records.filter((r) => !r.completed && r.startedAtEpochMs + r.durationMs < sessionEndEpochMs - 1000).length;
}

async function executeRun(
  options: MatrixRunnerOptions,
  run: MatrixRun,
  lab: Lab,
  workDir: string,
  index: AssetIndex,
  evidence: string,
): Promise<MatrixRunData> {
  const { cell } = run;
  const link = matrixLinks[cell.link]!;
  const originUrl = `http://${lab.address('origin')}:${originPort}`;
  const flowLog = join(workDir, 'flows.jsonl');
  await rm(flowLog, { force: true });
  const origin = await startLabOrigin(lab, {
    media: resolve(options.media),
    logLevel: 'warn',
    flows: { log: flowLog, keep: 0 },
    delivery: {
      policy: cell.policy.policy,
      startupSec: startupSecOf(options),
      transport: { congestionControl: cell.policy.congestionControl ?? options.congestionControl },
    },
  });
  try {
    const before = (await lab.status()).bottleneck.down.drops;
    const probe = startProbe(lab, { from: 'cross', intervalMs: options.probeIntervalMs });
    const startedAt = new Date();
    const startMs = performance.now();
    const simulated = cell.player === 'sim' ? link.viewers : link.viewers - 1;
    const viewers =
      simulated > 0
        ? startViewers(lab, {
            originUrl,
            asset: options.asset,
            dash: simulated,
            progressive: 0,
            sessionSeconds: options.sessionSeconds,
            startSpreadMs: simulated > 1 ? 5000 : 0,
            seed: run.index + 1,
            abr: 'dynamic',
            cmcd: cell.cmcd,
            maxBufferSec: 30,
            startSec: cell.startSec,
            progressiveTable: undefined,
          }).reports
        : Promise.resolve([]);
    const browser =
      cell.player === 'sim'
        ? Promise.resolve(undefined)
        : playSession(
            run.index,
            {
              url: `${originUrl}${assetPath(options.asset, cell.player)}`,
              player: cell.player,
              seconds: options.sessionSeconds,
              namespace: lab.namespace('player'),
              cmcd: cell.cmcd,
              startSec: cell.startSec,
            },
            1,
          );
    const [simReports, browserRecord] = await Promise.all([viewers, browser]);
    const sessionEndEpochMs = Date.now();
    await probe.stop();
    const drops = (await lab.status()).bottleneck.down.drops - before;
    origin.kill('SIGTERM');
    await once(origin, 'exit');
    const records = await readFlowLog(flowLog);
    await mkdir(join(evidence, '..'), { recursive: true });
    await copyFile(flowLog, `${evidence}.flows.jsonl`);
    if (browserRecord !== undefined) await writeFile(`${evidence}.player.json`, `${JSON.stringify(browserRecord)}\n`);
    // One viewer on the link: every response is its own. Several: they cannot be told apart by address.
    const alone = link.viewers === 1;
    const sessions: MatrixSession[] = [];
    if (browserRecord !== undefined)
      sessions.push({
        result: asSessionResult(browserRecord),
        abandonedRequests: alone ? abandonedBefore(records, sessionEndEpochMs) : null,
        errors: browserRecord.errors,
      });
    if (cell.player === 'sim') {
      for (const report of simReports) {
        sessions.push(
          'result' in report
            ? {
                result: report.result,
                abandonedRequests: alone ? abandonedBefore(records, sessionEndEpochMs) : null,
                errors: [],
              }
            : { result: failedSession(options.sessionSeconds), abandonedRequests: null, errors: [report.error] },
        );
      }
    }
    return {
      version: 1,
      key: runKey(run),
      cell,
      index: run.index,
      startedAt: startedAt.toISOString(),
      durationMs: Math.round(performance.now() - startMs),
      sessions,
      network: networkOf(
        records,
        probe.samples,
        startupWindowEndMs(records, index, startupSecOf(options), cell.startSec),
        sessionEndEpochMs,
        drops,
      ),
    };
  } finally {
    if (origin.exitCode === null) origin.kill('SIGKILL');
  }
}

/** A simulated viewer whose session failed (the origin did not answer): it never started. */
function failedSession(sessionSec: number): MatrixSession['result'] {
  return {
    startupDelayMs: null,
    rebuffers: [],
    sessionSec,
    playedSec: 0,
    stalledSec: 0,
    meanBitrateBps: 0,
    switches: 0,
    bytesDownloaded: 0,
    bytesWasted: 0,
    abandoned: true,
    segments: 0,
  };
}

/** The runs on disk, by cell. */
export async function readMatrixRuns(work: string): Promise<Map<string, MatrixRunData[]>> {
  const byCell = new Map<string, MatrixRunData[]>();
  const root = join(work, 'runs');
  const dirs = await readdir(root).catch(() => [] as string[]);
  for (const dir of dirs) {
    for (const file of (await readdir(join(root, dir)).catch(() => [] as string[])).filter((name) =>
      /^\d+\.json$/.test(name),
    )) {
      const read = await readRun(join(root, dir, file));
      if (read === undefined) continue;
      // Sessions written before cells had a start began at the beginning.
      const data = { ...read, cell: { ...read.cell, startSec: read.cell.startSec ?? 0 } };
      byCell.set(data.cell.id, [...(byCell.get(data.cell.id) ?? []), data]);
    }
  }
  for (const runs of byCell.values()) runs.sort((a, b) => a.index - b.index);
  return byCell;
}

export async function runMatrix(options: MatrixRunnerOptions): Promise<MatrixData> {
  if (!Number.isInteger(options.sessions) || options.sessions < 1)
    throw new E2eError('E2E_ERR_OPTIONS', `sessions must be a positive integer, not ${options.sessions}`);
  if (!Number.isInteger(options.parallel) || options.parallel < 1 || options.parallel > 9)
    throw new E2eError('E2E_ERR_OPTIONS', `parallel must be an integer from 1 to 9, not ${options.parallel}`);
  const cells = cellsOf(options);
  const runs = runsOf(cells, options.sessions);
  if (options.fresh === true) await rm(join(options.work, 'runs'), { recursive: true, force: true });
  await mkdir(options.work, { recursive: true });
  // Sessions of one work directory are comparable only under the same session setup.
  const setup = {
    sessionSeconds: options.sessionSeconds,
    startupSec: startupSecOf(options),
    congestionControl: options.congestionControl,
    probeIntervalMs: options.probeIntervalMs,
    asset: options.asset,
  };
  const marker = join(options.work, 'matrix.json');
  const existing = await readFile(marker, 'utf8').then(
    (text) => JSON.parse(text) as unknown,
    () => undefined,
  );
  if (existing !== undefined && options.fresh !== true && JSON.stringify(existing) !== JSON.stringify(setup)) {
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `${options.work} holds sessions of another setup (${JSON.stringify(existing)}); ` +
        `give another --work, or --fresh to discard them`,
    );
  }
  await writeFile(marker, `${JSON.stringify(setup)}\n`);
  const assetDir = join(resolve(options.media), options.asset);
  const index = await buildAssetIndex(options.asset, assetDir, {
    mpdFiles: ['manifest.mpd'],
    playlistFiles: ['master.m3u8'],
    mp4Files: ['progressive.mp4'],
  }).catch((error: unknown) => {
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `cannot index ${assetDir} (make the demo with "npx trickle media demo"): ${(error as Error).message}`,
    );
  });
  // A session that runs out of media is not the steady state it is meant to measure.
  for (const startSec of options.starts ?? [0]) {
    if (options.sessionsMayEndWithMedia === true || startSec + options.sessionSeconds <= index.durationSec) continue;
    const neededSec = Math.ceil((startSec + options.sessionSeconds) / 60) * 60;
    throw new E2eError(
      'E2E_ERR_OPTIONS',
      `asset "${options.asset}" holds ${index.durationSec.toFixed(0)} s of media: sessions of ` +
        `${options.sessionSeconds} s from ${startSec} s need ${startSec + options.sessionSeconds} s ` +
        `(make a longer one: npx trickle media demo --out ${join(options.media, `demo-${neededSec}`)} ` +
        `--duration ${neededSec}, then --asset demo-${neededSec})`,
    );
  }
  let done = 0;
  const pending: MatrixRun[] = [];
  for (const run of runs) {
    if ((await readRun(runFile(options.work, run))) !== undefined) {
      done++;
      options.onProgress?.({ done, total: runs.length, key: runKey(run), stage: 'resumed' });
    } else pending.push(run);
  }
  // The labs running now, each with the most that ran at once since it came up: a session records it, since labs
  // sharing the cores skew what it measures, and the invocation that reports a work directory cannot know it.
  const running = new Set<{ peak: number }>();
  const labStarted = () => {
    const lab = { peak: 0 };
    running.add(lab);
    for (const other of running) other.peak = Math.max(other.peak, running.size);
    return lab;
  };
  const slot = async (slotIndex: number) => {
    const labName = `qm${slotIndex}`;
    const workDir = join(options.work, 'slots', String(slotIndex));
    await mkdir(workDir, { recursive: true });
    for (let run = pending.shift(); run !== undefined; run = pending.shift()) {
      options.onProgress?.({ done, total: runs.length, key: runKey(run), stage: 'started' });
      for (let attempt = 0; ; attempt++) {
        let lab: Lab | undefined;
        const labsAtOnce = labStarted();
        try {
          await labDown(labName);
          lab = await labUp(labName, matrixLinks[run.cell.link]!.spec(run.index), { cross: true });
          const file = runFile(options.work, run);
          const data: MatrixRunData = {
            ...(await executeRun(options, run, lab, workDir, index, file.replace(/\.json$/, ''))),
            labsAtOnce: labsAtOnce.peak,
            cores: availableParallelism(),
            harnessRetries: attempt,
          };
          await writeFile(file, `${JSON.stringify(data)}\n`);
          done++;
          options.onProgress?.({ done, total: runs.length, key: runKey(run), stage: 'finished' });
          break;
        } catch (error) {
          const harness =
            error instanceof E2eError &&
            ['E2E_ERR_HARNESS', 'E2E_ERR_BROWSER_LAUNCH', 'E2E_ERR_LAB', 'E2E_ERR_EXPERIMENT'].includes(error.code);
          options.onProgress?.({
            done,
            total: runs.length,
            key: runKey(run),
            stage: 'failed',
            error: (error as Error).message,
          });
          if (!harness || attempt >= (options.retries ?? 2)) throw error;
        } finally {
          if (lab !== undefined) await labDown(labName);
          running.delete(labsAtOnce);
        }
      }
    }
  };
  if (options.reportOnly !== true)
    await Promise.all(
      Array.from({ length: Math.min(options.parallel, Math.max(1, pending.length)) }, (_, i) => slot(i)),
    );
  const byCell = await readMatrixRuns(options.work);
  const wanted = new Set(cells.map((c) => c.id));
  const runsByCell = new Map([...byCell].filter(([id]) => wanted.has(id)));
  // A report of what a work directory holds (several partial runs of one setup) leaves out the cells it holds nothing
  // of.
  const reported = options.reportOnly === true ? cells.filter((cell) => runsByCell.has(cell.id)) : cells;
  return { cells: reported.map((cell) => summarizeCell(cell, runsByCell.get(cell.id) ?? [])), runsByCell };
}
