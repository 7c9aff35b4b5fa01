/** `trickle sim`: rebuffering chance and frequency by model (traces) or live against an origin. */
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import type { Command } from 'commander';
import { policyNames } from '@trickle/origin/command-help';
import type { Aggregates, SessionResult } from '@trickle/player-sim';
import { abrRules } from '@trickle/player-sim/abr';
import {
  constantTrace,
  formatCookedTrace,
  lteLikeTrace,
  parseTrace,
  stepTrace,
  threeGLikeTrace,
  type Trace,
} from '@trickle/player-sim/traces';
import { examples, stageProgress } from '@trickle/e2e/command-help';
import { describeQoe } from './qoe-text.js';
import { positiveInteger, positiveNumber } from './number-arguments.js';

/** The simulator, loaded when a sim command runs: the other commands and --help go without it. */
const simulator = () => import('@trickle/player-sim');

const builtinTraces: Record<string, (seed: number) => Trace> = {
  'lte-like': (seed) => lteLikeTrace(seed),
  '3g-like': (seed) => threeGLikeTrace(seed),
};

async function loadTraces(spec: string, seed: number): Promise<Trace[]> {
  const { SimError } = await simulator();
  const traces: Trace[] = [];
  for (const part of spec.split(',')) {
    const builtin = builtinTraces[part];
    if (builtin !== undefined) {
      traces.push(builtin(seed));
      continue;
    }
    const info = await stat(part).catch(() => undefined);
    if (info === undefined)
      throw new SimError(
        'SIM_ERR_TRACE',
        `no trace file or directory "${part}" (built-in: ${Object.keys(builtinTraces).join(', ')})`,
      );
    const files = info.isDirectory() ? (await readdir(part)).sort().map((name) => join(part, name)) : [part];
    for (const file of files) traces.push(parseTrace(await readFile(file, 'utf8'), basename(file)));
  }
  if (traces.length === 0) throw new SimError('SIM_ERR_TRACE', `no traces in ${spec}`);
  return traces;
}

function describe(agg: Aggregates): string {
  return describeQoe(`${agg.sessions}${agg.abandoned > 0 ? ` (${agg.abandoned} abandoned)` : ''}`, agg, [
    `bytes               ${(agg.bytesDownloaded / 1e6).toFixed(1)} MB ` +
      `downloaded, ${(agg.bytesWasted / 1e6).toFixed(1)} MB never played`,
  ]);
}

async function writeSessions(dir: string, results: readonly SessionResult[]): Promise<void> {
  await mkdir(dir, { recursive: true });
  await writeFile(
    join(dir, 'sessions.jsonl'),
    `${results.map((r, i) => JSON.stringify({ session: i, ...r })).join('\n')}\n`,
  );
  const header = [
    'session',
    'startupDelayMs',
    'rebuffers',
    'stalledSec',
    'sessionSec',
    'playedSec',
    'meanBitrateBps',
    'switches',
    'bytesDownloaded',
    'bytesWasted',
    'abandoned',
  ];
  const rows = results.map((r, i) =>
    [
      i,
      r.startupDelayMs ?? '',
      r.rebuffers.length,
      r.stalledSec,
      r.sessionSec,
      r.playedSec,
      Math.round(r.meanBitrateBps),
      r.switches,
      r.bytesDownloaded,
      r.bytesWasted,
      r.abandoned,
    ].join(','),
  );
  await writeFile(join(dir, 'sessions.csv'), `${[header.join(','), ...rows].join('\n')}\n`);
}

