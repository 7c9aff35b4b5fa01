/** The `trickle` command as users run it: real processes, real ffmpeg. */
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, readFile, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { before, describe, it } from 'node:test';
import { buildAssetIndex } from '@trickle/origin';
import { testMediaRoot } from './helpers/media.js';

const cli = resolve(import.meta.dirname, '..', '..', 'bin', 'trickle.js');
const exec = promisify(execFile);

function trickle(args: string[], options: { cwd?: string; env?: Record<string, string> } = {}) {
  const result = spawnSync(process.execPath, [cli, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: { ...process.env, ...options.env },
    encoding: 'utf8',
    timeout: 120_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe('trickle CLI', () => {
  let work: string;
  let input: string;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'trickle-cli-'));
    input = join(work, 'input-4x3.mp4');
    await exec('ffmpeg', [
      '-hide_banner',
      '-loglevel',
      'error',
      '-f',
      'lavfi',
      '-i',
      'testsrc2=s=640x480:r=25:d=4',
      '-f',
      'lavfi',
      '-i',
      'sine=f=300:d=4',
      '-c:v',
      'libx264',
      '-preset',
      'ultrafast',
      '-c:a',
      'aac',
      '-shortest',
      input,
    ]);
  });

  it('lists its commands', () => {
    const { status, stdout } = trickle(['--help']);
    assert.equal(status, 0);
    for (const command of [
      'media',
      'package',
      'serve',
      'tls',
      'native',
      'lab',
      'router',
      'sim',
      'e2e',
      'experiment',
      'bench',
      'traces',
    ])
      assert.match(stdout, new RegExp(`^  ${command}\\b`, 'm'));
  });

  it("ends every command's help with examples, and states defaults one way, the config's own", () => {
    const leaves = [
      ['media', 'demo'],
      ['package'],
      ['serve'],
      ['tls', 'dev-cert'],
      ['native', 'info'],
      ['native', 'setup'],
      ['native', 'teardown'],
      ['lab', 'up'],
      ['lab', 'exec'],
      ['lab', 'status'],
      ['lab', 'down'],
      ['lab', 'profiles'],
      ['router'],
      ['sim'],
      ['traces'],
      ['e2e'],
      ['experiment'],
      ['bench'],
      ['bench', 'origin'],
      ['bench', 'pacing'],
      ['bench', 'qoe'],
      ['bench', 'soak'],
      ['bench', 'lab'],
      [],
    ];
    for (const command of leaves) {
      const { status, stdout, stderr } = trickle([...command, '--help']);
      assert.equal(status, 0, `${command.join(' ')}: ${stderr}`);
      assert.match(stdout, /\nExamples:\n( {2}#.*\n)* {2}\$ /, `trickle ${command.join(' ')} --help has examples`);
      assert.doesNotMatch(stdout, /\(default [^:]/, `trickle ${command.join(' ')} --help writes "(default: x)"`);
    }
    // serve's flags leave the config's layering alone; their help shows the config schema's defaults.
    const serve = trickle(['serve', '--help']).stdout.replace(/\s+/g, ' ');
    assert.match(serve, /default delivery policy \(default: trickle-abr\)/);
    assert.match(serve, /TCP port \(default: 8080\)/);
  });

  it('says its version, and lists the benchmarks on `bench --help`', async () => {
    const version = trickle(['--version']);
    assert.equal(version.status, 0);
    const { version: expected } = JSON.parse(
      await readFile(resolve(import.meta.dirname, '..', '..', 'package.json'), 'utf8'),
    ) as { version: string };
    assert.equal(version.stdout.trim(), expected);
    const help = trickle(['bench', '--help']);
    assert.equal(help.status, 0, help.stderr);
    assert.match(help.stdout, /origin \(serving speed/);
    assert.match(help.stdout, /pacing \(paced flows/);
    assert.match(help.stdout, /abr-sweep \(the ABR-aware rate/);
    assert.match(help.stdout, /lab \(the\s+lab's\s+accuracy\s+per\s+link\s+backend/);
    const missing = trickle(['bench']);
    assert.notEqual(missing.status, 0);
    assert.match(
      missing.stderr,
      /missing argument 'name'\. Allowed choices are origin, abr-sweep, pacing, qoe, soak, population, corpus, indexing, lab/,
    );
  });

  it('makes a development CA and a server chain it signs, for the names given', async () => {
    const out = join(work, 'tls');
    const { status, stdout } = trickle(['tls', 'dev-cert', '--out', out, '--host', 'media.test', '10.1.2.3']);
    assert.equal(status, 0);
    assert.match(stdout, new RegExp(`--tls-cert ${join(out, 'chain.pem')} --tls-key ${join(out, 'key.pem')}`));
    const verified = await exec('openssl', ['verify', '-CAfile', join(out, 'ca.pem'), join(out, 'server.pem')]);
    assert.match(verified.stdout, /: OK/);
    const { stdout: text } = await exec('openssl', [
      'x509',
      '-in',
      join(out, 'chain.pem'),
      '-noout',
      '-ext',
      'subjectAltName',
    ]);
    assert.match(text, /DNS:media\.test, IP Address:10\.1\.2\.3/);
  });

  it('ends a benchmark that lacks nginx with one line naming the setup that installs it', () => {
    // PATH with only node: no nginx, wrk or bpftool.
    const env = { PATH: dirname(process.execPath) };
    for (const name of ['pacing', 'origin']) {
      const result = trickle(['bench', name], { env });
      assert.notEqual(result.status, 0);
      const lines = result.stderr.trim().split('\n');
      assert.equal(lines.length, 1, result.stderr);
      assert.match(lines[0]!, /(nginx|wrk) not found: `\.\/scripts\/setup --bench`.*\[BENCH_ERR_MISSING_TOOL\]/);
    }
  });

  it('says which benchmark or experiment file it does not know', () => {
    const bench = trickle(['bench', 'nothing']);
    assert.notEqual(bench.status, 0);
    assert.match(
      bench.stderr,
      /Allowed choices are origin, abr-sweep, pacing, qoe, soak, population, corpus, indexing, lab/,
    );
    const experiment = trickle(['experiment', '/nonexistent.yaml', '--out', '/tmp/x']);
    assert.notEqual(experiment.status, 0);
    assert.match(experiment.stderr, /cannot read \/nonexistent.yaml.*E2E_ERR_EXPERIMENT_CONFIG/);
  });

  it('tells how to create the demo when serve finds none', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'trickle-empty-'));
    const { status, stderr } = trickle(['serve', '--port', '0'], { cwd: empty });
    assert.equal(status, 1);
    assert.match(stderr, /npx trickle media demo --out .*media\/demo/);
    assert.match(stderr, /ORIGIN_ERR_DEMO_MISSING/);
  });

  it('rejects bad flags and bad config with the key named', () => {
    const badPort = trickle(['serve', '--port', '99999']);
    assert.notEqual(badPort.status, 0);
    assert.match(badPort.stderr, /port must be an integer/);
    // Numbers follow one rule: blank text is not 0, and a lab's seed or buffer is refused before it needs root.
    for (const [args, message] of [
      [['lab', 'up', 't', '--profile', 'dsl-6mbit', '--seed', 'abc'], 'seed must be a whole number from 0'],
      [
        ['lab', 'up', 't', '--rate', '6mbit', '--rtt', '40ms', '--buffer-bdp', ''],
        'buffer-bdp must be a number above 0',
      ],
      [['lab', 'up', 'p', '--population', 'dc1-like', '--viewers', '2.5'], 'viewers must be a whole number from 1'],
      [['serve', '--startup-seconds', ' '], 'startup-seconds must be a number from 0'],
    ] as const) {
      const refused = trickle([...args]);
      assert.equal(refused.status, 1, args.join(' '));
      assert.ok(refused.stderr.includes(message), `${args.join(' ')}: ${refused.stderr}`);
    }
    const badEnv = trickle(['serve', '--media', work, '--port', '0'], { env: { TRICKLE_LOG_LEVEL: 'chatty' } });
    assert.equal(badEnv.status, 1);
    assert.match(badEnv.stderr, /"logLevel" \(from environment\)/);
  });

  it('reports unreadable input, an impossible ladder and a missing ffmpeg clearly', async () => {
    const missing = trickle(['package', join(work, 'nope.mp4'), '--out', join(work, 'x')]);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /ORIGIN_ERR_INPUT_UNREADABLE/);
    const text = join(work, 'notes.txt');
    await writeFile(text, 'not a video\n');
    const garbage = trickle(['package', text, '--out', join(work, 'x')]);
    assert.equal(garbage.status, 1);
    assert.match(garbage.stderr, /ffprobe cannot read .*notes\.txt.*ORIGIN_ERR_INPUT_UNREADABLE/s);
    const upscale = trickle(['package', input, '--out', join(work, 'x'), '--ladder', '360p:800k,720p:2800k']);
    assert.equal(upscale.status, 1);
    assert.match(upscale.stderr, /720p would upscale the 640x480 source.*--force.*ORIGIN_ERR_LADDER/s);
    const noFfmpeg = trickle(['package', input, '--out', join(work, 'x')], {
      env: { TRICKLE_FFPROBE: '/nonexistent/ffprobe', TRICKLE_FFMPEG: '/nonexistent/ffmpeg' },
    });
    assert.equal(noFfmpeg.status, 1);
    assert.match(noFfmpeg.stderr, /not found on PATH.*apt-get install ffmpeg.*ORIGIN_ERR_FFMPEG_MISSING/s);
  });

  it(
    "packages a 4:3 file into DASH + HLS + progressive, the source's own size in place " +
      'of the rungs larger than it',
    async () => {
      const out = join(work, 'asset');
      const { status, stderr } = trickle(['package', input, '--out', out]);
      assert.equal(status, 0, stderr);
      assert.match(stderr, /encode: 100%/);
      const files = await readdir(out);
      for (const name of ['manifest.mpd', 'master.m3u8', 'progressive.mp4', 'init-0.m4s', 'media_0.m3u8'])
        assert.ok(files.includes(name), name);
      assert.ok(!files.some((name) => name.startsWith('.')), 'no staging leftovers');
      const index = await buildAssetIndex('asset', out, {
        mpdFiles: ['manifest.mpd'],
        playlistFiles: ['master.m3u8'],
        mp4Files: ['progressive.mp4'],
      });
      const video = index.renditions.filter((r) => r.kind === 'video');
      assert.deepEqual(
        video.map((r) => [r.width, r.height]),
        [
          [312, 234],
          [480, 360],
          [640, 480],
        ],
      );
      for (const rendition of index.renditions)
        assert.ok(Math.abs(rendition.durationSec - 4) < 0.1, `${rendition.id}: ${rendition.durationSec}`);
      assert.equal(index.progressive?.faststart, true);
      assert.match(await readFile(join(out, 'master.m3u8'), 'utf8'), /AVERAGE-BANDWIDTH=/);

      const again = trickle(['package', input, '--out', out]);
      assert.equal(again.status, 1);
      assert.match(again.stderr, /already exists.*--overwrite/);
    },
  );

  it('refuses to overwrite demo output without --overwrite, and --if-missing is a no-op when present', async () => {
    const out = join(work, 'media', 'demo');
    await mkdir(out, { recursive: true });
    await writeFile(join(out, 'manifest.mpd'), '<MPD/>');
    const skipped = trickle(['media', 'demo', '--out', out, '--if-missing']);
    assert.equal(skipped.status, 0);
    assert.match(skipped.stderr, /already in/);
    const refused = trickle(['media', 'demo', '--out', out, '--duration', '4']);
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /--overwrite/);
  });
});

describe('trickle media inspect and corpus', () => {
  it('says what the origin understood of an asset folder, as text and as JSON', () => {
    const demo = join(testMediaRoot(), 'demo');
    const text = trickle(['media', 'inspect', demo]);
    assert.equal(text.status, 0, text.stderr);
    assert.match(text.stdout, /^asset demo: 2\d\.\d\d s, segments from mpd$/m);
    assert.match(
      text.stdout,
      /^ {2}3 \(video 720p, fmp4, files, from manifest\.mpd\): paced, 12 segments, .* kbit\/s \(mean \d+\), durations from moof$/m,
    );
    assert.match(text.stdout, /^progressive: progressive\.mp4 \(faststart\)/m);
    assert.match(text.stdout, /^nothing left unread$/m);
    const json = trickle(['media', 'inspect', demo, '--json', '--segments']);
    const summary = JSON.parse(json.stdout) as { renditions: { paced: boolean; segments: unknown[] }[] };
    assert.equal(summary.renditions.length, 5);
    assert.ok(summary.renditions.every((r) => r.paced && r.segments.length === 12));
  });

  it('refuses a folder that is not an asset, and an unknown corpus shape, in one coded line', async () => {
    const empty = await mkdtemp(join(tmpdir(), 'trickle-inspect-'));
    const notAsset = trickle(['media', 'inspect', empty]);
    assert.equal(notAsset.status, 1);
    assert.match(
      notAsset.stderr,
      /^trickle: .* holds no MPD, HLS playlist or MP4 at its top: give an asset's folder \[ORIGIN_ERR_INPUT_UNREADABLE\]\n$/,
    );
    const badShape = trickle(['media', 'corpus', '--out', empty, '--shapes', 'gpac-magic']);
    assert.equal(badShape.status, 1);
    assert.match(
      badShape.stderr,
      /unknown corpus shape gpac-magic \(known: ffmpeg-dash-number-timeline, .*\) \[ORIGIN_ERR_CONFIG\]/,
    );
  });
});

describe('trickle sim and traces', () => {
  const media = testMediaRoot();

  it('prints the aggregate figures as JSON for a model run, and writes per-session records', async () => {
    const out = await mkdtemp(join(tmpdir(), 'trickle-sim-'));
    const { status, stdout, stderr } = trickle([
      'sim',
      '--manifest',
      join(media, 'demo', 'manifest.mpd'),
      '--traces',
      'lte-like,3g-like',
      '--abr',
      'bola',
      '--policy',
      'trickle',
      '--sessions',
      '30',
      '--session-seconds',
      '120',
      '--json',
      '--out',
      out,
    ]);
    assert.equal(status, 0, stderr);
    const agg = JSON.parse(stdout) as Record<string, unknown>;
    for (const key of [
      'sessions',
      'rebufferChance',
      'rebufferFrequency',
      'startupDelayMs',
      'meanBitrateBps',
      'switchesPerMinute',
    ])
      assert.ok(key in agg, key);
    assert.equal(agg.sessions, 30);
    const csv = (await readFile(join(out, 'sessions.csv'), 'utf8')).trim().split('\n');
    assert.equal(csv.length, 31);
    assert.equal((await readFile(join(out, 'sessions.jsonl'), 'utf8')).trim().split('\n').length, 30);
  });

  it('names the problem for a missing trace, an unknown rule and model mode without traces', () => {
    const manifest = join(media, 'demo', 'manifest.mpd');
    const noTrace = trickle(['sim', '--manifest', manifest, '--traces', '/nonexistent']);
    assert.equal(noTrace.status, 1);
    assert.match(noTrace.stderr, /no trace file or directory.*SIM_ERR_TRACE/);
    const badRule = trickle(['sim', '--manifest', manifest, '--traces', 'lte-like', '--abr', 'magic']);
    assert.match(badRule.stderr, /no ABR rule "magic".*SIM_ERR_CONFIG/);
    const noTraces = trickle(['sim', '--manifest', manifest]);
    assert.match(noTraces.stderr, /model mode needs --traces/);
  });

  it('writes the synthetic traces, which read back', async () => {
    const out = await mkdtemp(join(tmpdir(), 'trickle-traces-'));
    const { status } = trickle(['traces', '--out', out]);
    assert.equal(status, 0);
    assert.deepEqual((await readdir(out)).sort(), [
      '3g-like.txt',
      'constant-6mbit.txt',
      'lte-like.txt',
      'step-down-8-to-2mbit.txt',
      'step-up-2-to-8mbit.txt',
    ]);
  });
});
