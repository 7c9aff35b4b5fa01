/**
 * Every shape of the packaging corpus played for real: dash.js (where the asset has an MPD), hls.js
 * (where it has HLS playlists) and a plain <video> (where it has a progressive file), in Debian
 * Chromium across a lab link, from `trickle serve` with the default policy, throttled from the first
 * segment. Per session: played to the end or not, errors, every media body checked byte for byte
 * against its file; per asset, the origin's flow records: each paced response's media rate against
 * the rate the index has for the segment it covers. Writes bench/results/corpus-playback.md.
 * `npx trickle bench corpus [--corpus <dir>] [--duration 16] [--link dsl-6mbit]` (root, Chromium,
 * ffmpeg, Shaka Packager from ./scripts/setup).
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { labDown, labUp, launchChromium, playToEnd, profileLink, requireLabPrivileges, examples } from '@trickle/e2e';
import { buildCorpus, inspectAsset, type AssetIndex, type FlowRecord } from '@trickle/origin';
import { runIfMain } from './entry.js';
import { numberOption } from './options.js';
import { writeResults } from './results-file.js';

const checkout = resolve(import.meta.dirname, '..', '..');
const cli = join(checkout, 'bin', 'trickle.js');

interface Row {
  readonly shape: string;
  readonly player: string;
  readonly ended: boolean;
  readonly errors: readonly string[];
  readonly bodies: number;
  readonly corrupt: number;
  readonly rebuffers: number;
}

/** Each paced response's media rate against its segment's, by asset: n matched of n paced. */
function ratesAgainstIndex(
  index: AssetIndex,
  flows: readonly FlowRecord[],
): { paced: number; matched: number; worst: number } {
  let matched = 0;
  let worst = 0;
  const paced = flows.filter((f) => f.role === 'segment' && f.mediaRateBps !== null);
  for (const flow of paced) {
    const rendition = index.renditions.find((r) => r.id === flow.rendition);
    const segment = rendition?.segments.find((s) => s.number === flow.segmentNumber && s.file === flow.file);
    if (segment === undefined) continue;
    const off = Math.abs(flow.mediaRateBps!.mean / segment.bitrateBps - 1);
    worst = Math.max(worst, off);
    if (off < 0.005) matched++;
  }
  return { paced: paced.length, matched, worst };
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench corpus')
    .option('--corpus <dir>', 'a corpus made by `trickle media corpus` (made here when missing)', '.cache/bench-corpus')
    .option('--duration <s>', 'the clip length when the corpus is made', '16')
    .option('--link <profile>', 'the lab link the players are across', 'dsl-6mbit')
    .addHelpText('after', examples('sudo npx trickle bench corpus', 'sudo npx trickle bench corpus --link fast-20mbit'))
    .parse(['node', 'corpus', ...argv])
    .opts<{ corpus: string; duration: string; link: string }>();
  const durationSec = numberOption('--duration', options.duration, 'positive');
  requireLabPrivileges();
  const corpus = resolve(options.corpus);
  if (!existsSync(join(corpus, 'README.md'))) {
    process.stderr.write(`corpus bench: packaging a ${options.duration} s clip in every shape into ${corpus}\n`);
    await buildCorpus({ outDir: corpus, durationSec });
  }
  const lab = await labUp('bcorp', profileLink(options.link));
  const base = `http://${lab.address('origin')}:8092`;
  const origin = lab.spawn(
    'origin',
    [
      process.execPath,
      cli,
      'serve',
      '--media',
      corpus,
      '--host',
      lab.address('origin'),
      '--public-ops',
      '--port',
      '8092',
      '--startup-seconds',
      '0',
      '--log-level',
      'warn',
    ],
    { stdio: 'inherit' },
  );
  const chromium = await launchChromium({ namespace: lab.namespace('player') });
  const rows: Row[] = [];
  const rates: string[] = [];
  try {
    await lab.waitForHttp(`${base}/healthz`);
    const { assets } = JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/assets`])) as {
      assets: { name: string; status: string; links: Record<'dash' | 'hls' | 'progressive', string | null> }[];
    };
    for (const asset of assets) {
      const index = await inspectAsset(join(corpus, asset.name));
      const players = (['dashjs', 'hlsjs', 'native'] as const).filter(
        (player) => asset.links[player === 'dashjs' ? 'dash' : player === 'hlsjs' ? 'hls' : 'progressive'] !== null,
      );
      for (const player of players) {
        process.stderr.write(`corpus bench: ${asset.name} in ${player}\n`);
        const played = await playToEnd(
          chromium.context,
          base,
          asset.name,
          join(corpus, asset.name),
          `player=${player}&charts=0`,
          index.fileAliases,
        );
        rows.push({
          shape: asset.name,
          player,
          ended: played.ended,
          errors: played.errors,
          bodies: played.bodiesChecked,
          corrupt: played.corrupt.length,
          rebuffers: played.rebuffers.length,
        });
      }
      const flows = (
        JSON.parse(await lab.output('player', ['curl', '-sf', `${base}/api/flows?limit=100000`])) as {
          flows: FlowRecord[];
        }
      ).flows.filter((f) => f.asset === asset.name);
      const { paced, matched, worst } = ratesAgainstIndex(index, flows);
      rates.push(
        `| ${asset.name} | ${asset.status} | ${flows.length} | ${paced} | ${matched} ` +
          `/ ${paced} | ${paced === 0 ? '-' : `${(worst * 100).toFixed(3)} %`} |`,
      );
    }
  } finally {
    await chromium.close();
    origin.kill('SIGTERM');
    await labDown('bcorp');
  }
  const ok = rows.filter((r) => r.ended && r.errors.length === 0 && r.corrupt === 0).length;
  await writeResults('corpus-playback.md', 'The packaging corpus in real players', [
    `Command: \`npx trickle bench corpus --duration ${options.duration} ` +
      `--link ${options.link}\` (root). The corpus (\`trickle media corpus\`: ` +
      `one ${options.duration} s clip packaged by ffmpeg and Shaka Packager in every ` +
      `shape, see its README) served by \`trickle serve --startup-seconds 0\` (the default ` +
      `policy, trickle-abr, throttled from the first segment) in a lab's origin namespace; ` +
      `Debian Chromium in its player namespace, across ${options.link}; the origin's ` +
      `/player/ page plays each asset with each player its manifests allow (dash.js: an ` +
      `MPD; hls.js: HLS playlists; a plain <video>: a progressive file), one session each, ` +
      `to the end. Every media body is compared with its file's bytes.`,
    '',
    `Sessions: ${ok} of ${rows.length} played to the end with no error and every body equal to its file.`,
    '',
    '| shape | player | ended | errors | media bodies checked | differing from the file | rebuffers |',
    '| --- | --- | --- | --- | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.shape} | ${r.player} | ${r.ended ? 'yes' : '**no**'} ` +
        `| ${r.errors.length === 0 ? '-' : r.errors.join('; ').replaceAll('|', '/')} ` +
        `| ${r.bodies} | ${r.corrupt} | ${r.rebuffers} |`,
    ),
    '',
    "The origin's flow records, per asset: every segment response paced with a media " +
      'rate, against the rate the index has for the segment it covers (a byte range is ' +
      'mapped to its segment).',
    '',
    '| shape | index | responses recorded | segment responses | media rate = the ' +
      "segment's (within 0.5 %) | worst difference |",
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...rates,
    '',
  ]);
}

await runIfMain(import.meta.url, main);
