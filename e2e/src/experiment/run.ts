import { once } from 'node:events';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, cpus, hostname, release } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { ByteTimeMap, packageInput, readProgressiveLayout, type FlowRecord } from '@trickle/origin';
import { E2eError } from '../errors.js';
import { labDown, labUp, type Lab } from '../lab/lab.js';
import { startCapture, startProbe } from '../lab/measure.js';
import { startPeer, type Peer } from '../lab/traffic.js';
import { assetPath } from '../qoe/asset-path.js';
import { originPort, startLabOrigin } from '../qoe/run.js';
import { playSession } from '../qoe/session.js';
import type { SessionRecord } from '../qoe/session-record.js';
import { compassChecks, summarizeProfile, type ExperimentResults } from './analysis.js';
import { compareDesigns } from './design-comparison.js';
import { linkOf, type ExperimentConfig, type ExperimentPopulation, type ExperimentProfile } from './config.js';
import { drawLinks, linkPopulation, parseLinksCsv, type LinkDraw, type LinkPopulation } from '../lab/population.js';
import { populationUp } from '../lab/population-lab.js';
import { writeSummaryMarkdown } from './markdown.js';
import { writeExperimentReport } from './report.js';
import { responsesOfCapture, timeSequenceOf } from './responses.js';
import { runDataVersion, type ResponseCaptureSummary, type RunData, type TimeSequence } from './run-data.js';
import { writeTables } from './tables.js';
import type { ProgressiveTable, ViewerPlan, ViewerReport } from './viewers.js';

export interface PlannedRun {
  readonly id: string;
  readonly profile: string;
  readonly kind: 'mixed' | 'isolated';
  readonly seed: number;
  readonly group: string | null;
}

export interface ExperimentProgress {
  /** 0..1 over the whole experiment (runs already on disk count as done). */
  readonly fraction: number;
  readonly run: PlannedRun;
  readonly runIndex: number;
  readonly runs: number;
  readonly stage: 'starting' | 'playing' | 'analysing' | 'done' | 'resumed';
}

export interface ExperimentOptions {
  readonly config: ExperimentConfig;
  readonly out: string;
  /** Start over even if `out` holds finished runs of this experiment. */
  readonly fresh?: boolean;
  readonly labName?: string;
  readonly onProgress?: (progress: ExperimentProgress) => void;
  /** How the experiment was started, for summary.md (default: a generic command line). */
  readonly commandLine?: string;
  /** Told of work outside the runs (packaging the asset). */
  readonly onNote?: (what: string) => void;
}

export function planRuns(config: ExperimentConfig): PlannedRun[] {
  const runs: PlannedRun[] = [];
  for (const profile of config.profiles) {
    const seeds = profile.seeds ?? config.seeds;
    for (const seed of seeds)
      runs.push({ id: `mixed-s${seed}`, profile: profile.name, kind: 'mixed', seed, group: null });
    if (!(profile.isolatedRuns ?? config.isolatedRuns)) continue;
    // Alone, identical groups (the A/A control) are one experiment: the first of them runs.
    const alone = new Set<string>();
    for (const group of config.groups) {
      const setup = JSON.stringify([group.policy, group.congestionControl, group.initialWindowPackets]);
      if (alone.has(setup)) continue;
      alone.add(setup);
      runs.push({
        id: `alone-${group.name}-s${seeds[0]}`,
        profile: profile.name,
        kind: 'isolated',
        seed: seeds[0]!,
        group: group.name,
      });
    }
  }
  return runs;
}

/**
 * A run's population: a link per progressive viewer and DASH player (drawn with a seed of the
 * profile's and the run's, or the CSV's rows in viewer order), then one per browser, a copy of
 * the link of the DASH player with its index, so simulated and real players meet identical links.
 */
export async function populationOfRun(
  population: ExperimentPopulation,
  load: ExperimentConfig['load'],
  runSeed: number,
): Promise<LinkPopulation> {
  const simulated = load.progressive + load.dash;
  let draws: LinkDraw[];
  let source: string;
  const seed = population.seed * 100_000 + runSeed;
  if (population.csv !== undefined) {
    let text: string;
    try {
      text = await readFile(population.csv, 'utf8');
    } catch (error) {
      throw new E2eError(
        'E2E_ERR_EXPERIMENT',
        `cannot read the population's CSV ${population.csv}: ${(error as Error).message}`,
      );
    }
    draws = parseLinksCsv(text, population.csv);
    if (draws.length !== simulated)
      throw new E2eError(
        'E2E_ERR_EXPERIMENT',
        `${population.csv} has ${draws.length} links; the load has ${simulated} simulated ` +
          `viewers (progressive + dash), one link each`,
      );
    source = `csv:${population.csv}`;
  } else {
    draws = drawLinks(population.distribution!, simulated, seed);
    source = population.distribution!;
  }
  const browsers = Array.from({ length: load.browsers }, (_, i) => draws[load.progressive + i]!);
  return linkPopulation([...draws, ...browsers], { source, seed, uplinkRateBps: population.uplinkRate });
}

