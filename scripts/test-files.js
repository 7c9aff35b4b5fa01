// What scripts/test.js and scripts/flake-hunt share: the build and the media fixtures, the test
// files (compiled, with their sources, by tier), and running one file in its own node:test process.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { classify, testFileRoots } from './test-tiers.js';

export const root = resolve(import.meta.dirname, '..');
export const mediaRoot = join(root, '.cache', 'test-media');
export const corpusRoot = join(root, '.cache', 'test-corpus');

export function runOrExit(command, commandArgs) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

export function build() {
  runOrExit('npx', ['tsc', '-b']);
}

/** npm run lint; whether it passed (the tests run either way). */
export function lint() {
  return spawnSync(process.execPath, [join(root, 'scripts', 'lint.js')], { cwd: root, stdio: 'inherit' }).status === 0;
}

/** As runOrExit, without blocking this process (an early test pool's output keeps flowing meanwhile). */
function runAsyncOrExit(command, commandArgs) {
  return new Promise((resolve) => {
    const child = spawn(command, commandArgs, { cwd: root, stdio: 'inherit' });
    child.on('close', (code) => {
      if (code !== 0) process.exit(code ?? 1);
      resolve();
    });
  });
}

/**
 * The media fixtures the tests share: a 24 s demo clip made with the real ffmpeg (once), and the
 * packaging corpus (ffmpeg's and Shaka Packager's shapes of a 6 s clip), made again when its recipes change.
 */
export async function makeFixtures() {
  if (!existsSync(join(mediaRoot, 'demo', 'manifest.mpd'))) {
    console.log('test fixture: generating a 24 s demo clip with ffmpeg (once; cached in .cache/test-media)');
    await runAsyncOrExit('node', [
      'bin/trickle.js',
      'media',
      'demo',
      '--out',
      join(mediaRoot, 'demo'),
      '--duration',
      '24',
      '--overwrite',
    ]);
  }
  const stamp = createHash('sha256')
    .update(readFileSync(join(root, 'origin', 'dist', 'src', 'media', 'corpus.js')))
    .digest('hex')
    .slice(0, 16);
  const stampPath = join(corpusRoot, '.stamp');
  if (!existsSync(stampPath) || readFileSync(stampPath, 'utf8') !== stamp) {
    console.log(
      'test fixture: packaging a 6 s clip in every corpus shape (ffmpeg, Shaka Packager; cached in .cache/test-corpus)',
    );
    await runAsyncOrExit('node', ['bin/trickle.js', 'media', 'corpus', '--out', corpusRoot, '--duration', '6']);
    writeFileSync(stampPath, stamp);
  }
}

function testFiles(dir) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return testFiles(path);
    return name.endsWith('.test.js') ? [path] : [];
  });
}

/** A compiled test whose TypeScript source is gone (moved or deleted) is stale output, not a test. */
function hasSource(file) {
  return existsSync(file.replace(`${join('dist', 'test')}`, 'test').replace(/\.js$/, '.ts'));
}

/** The test files matching any of `filters` (parts of a path; none: all), with their tiers. */
export function listTestFiles(filters = []) {
  return testFileRoots
    .flatMap((dir) => testFiles(join(root, dir)))
    .filter(hasSource)
    .map((path) => ({ path, name: relative(root, path), tier: classify(relative(root, path)) }))
    .filter((file) => filters.length === 0 || filters.some((f) => file.name.includes(f)));
}

/** The test processes running now (a stopped flake hunt kills them and what they started). */
export const runningTests = new Set();

/**
 * Runs one test file in its own node:test process. Resolves with its wall time, its tests (one
 * record per finished test: status, name, duration, failure), its exit code and its spec output.
 * `ownGroup`: the process leads a process group of its own, so a Ctrl-C in the terminal reaches
 * the caller alone, which can then stop the test and everything it started before they are orphaned.
 */
export function runTestFile(file, { ownGroup = false } = {}) {
  return new Promise((done) => {
    const scratch = mkdtempSync(join(tmpdir(), 'trickle-test-'));
    const jsonPath = join(scratch, 'tests.jsonl');
    const fromMs = Date.now();
    const child = spawn(
      process.execPath,
      [
        '--test',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        `--test-reporter=${join(root, 'scripts', 'test-reporter.js')}`,
        `--test-reporter-destination=${jsonPath}`,
        file.path,
      ],
      {
        cwd: root,
        env: { ...process.env, TRICKLE_TEST_MEDIA: mediaRoot, TRICKLE_TEST_CORPUS: corpusRoot },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: ownGroup,
      },
    );
    runningTests.add(child);
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (code, signal) => {
      runningTests.delete(child);
      const tests = existsSync(jsonPath)
        ? readFileSync(jsonPath, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line))
        : [];
      rmSync(scratch, { recursive: true, force: true });
      done({ ms: Date.now() - fromMs, tests, code: code ?? signal, output: Buffer.concat(output) });
    });
  });
}
