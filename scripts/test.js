#!/usr/bin/env node
// The project's test command (`npm test`): build, make the media fixture the tests share (a short
// demo clip made with the real ffmpeg, cached in .cache/), then run every package's compiled tests
// with node's test runner.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const root = resolve(import.meta.dirname, '..');
const run = (command, args, env = {}) => {
  const result = spawnSync(command, args, { cwd: root, stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
};

run('npx', ['tsc', '-b']);

const mediaRoot = join(root, '.cache', 'test-media');
if (!existsSync(join(mediaRoot, 'demo', 'manifest.mpd'))) {
  console.log('test fixture: generating a 24 s demo clip with ffmpeg (once; cached in .cache/test-media)');
  run('node', ['bin/trickle.js', 'media', 'demo', '--out', join(mediaRoot, 'demo'), '--duration', '24', '--overwrite']);
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

const filter = process.argv.slice(2);
const files = ['dist/test', 'origin/dist/test', 'native/dist/test', 'player-sim/dist/test', 'e2e/dist/test']
  .flatMap((dir) => testFiles(join(root, dir)))
  .filter(hasSource)
  .filter((file) => filter.length === 0 || filter.some((f) => file.includes(f)));
// Tests that count retransmissions or time flows through emulated paths (the lab's user-space delay
// line, namespace paths with TBF) need the machine's two cores to themselves: run beside another
// such test, each one's figures pick up the other's load. They run one at a time, after the rest.
const pathTests = [join('e2e', 'dist', 'test', 'lab') + '/', join('e2e', 'dist', 'test', 'policies') + '/', join('e2e', 'dist', 'test', 'qoe', 'run.test.js'), join('e2e', 'dist', 'test', 'qoe-matrix', 'cell.test.js'), join('e2e', 'dist', 'test', 'experiment', 'smoke.test.js'), join('e2e', 'dist', 'test', 'experiment', 'population-smoke.test.js'), join('dist', 'test', 'docker', 'stack.test.js'), join('origin', 'dist', 'test', 'delivery', 'churn.test.js'), join('e2e', 'dist', 'test', 'examples') + '/', join('native', 'dist', 'test', 'clamp', 'bpf-path.test.js'), join('native', 'dist', 'test', 'clamp', 'bpf-schedule.test.js')];
const isPathTest = (file) => pathTests.some((part) => file.includes(part));
const env = { TRICKLE_TEST_MEDIA: mediaRoot };
const others = files.filter((file) => !isPathTest(file));
const serial = files.filter(isPathTest);
if (others.length > 0) run('node', ['--test', '--test-concurrency=2', '--test-reporter=spec', ...others], env);
if (serial.length > 0) run('node', ['--test', '--test-concurrency=1', '--test-reporter=spec', ...serial], env);
