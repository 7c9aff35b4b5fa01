/**
 * The README's Playwright Test example (e2e/examples) runs as a user would run it: type-checked in
 * strict mode, then `npx playwright test -c e2e/examples` against a plain URL (its own origin as
 * web server; the browser from the config's launchOptions, traces recorded as `--trace on` asks),
 * and against an origin in a lab with the browser in the lab's player namespace (root).
 */
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, describe, it } from 'node:test';
import { labDown, labUp, profileLink, startLabOrigin, type Lab } from '../../src/index.js';
import { skipUnless, testMediaRoot } from '../helpers/requirements.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..', '..');
const media = testMediaRoot();
const skip = skipUnless('the fixture example', { chromium: true });
const labSkip = skip === false ? skipUnless('the fixture example in a lab', { root: true, chromium: true }) : skip;

/** Runs the example with its results in a temporary directory (handed to `check`, then removed). */
async function runExample(
  extraArgs: readonly string[],
  env: NodeJS.ProcessEnv,
  check: (output: string, resultsDir: string) => void,
): Promise<void> {
  const results = await mkdtemp(join(tmpdir(), 'trickle-example-results-'));
  try {
    const result = spawnSync(
      'npx',
      ['playwright', 'test', '-c', 'e2e/examples', '--reporter=line', '--output', results, ...extraArgs],
      { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, TRICKLE_TEST_MEDIA: media, ...env }, timeout: 240_000 },
    );
    const output = `${result.stdout}${result.stderr}`;
    assert.equal(result.status, 0, output);
    check(output, results);
  } finally {
    await rm(results, { recursive: true, force: true });
  }
}

/** Every file below `dir` whose name ends with `suffix`. */
function filesEnding(dir: string, suffix: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith(suffix));
}

describe('the Playwright Test fixture example', { skip }, () => {
  it('type-checks in strict mode', () => {
    const result = spawnSync('npx', ['tsc', '-p', 'e2e/examples/tsconfig.json'], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  });

  it('passes against a plain URL, with the browser and tracing the Playwright config asks for', async () => {
    await runExample(['--trace', 'on'], {}, (output, results) => {
      assert.match(output, /2 passed/);
      assert.equal(
        filesEnding(results, 'trace.zip').length,
        2,
        "one trace per test: the fixture's contexts are traced",
      );
    });
  });
});

describe('the Playwright Test fixture example in a lab', { skip: labSkip }, () => {
  let lab: Lab | undefined;
  let origin: ChildProcess | undefined;

  after(async () => {
    if (origin !== undefined && origin.exitCode === null) {
      origin.kill('SIGTERM');
      await once(origin, 'exit');
    }
    if (lab !== undefined) await labDown(lab.name);
  });

  it('plays the lab origin from the player namespace (qoeNamespace)', async () => {
    lab = await labUp('fxex', profileLink('dsl-6mbit'));
    origin = await startLabOrigin(lab, { media, logLevel: 'warn' });
    const url = `http://${lab.address('origin')}:8080/media/demo/manifest.mpd`;
    await runExample([], { QOE_URL: url, QOE_NAMESPACE: lab.namespace('player') }, (output) => {
      assert.match(output, /1 skipped/);
      assert.match(output, /1 passed/);
    });
  });
});