/** Brings up the run's lab: the profile's shared link, or the run's population with a host per browser. */
async function labForRun(
  config: ExperimentConfig,
  profile: ExperimentProfile,
  run: PlannedRun,
  labName: string,
  needsCross: boolean,
): Promise<Lab> {
  if (profile.population !== undefined) {
    const population = await populationOfRun(profile.population, config.load, run.seed);
    const simulated = config.load.progressive + config.load.dash;
    return populationUp(labName, population, {
      ownHosts: Array.from({ length: config.load.browsers }, (_, i) => simulated + i),
    });
  }
  const link = profile.link!;
  // The same lab serves every run of a profile (labUp is a no-op for an identical link); the seed only seeds random
  // loss.
  return labUp(labName, linkOf(link, link.loss !== undefined ? run.seed : 1), { cross: needsCross });
}

const runFile = (out: string, run: PlannedRun) => join(out, 'runs', run.profile, `${run.id}.json`);

async function readJson<T>(path: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** Packages the experiment's asset from another one's progressive MP4 when it is missing and the config says how. */
export async function prepareAsset(config: ExperimentConfig, onProgress?: (what: string) => void): Promise<void> {
  const dir = join(resolve(config.media), config.asset);
  if (config.prepareAsset === undefined || existsSync(join(dir, 'manifest.mpd'))) return;
  const input = join(resolve(config.media), config.prepareAsset.from, 'progressive.mp4');
  if (!existsSync(input))
    throw new E2eError(
      'E2E_ERR_EXPERIMENT',
      `the asset "${config.asset}" is made from ${input}, which is missing (make the demo ` +
        `with "npx trickle media demo")`,
    );
  onProgress?.(`packaging ${config.asset} from ${config.prepareAsset.from} (${config.prepareAsset.ladder})`);
  try {
    await packageInput({ input, outDir: dir, ladder: config.prepareAsset.ladder, overwrite: true });
  } catch (error) {
    throw new E2eError('E2E_ERR_EXPERIMENT', `cannot package the asset "${config.asset}": ${(error as Error).message}`);
  }
}

/** The progressive MP4's byte -> playback-time map every 0.25 s of media, for the viewers. */
async function progressiveTable(config: ExperimentConfig): Promise<ProgressiveTable> {
  const path = join(resolve(config.media), config.asset, 'progressive.mp4');
  let layout: Awaited<ReturnType<typeof readProgressiveLayout>>;
  try {
    layout = await readProgressiveLayout(path);
  } catch (error) {
    throw new E2eError(
      'E2E_ERR_EXPERIMENT',
      `cannot read the asset's progressive MP4 ${path} (make the demo with "npx trickle ` +
        `media demo"): ${(error as Error).message}`,
    );
  }
  const map = new ByteTimeMap(layout);
  const stepSec = 0.25;
  const bytesAtStep = Array.from({ length: Math.floor(layout.durationSec / stepSec) + 1 }, (_, k) =>
    map.byteAtMediaTime(k * stepSec),
  );
  return { sizeBytes: layout.fileSizeBytes, durationSec: layout.durationSec, stepSec, bytesAtStep };
}

function originFlags(config: ExperimentConfig, run: PlannedRun, flowLog: string): Record<string, unknown> {
  const groups = config.groups.filter((g) => run.group === null || g.name === run.group);
  return {
    media: resolve(config.media),
    logLevel: 'warn',
    flows: { log: flowLog, keep: 0 },
    delivery: {
      policy: groups[0]!.policy,
      ab: groups.map((g) => ({
        name: g.name,
        policy: g.policy,
        weight: g.weight,
        ...(g.congestionControl === undefined ? {} : { congestionControl: g.congestionControl }),
        ...(g.initialWindowPackets === undefined ? {} : { initialWindowPackets: g.initialWindowPackets }),
      })),
      abSeed: run.seed,
      startupSec: config.startupSeconds,
      transport: {
        ...(config.transport.congestionControl === undefined
          ? {}
          : { congestionControl: config.transport.congestionControl }),
        ...(config.transport.initialWindowPackets === undefined
          ? {}
          : { initialWindowPackets: config.transport.initialWindowPackets }),
      },
    },
  };
}

export function startViewers(
  lab: Lab,
  plan: ViewerPlan,
): { reports: Promise<Exclude<ViewerReport, { done: true }>[]> } {
  const child = lab.spawn(
    'player',
    [process.execPath, fileURLToPath(new URL('./viewers-main.js', import.meta.url)), JSON.stringify(plan)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const reports: Exclude<ViewerReport, { done: true }>[] = [];
  let done = false;
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const report = JSON.parse(line) as ViewerReport;
    if ('done' in report) done = true;
    else reports.push(report);
  });
  return {
    reports: once(child, 'exit').then(([code]) => {
      if (!done)
        throw new E2eError(
          'E2E_ERR_EXPERIMENT',
          `the viewers process exited with ${String(code)} before all sessions ended`,
        );
      return reports;
    }),
  };
}

async function bottleneckCounters(lab: Lab): Promise<{ sentPackets: number; drops: number }> {
  const status = await lab.status();
  return { sentPackets: status.bottleneck.down.sentPackets, drops: status.bottleneck.down.drops };
}

/** The origin's flow log (JSON lines); none yet is no records. */
export async function readFlowLog(path: string): Promise<FlowRecord[]> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as FlowRecord);
}