export function registerSimCommands(program: Command): void {
  program
    .command('sim')
    .description(
      'simulate players: rebuffering chance and frequency, startup, bitrate, switches ' +
        '(model mode on traces, or --live against an origin)',
    )
    .requiredOption(
      '--manifest <file|url>',
      'DASH MPD or HLS master (file or URL); with --live, may be a path on --origin',
    )
    .option(
      '--traces <file|dir|name>',
      `bandwidth traces (Sabre JSON, cooked, Mahimahi; comma-separated; ` +
        `built-in: ${Object.keys(builtinTraces).join(', ')})`,
    )
    .option('--abr <rule>', `ABR rule: ${Object.keys(abrRules).join(', ')}`, 'dynamic')
    .option(
      '--policy <policy>',
      `server delivery policy in model mode: ${policyNames.join(', ')} (the origin's rules and constants)`,
      'bulk',
    )
    .option('--sessions <n>', 'number of sessions', positiveInteger('sessions'), 100)
    .option('--seed <n>', 'seed (trace offsets)', positiveInteger('seed'), 1)
    .option('--rtt <ms>', 'model mode round-trip time (default: from the trace, else 40 ms)', positiveNumber('rtt'))
    .option(
      '--session-seconds <s>',
      'session length (content shorter than this repeats)',
      positiveNumber('session-seconds'),
      600,
    )
    .option('--max-buffer <s>', 'buffer at which the player stops requesting', positiveNumber('max-buffer'), 30)
    .option(
      '--abandon-after <ms>',
      'viewers leave when playback has not started after this long',
      positiveNumber('abandon-after'),
    )
    .option('--live', 'fetch real segments over HTTP from a running origin, in real time')
    .option('--origin <url>', 'origin base URL for --live (e.g. http://127.0.0.1:8080)')
    .option('--concurrency <n>', 'live players at once', positiveInteger('concurrency'), 10)
    .option(
      '--cmcd',
      'players send CMCD (bl, br, d, su, rtp, sid) as dash.js does; in model mode ' +
        'ABR-aware policies read their buffer from it',
    )
    .option('--json', 'print the aggregates as one JSON object')
    .option('--out <dir>', 'write per-session records (sessions.jsonl, sessions.csv)')
    .addHelpText(
      'after',
      examples(
        'npx trickle sim --manifest media/demo/manifest.mpd --traces 3g-like --sessions 200',
        'npx trickle sim --manifest media/demo/manifest.mpd --traces traces/ --abr bola ' +
          '--policy trickle-abr --cmcd --json',
        'npx trickle sim --live --origin http://127.0.0.1:8080 --manifest ' +
          '/media/demo/manifest.mpd --sessions 20 --session-seconds 60',
      ),
    )
    .action(
      async (opts: {
        manifest: string;
        traces?: string;
        abr: string;
        policy: string;
        sessions: number;
        seed: number;
        rtt?: number;
        sessionSeconds: number;
        maxBuffer: number;
        abandonAfter?: number;
        live?: boolean;
        origin?: string;
        concurrency: number;
        cmcd?: boolean;
        json?: boolean;
        out?: string;
      }) => {
        const { aggregate, loadContent, loopContent, runLive, runModel, SimError } = await simulator();
        const settings = {
          sessionSeconds: opts.sessionSeconds,
          maxBufferSec: opts.maxBuffer,
          abandonAfterMs: opts.abandonAfter,
        };
        const progress = stageProgress();
        let results: SessionResult[];
        if (opts.live === true) {
          if (opts.origin === undefined && !/^https?:/.test(opts.manifest))
            throw new SimError('SIM_ERR_CONFIG', '--live needs --origin <url> or a manifest URL');
          const location = /^https?:/.test(opts.manifest) ? opts.manifest : new URL(opts.manifest, opts.origin).href;
          const content = loopContent(await loadContent(location), opts.sessionSeconds);
          results = await runLive({
            content,
            abr: opts.abr,
            sessions: opts.sessions,
            concurrency: opts.concurrency,
            cmcd: opts.cmcd === true,
            settings,
            onProgress: (done, total) => progress.update('sessions', done / total),
          });
        } else {
          if (opts.traces === undefined)
            throw new SimError(
              'SIM_ERR_CONFIG',
              `model mode needs --traces (a file, a directory, ` +
                `or ${Object.keys(builtinTraces).join('/')}); or use --live`,
            );
          const content = loopContent(
            await loadContent(/^https?:/.test(opts.manifest) ? opts.manifest : resolve(opts.manifest)),
            opts.sessionSeconds,
          );
          results = await runModel({
            content,
            traces: await loadTraces(opts.traces, opts.seed),
            abr: opts.abr,
            policy: opts.policy,
            sessions: opts.sessions,
            seed: opts.seed,
            cmcd: opts.cmcd === true,
            ...(opts.rtt === undefined ? {} : { rttMs: opts.rtt }),
            settings,
            onProgress: (done, total) => progress.update('sessions', done / total),
          });
        }
        progress.stop();
        const agg = aggregate(results);
        if (opts.out !== undefined) await writeSessions(resolve(opts.out), results);
        process.stdout.write(opts.json === true ? `${JSON.stringify(agg)}\n` : `${describe(agg)}\n`);
      },
    );

  program
    .command('traces')
    .description('write the synthetic traces (constant, step down/up, LTE-like, 3G-like) as cooked text files')
    .requiredOption('--out <dir>', 'output directory')
    .option('--seed <n>', 'seed of the random walks', positiveInteger('seed'), 1)
    .addHelpText('after', examples('npx trickle traces --out traces', 'npx trickle traces --out traces --seed 7'))
    .action(async (opts: { out: string; seed: number }) => {
      await mkdir(opts.out, { recursive: true });
      const traces: Record<string, Trace> = {
        'constant-6mbit.txt': constantTrace(6e6, 600_000),
        'step-down-8-to-2mbit.txt': stepTrace(8e6, 2e6, 60_000, 600_000),
        'step-up-2-to-8mbit.txt': stepTrace(2e6, 8e6, 60_000, 600_000),
        'lte-like.txt': lteLikeTrace(opts.seed, 600_000),
        '3g-like.txt': threeGLikeTrace(opts.seed, 600_000),
      };
      for (const [name, trace] of Object.entries(traces))
        await writeFile(join(opts.out, name), formatCookedTrace(trace));
      process.stdout.write(`wrote ${Object.keys(traces).join(', ')} to ${opts.out}\n`);
    });
}
