/**
 * Indexing at library scale (issue 36's goals): (1) the CPU the index takes for a 2-hour title
 * packaged by Shaka Packager, on-demand (SegmentBase + sidx, 3,600 segments per stream in one file)
 * and with segment templates (3,600 files per stream), each in a fresh process; (2) an origin
 * booting on a folder of 1,000 assets: how long the first indexing pass takes, and the latency of
 * requests answered while it runs against the same requests after it (the pass runs in the
 * background: requests must not wait for it). Writes bench/results/indexing.md.
 * `npx trickle bench indexing [--hours 2] [--assets 1000] [--work .cache/bench-indexing]`
 * (ffmpeg, and Shaka Packager from ./scripts/setup).
 */
import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { link, mkdir, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { findShakaPackager, generateDemoMedia } from '@trickle/origin';
import { BenchError } from './errors.js';
import { numberOption } from './options.js';
import { runIfMain } from './entry.js';
import { writeResults } from './results-file.js';
import { examples } from '@trickle/e2e';

const checkout = resolve(import.meta.dirname, '..', '..');
const cli = join(checkout, 'bin', 'trickle.js');

function run(command: string, args: readonly string[], cwd?: string): void {
  const result = spawnSync(command, args, { cwd, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0)
    throw new BenchError(
      'BENCH_ERR_MEDIA',
      `${command} ${args.slice(0, 3).join(' ')} ... failed ` +
        `(exit ${result.status}): ${(result.stderr ?? '').trim().split('\n').slice(-3).join(' ')}`,
    );
}

/**
 * A `hours`-long title: a 6 s clip (2 s GOPs, AAC) looped by stream copy, then packaged both ways by Shaka Packager.
 */
async function longTitle(
  work: string,
  hours: number,
  packager: string,
): Promise<{ onDemand: string; templates: string }> {
  const dir = join(work, `title-${hours}h`);
  const onDemand = join(dir, 'on-demand');
  const templates = join(dir, 'templates');
  if (existsSync(join(onDemand, 'manifest.mpd')) && existsSync(join(templates, 'manifest.mpd')))
    return { onDemand, templates };
  await rm(dir, { recursive: true, force: true });
  await mkdir(onDemand, { recursive: true });
  await mkdir(templates, { recursive: true });
  const clip = join(dir, 'clip.mp4');
  const long = join(dir, 'long.mp4');
  process.stderr.write(
    `indexing bench: making a ${hours} h title (a 6 s clip looped, packaged by Shaka Packager twice)\n`,
  );
  run('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-f',
    'lavfi',
    '-i',
    'testsrc2=s=320x180:r=30:d=6',
    '-f',
    'lavfi',
    '-i',
    'sine=f=440:d=6:sample_rate=48000',
    '-c:v',
    'libx264',
    '-preset',
    'veryfast',
    '-b:v',
    '150k',
    '-g',
    '60',
    '-keyint_min',
    '60',
    '-sc_threshold',
    '0',
    '-c:a',
    'aac',
    '-b:a',
    '64k',
    '-shortest',
    clip,
  ]);
  run('ffmpeg', [
    '-hide_banner',
    '-loglevel',
    'error',
    '-y',
    '-stream_loop',
    String(Math.ceil((hours * 3600) / 6) - 1),
    '-i',
    clip,
    '-c',
    'copy',
    '-t',
    String(hours * 3600),
    long,
  ]);
  run(
    packager,
    [
      `in=${long},stream=video,output=video.mp4`,
      `in=${long},stream=audio,output=audio.mp4`,
      '--segment_duration',
      '2',
      '--mpd_output',
      'manifest.mpd',
    ],
    onDemand,
  );
  run(
    packager,
    [
      `in=${long},stream=video,init_segment=v/init.mp4,segment_template=v/$Number$.m4s`,
      `in=${long},stream=audio,init_segment=a/init.mp4,segment_template=a/$Number$.m4s`,
      '--segment_duration',
      '2',
      '--generate_static_live_mpd',
      '--mpd_output',
      'manifest.mpd',
    ],
    templates,
  );
  await rm(long);
  return { onDemand, templates };
}

/**
 * CPU and wall seconds of indexing `dir` in a fresh Node process (what a restarted origin pays), and the segments
 * indexed.
 */
function indexInFreshProcess(dir: string): { cpuSec: number; wallSec: number; segments: number } {
  const script = `
    const { inspectAsset } = await import(${JSON.stringify(join(checkout, 'origin', 'dist', 'src', 'index.js'))});
    const cpu = process.cpuUsage(); const t = performance.now();
    const index = await inspectAsset(${JSON.stringify(dir)});
    const used = process.cpuUsage(cpu);
    console.log(JSON.stringify({
      cpuSec: (used.user + used.system) / 1e6,
      wallSec: (performance.now() - t) / 1000,
      segments: index.renditions.reduce((n, r) => n + r.segments.length, 0),
      issues: index.issues,
    }));`;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (result.status !== 0)
    throw new BenchError(
      'BENCH_ERR_MEDIA',
      `indexing ${dir} failed: ${result.stderr.trim().split('\n').slice(-2).join(' ')}`,
    );
  const parsed = JSON.parse(result.stdout) as { cpuSec: number; wallSec: number; segments: number; issues: string[] };
  if (parsed.issues.length > 0) throw new BenchError('BENCH_ERR_MEDIA', `${dir}: ${parsed.issues.join('; ')}`);
  return parsed;
}

/** `count` assets, each a hard-linked copy of a 24 s demo (its files on disk once). */
async function library(work: string, count: number): Promise<string> {
  const demo = join(work, 'demo');
  if (!existsSync(join(demo, 'manifest.mpd')))
    await generateDemoMedia({ outDir: demo, durationSec: 24, overwrite: true });
  const root = join(work, `library-${count}`);
  if ((await readdir(root).catch(() => [])).length === count) return root;
  await rm(root, { recursive: true, force: true });
  const files = await readdir(demo);
  for (let i = 0; i < count; i++) {
    const asset = join(root, `title-${String(i).padStart(4, '0')}`);
    await mkdir(asset, { recursive: true });
    for (const file of files) await link(join(demo, file), join(asset, file));
  }
  return root;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? Number.NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/**
 * Boots `trickle serve` on the library and, from the moment it listens, asks for a manifest, a
 * segment and an asset's index of titles all over the library (4 requests in flight), until
 * /readyz says the first pass is over and for `afterSec` more. Latencies during and after the pass.
 */
async function bootUnderLoad(
  root: string,
  count: number,
  afterSec: number,
): Promise<{ indexSec: number; during: number[]; after: number[]; errors: number }> {
  const port = 18_000 + Math.floor(Math.random() * 1000);
  const origin = spawn(
    process.execPath,
    [cli, 'serve', '--media', root, '--port', String(port), '--log-level', 'warn', '--policy', 'bulk'],
    { stdio: ['ignore', 'inherit', 'inherit'] },
  );
  const base = `http://127.0.0.1:${port}`;
  try {
    const bootMs = performance.now();
    for (;;) {
      if ((await fetch(`${base}/healthz`).catch(() => undefined))?.ok === true) break;
      if (performance.now() - bootMs > 60_000)
        throw new BenchError('BENCH_ERR_SERVER', 'the origin did not listen within 60 s');
      await new Promise((done) => setTimeout(done, 20));
    }
    const listenMs = performance.now();
    let indexedMs: number | undefined;
    const during: number[] = [];
    const after: number[] = [];
    let errors = 0;
    let n = 0;
    const paths = (i: number) => {
      const title = `title-${String((i * 7919) % count).padStart(4, '0')}`;
      return [`/media/${title}/manifest.mpd`, `/media/${title}/chunk-0-00003.m4s`, `/api/assets/${title}?segments=0`][
        i % 3
      ]!;
    };
    const worker = async () => {
      while (indexedMs === undefined || performance.now() - indexedMs < afterSec * 1000) {
        const path = paths(n++);
        const sentMs = performance.now();
        const response = await fetch(base + path).catch(() => undefined);
        await response?.arrayBuffer();
        const ms = performance.now() - sentMs;
        if (response?.ok !== true) errors++;
        (indexedMs === undefined ? during : after).push(ms);
      }
    };
    const watch = async () => {
      while ((await fetch(`${base}/readyz`).catch(() => undefined))?.status !== 200)
        await new Promise((done) => setTimeout(done, 50));
      indexedMs = performance.now();
    };
    await Promise.all([watch(), ...Array.from({ length: 4 }, worker)]);
    return {
      indexSec: (indexedMs! - listenMs) / 1000,
      during: during.sort((a, b) => a - b),
      after: after.sort((a, b) => a - b),
      errors,
    };
  } finally {
    origin.kill('SIGTERM');
    await once(origin, 'exit');
  }
}

export async function main(argv: readonly string[]): Promise<void> {
  const options = new Command('trickle bench indexing')
    .option('--hours <h>', 'length of the long title', '2')
    .option('--assets <n>', 'titles in the library booted on', '1000')
    .option('--runs <n>', 'fresh-process indexing runs per packaging', '3')
    .option(
      '--work <dir>',
      'where the titles and the library are made (kept for the next run)',
      '.cache/bench-indexing',
    )
    .addHelpText('after', examples('npx trickle bench indexing', 'npx trickle bench indexing --hours 1 --assets 200'))
    .parse(['node', 'indexing', ...argv])
    .opts<{ hours: string; assets: string; runs: string; work: string }>();
  const hours = numberOption('--hours', options.hours, 'positive');
  const count = numberOption('--assets', options.assets, 'positive-integer');
  const runs = numberOption('--runs', options.runs, 'positive-integer');
  const work = resolve(options.work);
  const packager = findShakaPackager();
  if (packager === undefined)
    throw new BenchError(
      'BENCH_ERR_MISSING_TOOL',
      'Shaka Packager not found: ./scripts/setup installs it into .cache/tools/bin/packager',
    );
  await mkdir(work, { recursive: true });

  const title = await longTitle(work, hours, packager);
  const rows: string[] = [];
  for (const [label, dir] of [
    ['on-demand (SegmentBase + sidx, one file per stream)', title.onDemand],
    ['segment templates ($Number$, a file per segment)', title.templates],
  ] as const) {
    const measured = Array.from({ length: runs }, () => indexInFreshProcess(dir));
    const cpu = measured.map((m) => m.cpuSec).sort((a, b) => a - b);
    process.stderr.write(
      `${label}: ${measured[0]!.segments} segments, CPU ${cpu.map((c) => c.toFixed(2)).join(', ')} s\n`,
    );
    rows.push(
      `| ${label} | ${measured[0]!.segments} | ${cpu[0]!.toFixed(2)} ` +
        `/ ${cpu[Math.floor(cpu.length / 2)]!.toFixed(2)} ` +
        `/ ${cpu[cpu.length - 1]!.toFixed(2)} ` +
        `| ${measured.map((m) => m.wallSec.toFixed(2)).join(', ')} ` +
        `| ${cpu[cpu.length - 1]! < 2 ? 'met' : 'not met'} |`,
    );
  }

  const root = await library(work, count);
  process.stderr.write(`indexing bench: booting on ${count} titles under load\n`);
  const boot = await bootUnderLoad(root, count, 10);
  const ms = (values: readonly number[], p: number) => percentile(values, p).toFixed(1);
  const lines = [
    `Command: \`npx trickle bench indexing --hours ${hours} --assets ${count} ` +
      `--runs ${runs}\`. The long title is a 6 s clip (320x180 H.264 at 150 kbit/s, 2 s ` +
      `GOPs, AAC) looped by stream copy to ${hours} h and packaged by Shaka ` +
      `Packager ${spawnSync(packager, ['--version'], { encoding: 'utf8' }).stdout.trim().split(' ').pop()} ` +
      `(2 s segments). Each run indexes it in a fresh Node process (\`inspectAsset\`, what ` +
      `the origin does for an asset), CPU from process.cpuUsage(); the files are in the ` +
      `page cache after the first run.`,
    '',
    `## A ${hours}-hour title (goal: under 2 s of CPU)`,
    '',
    '| packaging | segments | CPU s min / median / max | wall s | goal |',
    '| --- | ---: | --- | --- | --- |',
    ...rows,
    '',
    `## Booting on ${count} titles (goal: requests are not held up by the first indexing pass)`,
    '',
    `\`trickle serve --media <${count} hard-linked copies of the 24 s demo>\`; from the ` +
      `moment it listens, 4 clients in a loop ask for a title's MPD, one of its segments, ` +
      `and its index (\`/api/assets/<title>\`), titles spread over the library, until ` +
      `/readyz says the pass is over, and 10 s more.`,
    '',
    `First pass: ${boot.indexSec.toFixed(1)} s for ${count} titles ` +
      `(${((boot.indexSec * 1000) / count).toFixed(1)} ms each); errors: ${boot.errors}.`,
    '',
    '| requests | n | p50 ms | p90 ms | p99 ms | max ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    `| during the first pass | ${boot.during.length} | ${ms(boot.during, 50)} ` +
      `| ${ms(boot.during, 90)} | ${ms(boot.during, 99)} | ${ms(boot.during, 100)} |`,
    `| after it | ${boot.after.length} | ${ms(boot.after, 50)} | ${ms(boot.after, 90)} ` +
      `| ${ms(boot.after, 99)} | ${ms(boot.after, 100)} |`,
    '',
    'How: the pass runs in the background, four titles at a time; a request for a title ' +
      'not indexed yet has that title indexed on demand (its own index only), so no ' +
      'request waits for the whole pass.',
    '',
  ];
  await writeResults('indexing.md', 'Indexing at library scale', lines);
}

await runIfMain(import.meta.url, main);