function timeSequences(
  config: ExperimentConfig,
  records: readonly FlowRecord[],
  captures: ReturnType<typeof responsesOfCapture>,
): TimeSequence[] {
  const sequences: TimeSequence[] = [];
  for (const group of config.groups) {
    // The group's response with the most throttled packets (a progressive download when there is one).
    const candidates = records.filter((r) => r.group === group.name && captures.has(r.id));
    const best = candidates.sort(
      (a, b) =>
        (b.role === 'progressive' ? 1 : 0) - (a.role === 'progressive' ? 1 : 0) ||
        captures.get(b.id)!.packets.length - captures.get(a.id)!.packets.length,
    )[0];
    if (best === undefined) continue;
    const throttlingStartUs =
      best.throttling === null ? null : (best.startedAtEpochMs + best.startup.durationMs) * 1000;
    const sequence = timeSequenceOf(captures.get(best.id)!.packets, throttlingStartUs);
    sequences.push({ group: group.name, policy: group.policy, recordId: best.id, role: best.role, ...sequence });
  }
  return sequences;
}

async function executeRun(
  config: ExperimentConfig,
  run: PlannedRun,
  lab: Lab,
  workDir: string,
  table: ProgressiveTable,
  onPlaying: (fraction: number) => void,
): Promise<RunData> {
  const originUrl = `http://${lab.address('origin')}:${originPort}`;
  await lab.output('origin', [
    'sysctl',
    '-qw',
    `net.ipv4.tcp_slow_start_after_idle=${config.transport.slowStartAfterIdle ? 1 : 0}`,
  ]);
  const flowLog = join(workDir, 'flows.jsonl');
  const pcap = join(workDir, 'capture.pcap');
  await rm(flowLog, { force: true });
  const origin = await startLabOrigin(lab, originFlags(config, run, flowLog));
  const peers: Peer[] = [];
  try {
    const before = await bottleneckCounters(lab);
    const capture = await startCapture(lab, pcap, {
      snaplenBytes: 96,
      filter: `tcp and src host ${lab.address('origin')} and src port ${originPort}`,
    });
    const population = lab.state.population;
    // A population has no shared bottleneck to probe: each viewer's srtt is its own queue's measure.
    const probe =
      config.load.probeIntervalMs > 0 && population === undefined
        ? startProbe(lab, { from: 'cross', intervalMs: config.load.probeIntervalMs })
        : undefined;
    const sessionMs = config.sessionSeconds * 1000 + config.load.startSpreadSeconds * 1000;
    for (let i = 0; i < (population === undefined ? config.load.crossTrafficFlows : 0); i++) {
      const port = 7100 + i;
      const sink = startPeer(lab, 'cross', ['tcp-sink', String(port), '0', String(sessionMs), '1000']);
      await sink.message((m) => m.listening === true);
      peers.push(sink, startPeer(lab, 'origin', ['tcp-source', lab.address('cross'), String(port), String(sessionMs)]));
    }
    const startedAt = new Date();
    const startMs = performance.now();
    const ticker = setInterval(() => onPlaying(Math.min(1, (performance.now() - startMs) / sessionMs)), 1000);
    let viewers: Exclude<ViewerReport, { done: true }>[];
    let browsers: SessionRecord[];
    try {
      const plan: ViewerPlan = {
        originUrl,
        asset: config.asset,
        dash: config.load.dash,
        progressive: config.load.progressive,
        sessionSeconds: config.sessionSeconds,
        startSpreadMs: config.load.startSpreadSeconds * 1000,
        seed: run.seed,
        abr: config.load.abr,
        cmcd: config.load.cmcd,
        maxBufferSec: config.load.maxBufferSeconds,
        progressiveTable: table,
        localAddresses: population?.links
          .slice(0, config.load.progressive + config.load.dash)
          .map((link) => link.address),
      };
      const viewerRun =
        config.load.progressive + config.load.dash > 0 ? startViewers(lab, plan).reports : Promise.resolve([]);
      // dash.js has no BBA rule: browsers then use its default (dynamic).
      const browserRun = Promise.all(
        Array.from({ length: config.load.browsers }, (_, i) =>
          playSession(
            i,
            {
              url: `${originUrl}${assetPath(config.asset, 'dashjs')}`,
              player: 'dashjs',
              seconds: config.sessionSeconds,
              namespace: lab.namespace(
                population === undefined ? 'player' : { viewer: config.load.progressive + config.load.dash + i },
              ),
              abr: config.load.abr === 'bba' ? undefined : config.load.abr,
            },
            1,
          ),
        ),
      );
      [viewers, browsers] = await Promise.all([viewerRun, browserRun]);
    } finally {
      clearInterval(ticker);
    }
    await probe?.stop();
    for (const peer of peers) peer.child.kill('SIGTERM');
    // The capture's own flow analysis (one pass over the packets) is what the responses are cut from.
    const { flows } = await capture.stop();
    const after = await bottleneckCounters(lab);
    origin.kill('SIGTERM');
    await once(origin, 'exit');
    const records = await readFlowLog(flowLog);
    const captures = responsesOfCapture(flows, records, { address: lab.address('origin'), port: originPort });
    const summaries: ResponseCaptureSummary[] = [...captures.values()].map((c) => ({
      recordId: c.recordId,
      dataPackets: c.packets.length,
      retransmittedPackets: c.retransmittedPackets,
      bursts: c.bursts,
      throttledBursts: c.throttledBursts,
      lossPhases: c.lossPhases,
    }));
    return {
      version: runDataVersion,
      id: run.id,
      profile: run.profile,
      kind: run.kind,
      seed: run.seed,
      group: run.group,
      link: lab.state.spec,
      population,
      startedAt: startedAt.toISOString(),
      durationMs: Math.round(performance.now() - startMs),
      records,
      captures: summaries,
      timeSequences: timeSequences(config, records, captures),
      viewers,
      browsers,
      probe: probe === undefined ? [] : [...probe.samples],
      bottleneck: { sentPackets: after.sentPackets - before.sentPackets, drops: after.drops - before.drops },
    };
  } finally {
    for (const peer of peers) peer.child.kill('SIGKILL');
    if (origin.exitCode === null) origin.kill('SIGKILL');
    await rm(pcap, { force: true });
  }
}

