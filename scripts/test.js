#!/usr/bin/env node
// The project's test command.
//
//   npm test                     everything (what .ci/run runs): build, the media fixture, then the
//                                test files, each in its own node:test process, in two phases
//   npm run test:quick           unit tests and tests over loopback sockets only: no lab, no
//                                browser, no Docker, no guest kernel (the edit-test loop)
//   npm test -- <part of a path> only the matching test files (either tier)
//
// Phases: the concurrent phase runs two files at a time (this machine kind has two cores); the
// serial phase runs the files that time flows through emulated paths or share the machine's
// network namespaces, cgroups and Docker engine, one at a time, so no figure picks up another
// test's load. At the end: the time of every phase, the 10 slowest files, every skip with its
// reason and every failure. The exit code is 1 when any test failed.
//
// The contract with test files: TRICKLE_TEST_MEDIA and TRICKLE_TEST_CORPUS name the media fixtures
// this script makes (a 24 s demo clip made with the real ffmpeg, in .cache/test-media; the packaging
// corpus, in .cache/test-corpus); a test file run on its own finds them there, and fails with a
// clear message naming this command when they were never made.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { classify, serialOrder, testFileRoots } from './test-tiers.js';

const root = resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const filter = args.filter((arg) => arg !== '--quick');
const startedMs = Date.now();
const phases = [];

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

function phase(name, body) {
  const fromMs = Date.now();
  const result = body();
  const finish = (value) => {
    phases.push({ name, ms: Date.now() - fromMs });
    return value;
  };
  return result instanceof Promise ? result.then(finish) : finish(result);
}

function runOrExit(command, commandArgs, env = {}) {
  const result = spawnSync(command, commandArgs, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

phase('build (tsc -b)', () => runOrExit('npx', ['tsc', '-b']));

const mediaRoot = join(root, '.cache', 'test-media');
const corpusRoot = join(root, '.cache', 'test-corpus');
phase('media fixtures', () => {
  if (!existsSync(join(mediaRoot, 'demo', 'manifest.mpd'))) {
    console.log('test fixture: generating a 24 s demo clip with ffmpeg (once; cached in .cache/test-media)');
    runOrExit('node', ['bin/trickle.js', 'media', 'demo', '--out', join(mediaRoot, 'demo'), '--duration', '24', '--overwrite']);
  }
  // The packaging corpus (ffmpeg's and Shaka Packager's shapes of a 6 s clip), made again when its recipes change.
  const stamp = createHash('sha256').update(readFileSync(join(root, 'origin', 'dist', 'src', 'media', 'corpus.js'))).digest('hex').slice(0, 16);
  const stampPath = join(corpusRoot, '.stamp');
  if (!existsSync(stampPath) || readFileSync(stampPath, 'utf8') !== stamp) {
    console.log('test fixture: packaging a 6 s clip in every corpus shape (ffmpeg, Shaka Packager; cached in .cache/test-corpus)');
    runOrExit('node', ['bin/trickle.js', 'media', 'corpus', '--out', corpusRoot, '--duration', '6']);
    writeFileSync(stampPath, stamp);
  }
});

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

const files = testFileRoots
  .flatMap((dir) => testFiles(join(root, dir)))
  .filter(hasSource)
  .map((file) => ({ path: file, name: relative(root, file), tier: classify(relative(root, file)) }))
  .filter((file) => filter.length === 0 || filter.some((f) => file.name.includes(f)))
  .filter((file) => !quick || file.tier === 'quick');

const concurrent = files.filter((file) => file.tier !== 'serial');
const serial = serialOrder(files.filter((file) => file.tier === 'serial'));
const results = [];
const resultsDir = mkdtempSync(join(tmpdir(), 'trickle-test-'));
let finished = 0;
let launched = 0;

/** Runs one test file in its own node:test process; its spec output is printed whole when it ends. */
function runFile(file) {
  return new Promise((done) => {
    const jsonPath = join(resultsDir, `${launched++}.jsonl`);
    const fromMs = Date.now();
    const child = spawn(
      process.execPath,
      ['--test', '--test-reporter=spec', '--test-reporter-destination=stdout', `--test-reporter=${join(root, 'scripts', 'test-reporter.js')}`, `--test-reporter-destination=${jsonPath}`, file.path],
      { cwd: root, env: { ...process.env, TRICKLE_TEST_MEDIA: mediaRoot, TRICKLE_TEST_CORPUS: corpusRoot }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const output = [];
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (code, signal) => {
      const ms = Date.now() - fromMs;
      const tests = existsSync(jsonPath)
        ? readFileSync(jsonPath, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((line) => JSON.parse(line))
        : [];
      const leaves = tests.filter((t) => !t.suite);
      const count = (status) => leaves.filter((t) => t.status === status).length;
      // A file that exits non-zero with no failed test (a crash at import, a suite hook) failed all the same.
      const failed = count('fail') > 0 || code !== 0;
      finished++;
      const result = { ...file, ms, pass: count('pass'), fail: count('fail'), skip: count('skip'), failed, code: code ?? signal, tests };
      results.push(result);
      process.stdout.write(`\n=== [${finished}/${files.length}] ${file.name} (${file.tier}) ===\n`);
      process.stdout.write(Buffer.concat(output));
      process.stdout.write(`=== ${failed ? 'FAILED' : 'ok'}: ${file.name}: ${result.pass} pass, ${result.fail} fail, ${result.skip} skipped in ${seconds(ms)}${code !== 0 && count('fail') === 0 ? ` (exit ${code ?? signal})` : ''} ===\n`);
      done(result);
    });
  });
}

async function pool(list, width) {
  let next = 0;
  const workers = Array.from({ length: Math.min(width, list.length) }, async () => {
    while (next < list.length) await runFile(list[next++]);
  });
  await Promise.all(workers);
}

console.log(`tests: ${files.length} files${quick ? ' (quick tier)' : ''}: ${concurrent.length} two at a time, then ${serial.length} one at a time`);
await phase(`concurrent phase (${concurrent.length} files, 2 at a time)`, () => pool(concurrent, 2));
await phase(`serial phase (${serial.length} files, 1 at a time)`, () => pool(serial, 1));
rmSync(resultsDir, { recursive: true, force: true });

const total = (key) => results.reduce((sum, r) => sum + r[key], 0);
console.log('\n=== Summary ===');
console.log(`${total('pass')} pass, ${total('fail')} fail, ${total('skip')} skipped, in ${results.length} files`);
console.log('\nPhases:');
for (const { name, ms } of phases) console.log(`  ${seconds(ms).padStart(9)}  ${name}`);
console.log(`  ${seconds(Date.now() - startedMs).padStart(9)}  in all`);
console.log('\nThe 10 slowest files:');
for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 10)) console.log(`  ${seconds(r.ms).padStart(9)}  ${r.name} (${r.tier})`);
const skips = results.flatMap((r) => r.tests.filter((t) => t.status === 'skip' && !t.suite).map((t) => `${r.name}: ${t.name}${t.reason ? `: ${t.reason}` : ''}`));
if (skips.length > 0) {
  console.log('\nSkipped:');
  for (const line of skips) console.log(`  ${line}`);
}
const failures = results.filter((r) => r.failed);
if (failures.length > 0) {
  console.log('\nFailed:');
  for (const r of failures) {
    const failedTests = r.tests.filter((t) => t.status === 'fail' && !t.suite);
    if (failedTests.length === 0) console.log(`  ${r.name}: exited ${r.code} with no failed test (see its output above)`);
    for (const t of failedTests) console.log(`  ${r.name}: ${t.name}: ${t.error ?? ''}`);
  }
  process.exit(1);
}
