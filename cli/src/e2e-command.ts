/** `trickle e2e`: dash.js, hls.js or a plain <video> in headless Chromium, QoE over K sessions. */
import { resolve } from 'node:path';
import { type Command, Option } from 'commander';
import type { BrowserAggregates } from '@trickle/e2e';
import { examples, stageProgress } from '@trickle/e2e/command-help';
import { profiles } from '@trickle/e2e/links';
import { policyNames } from '@trickle/origin/command-help';
import { describeQoe } from './qoe-text.js';
import { nonNegativeNumber, positiveInteger, positiveNumber } from './number-arguments.js';

interface E2eFlags {
  url?: string;
  asset?: string;
  media: string;
  player: 'dashjs' | 'hlsjs' | 'shaka' | 'native';
  policy?: string;
  link?: string;
  sessions: number;
  seconds?: number;
  concurrency?: number;
  cmcd?: boolean;
  abr?: 'throughput' | 'bola' | 'dynamic';
  safetyFactor?: number;
  bufferSeconds?: number;
  start?: number;
  json?: boolean;
  out?: string;
}

function describe(agg: BrowserAggregates): string {
  const sessionsLine =
    `${agg.sessions}` +
    `${agg.failedSessions > 0 ? ` (${agg.failedSessions} with player errors)` : ''}` +
    `${agg.neverStarted > 0 ? `, ${agg.neverStarted} never started` : ''}`;
  return describeQoe(sessionsLine, agg, [
    `video freezes       ${agg.videoFreezes}; dropped frames ${(agg.droppedFrameRatio * 100).toFixed(2)} %`,
  ]);
}

export function registerE2eCommands(program: Command): void {
  program
    .command('e2e')
    .description(
      'play a URL or an asset in headless Chromium (dash.js, hls.js, Shaka Player, <video>), optionally ' +
        'across a lab link; QoE over K sessions',
    )
    .option('--url <url>', 'an MPD, M3U8 or MP4 to play (with --link: on the lab origin side, 10.73.0.1)')
    .option('--asset <name>', 'an asset of --media, served by an origin the harness starts in the lab (root)')
    .option('--media <dir>', 'media directory for --asset', 'media')
    .addOption(
      new Option('--player <player>', 'player').choices(['dashjs', 'hlsjs', 'shaka', 'native']).default('dashjs'),
    )
    .addOption(
      new Option(
        '--policy <policy>',
        'delivery policy: the origin default with --asset, ?policy= per request with --url',
      ).choices([...policyNames]),
    )
    .option('--link <profile>', `lab link profile (root): ${Object.keys(profiles).join(', ')}`)
    .option('--sessions <n>', 'sessions', positiveInteger('sessions'), 1)
    .option('--seconds <s>', 'session length in seconds (default: play to the end)', positiveNumber('seconds'))
    .option(
      '--concurrency <n>',
      'sessions at once (default: bounded by cores and free memory)',
      positiveInteger('concurrency'),
    )
    .option('--cmcd', 'players send CMCD query keys')
    .addOption(new Option('--abr <rule>', 'dash.js ABR rules').choices(['throughput', 'bola', 'dynamic']))
    .option(
      '--safety-factor <x>',
      "the share of its throughput estimate the player may spend on a rung (dash.js's bandwidthSafetyFactor, " +
        "default 0.9; hls.js's abrBandWidthUpFactor, 0.7; Shaka's bandwidthUpgradeTarget, 0.85): another player's margin",
      positiveNumber('safety-factor'),
    )
    .option('--buffer-seconds <s>', 'forward buffer target', positiveNumber('buffer-seconds'))
    .option(
      '--start <s>',
      'begin playback at this media time, as a viewer who resumes mid-asset does',
      nonNegativeNumber('start'),
    )
    .option('--json', 'print the aggregates as one JSON object')
    .option('--out <dir>', 'write sessions/<n>.json, summary.json and index.html (charts)')
    .addHelpText(
      'after',
      examples(
        'npx trickle e2e --url https://cdn.example.com/show/manifest.mpd --player dashjs --sessions 3 --seconds 60',
        'sudo npx trickle e2e --asset demo --player hlsjs --policy trickle --link dsl-6mbit ' +
          '--sessions 2 --seconds 60 --out results/e2e',
      ),
    )
    .action(async (opts: E2eFlags) => {
      // The browser harness, loaded when this command runs: the other commands and --help go without it.
      const { runE2e } = await import('@trickle/e2e');
      const progress = stageProgress();
      const result = await runE2e({
        url: opts.url,
        asset: opts.asset,
        media: opts.media,
        player: opts.player,
        policy: opts.policy,
        link: opts.link,
        sessions: opts.sessions,
        seconds: opts.seconds,
        concurrency: opts.concurrency,
        cmcd: opts.cmcd,
        abr: opts.abr,
        safetyFactor: opts.safetyFactor,
        bufferSeconds: opts.bufferSeconds,
        startSec: opts.start,
        out: opts.out === undefined ? undefined : resolve(opts.out),
        onSession: (_record, done, total) => progress.update('sessions', done / total),
        onRetry: (index, error) =>
          process.stderr.write(`session ${index}: harness failure, retrying (${error.message})\n`),
      });
      progress.stop();
      process.stdout.write(
        opts.json === true ? `${JSON.stringify(result.aggregates)}\n` : `${describe(result.aggregates)}\n`,
      );
      if (opts.out !== undefined) process.stderr.write(`wrote ${resolve(opts.out)}/index.html\n`);
    });
}