function machine(): ExperimentResults['machine'] {
  return {
    hostname: hostname(),
    cpus: cpus()[0]?.model ?? 'unknown',
    cores: availableParallelism(),
    kernel: release(),
    node: process.version,
  };
}

/**
 * Checks `out` belongs to this experiment before resuming into it. Runs depend on everything but
 * the list of profiles and the list of seeds (a run is its seed's, in a file named by it, and the
 * results read only the planned runs' files), and on their own profile: adding a profile or seeds
 * keeps the runs there are; a changed profile's runs are discarded; any other change refuses
 * (another --out, or --fresh).
 */
export async function prepareOut(options: Pick<ExperimentOptions, 'config' | 'out' | 'fresh'>): Promise<void> {
  const marker = join(options.out, 'experiment.json');
  const existing = await readJson<{ config: ExperimentConfig }>(marker);
  if (options.fresh === true) await rm(join(options.out, 'runs'), { recursive: true, force: true });
  else if (existing !== undefined) {
    const { profiles: oldProfiles, seeds: _oldSeeds, ...oldRest } = existing.config;
    const { profiles: newProfiles, seeds: _newSeeds, ...newRest } = options.config;
    if (JSON.stringify(oldRest) !== JSON.stringify(newRest)) {
      throw new E2eError(
        'E2E_ERR_EXPERIMENT',
        `${options.out} holds runs of a different experiment configuration (groups, load ` +
          `or transport changed); give another --out, or --fresh to discard them`,
      );
    }
    const withoutSeeds = ({ seeds: _seeds, ...profile }: ExperimentConfig['profiles'][number]) => profile;
    for (const profile of newProfiles) {
      const old = oldProfiles.find((p) => p.name === profile.name);
      if (old !== undefined && JSON.stringify(withoutSeeds(old)) !== JSON.stringify(withoutSeeds(profile)))
        await rm(join(options.out, 'runs', profile.name), { recursive: true, force: true });
    }
  }
  await mkdir(options.out, { recursive: true });
  await writeFile(
    marker,
    `${JSON.stringify({ config: options.config, createdAt: new Date().toISOString() }, null, 2)}\n`,
  );
}

export async function runExperiment(options: ExperimentOptions): Promise<ExperimentResults> {
  const { config, out } = options;
  await prepareOut(options);
  await prepareAsset(config, options.onNote);
  const table = await progressiveTable(config);
  const runs = planRuns(config);
  const labName = options.labName ?? 'exp';
  const workDir = join(out, 'work');
  await mkdir(workDir, { recursive: true });
  const needsCross = config.load.probeIntervalMs > 0 || config.load.crossTrafficFlows > 0;
  let lab: Lab | undefined;
  try {
    for (const [index, run] of runs.entries()) {
      const report = (stage: ExperimentProgress['stage'], within: number) =>
        options.onProgress?.({
          fraction: (index + within) / runs.length,
          run,
          runIndex: index,
          runs: runs.length,
          stage,
        });
      if ((await readJson<RunData>(runFile(out, run)))?.version === runDataVersion) {
        report('resumed', 1);
        continue;
      }
      report('starting', 0);
      const profile = config.profiles.find((p) => p.name === run.profile)!;
      lab = await labForRun(config, profile, run, labName, needsCross && profile.population === undefined);
      const data = await executeRun(config, run, lab, workDir, table, (fraction) => report('playing', fraction * 0.95));
      report('analysing', 0.97);
      await mkdir(join(out, 'runs', run.profile), { recursive: true });
      await writeFile(runFile(out, run), JSON.stringify(data));
      report('done', 1);
    }
  } finally {
    if (lab !== undefined) await labDown(labName);
    await rm(workDir, { recursive: true, force: true });
  }
  return writeResults(config, out, { runs, commandLine: options.commandLine });
}

/** Analyses the runs on disk and writes results.json, the CSVs and report.html. */
export async function writeResults(
  config: ExperimentConfig,
  out: string,
  options: { runs?: readonly PlannedRun[]; commandLine?: string | undefined } = {},
): Promise<ExperimentResults> {
  const runs = options.runs ?? planRuns(config);
  const profiles: ExperimentResults['profiles'][number][] = [];
  const allRuns: RunData[] = [];
  const trickle = config.groups.find((g) => g.policy === 'trickle');
  const baseline = config.groups.find((g) => g.name === (config.baseline ?? config.groups[0]!.name))!;
  for (const profile of config.profiles) {
    const data: RunData[] = [];
    for (const run of runs.filter((r) => r.profile === profile.name)) {
      const loaded = await readJson<RunData>(runFile(out, run));
      if (loaded === undefined)
        throw new E2eError('E2E_ERR_EXPERIMENT', `run ${run.profile}/${run.id} has no results in ${out}`);
      if (loaded.version !== runDataVersion)
        throw new E2eError(
          'E2E_ERR_EXPERIMENT',
          `run ${run.profile}/${run.id} in ${out} was written by another version of trickle ` +
            `(format ${String(loaded.version ?? 1)}, this one reads ${runDataVersion}); run the ` +
            `experiment again with --fresh`,
        );
      data.push(loaded);
    }
    allRuns.push(...data);
    const summary = summarizeProfile(profile.name, data, config);
    const compass: Record<string, ReturnType<typeof compassChecks>> = {};
    if (trickle !== undefined && baseline.policy === 'app-pacing')
      for (const kind of summary.kinds) compass[kind.kind] = compassChecks(kind, trickle.name, baseline.name);
    profiles.push({ ...summary, link: data[0]!.link, compass });
  }
  const designs = config.profiles.flatMap((profile) => {
    const shared = profiles.find((p) => p.profile === profile.name);
    const population = profiles.find((p) => p.profile === profile.sharedBottleneckOf);
    return shared === undefined || population === undefined ? [] : [compareDesigns(population, shared, baseline.name)];
  });
  const results: ExperimentResults = {
    name: config.name,
    description: config.description,
    date: new Date().toISOString(),
    machine: machine(),
    config,
    profiles,
    designs,
  };
  await writeFile(join(out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  await writeTables(out, results, allRuns);
  await writeExperimentReport(join(out, 'report.html'), results);
  await writeSummaryMarkdown(
    join(out, 'summary.md'),
    results,
    options.commandLine ?? `npx trickle experiment <${config.name} config> --out ${out}`,
  );
  return results;
}
