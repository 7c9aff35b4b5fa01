/**
 * The QoE fixture as a user gets it: a fresh project with only @playwright/test and @trickle/e2e
 * installed from packed tarballs (with the packages it depends on, which no registry has), the
 * example's spec, config and origin copied in, and `npx playwright test` run there with the
 * project's own Playwright configuration.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { skipUnless, testMediaRoot } from './helpers/requirements.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
const skip = skipUnless('the fixture from packed packages', { chromium: true });

function step(
  what: string,
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const startMs = performance.now();
  const result = spawnSync(command, args, {
    cwd,
    env,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  const output = `${result.stdout}${result.stderr}`;
  assert.equal(result.status, 0, `${what}: ${result.error?.message ?? ''}${output.slice(-4000)}`);
  console.log(`# ${what}: ${((performance.now() - startMs) / 1000).toFixed(1)} s`);
  return output;
}

describe('the QoE fixture installed from packed packages into a fresh project', { skip }, () => {
  let project: string;

  before(async () => {
    project = await mkdtemp(join(tmpdir(), 'trickle-fixture-'));
    const packs = join(project, '.packs');
    await mkdir(packs);
    step(
      'pack e2e, origin, native, player-sim',
      'npm',
      [
        'pack',
        '--silent',
        '--pack-destination',
        packs,
        ...['e2e', 'origin', 'native', 'player-sim'].flatMap((workspace) => ['--workspace', workspace]),
      ],
      repoRoot,
    );
    const playwrightVersion = (
      JSON.parse(readFileSync(join(repoRoot, 'node_modules', '@playwright', 'test', 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    await writeFile(
      join(project, 'package.json'),
      JSON.stringify({ name: 'my-player-tests', private: true, type: 'module' }),
    );
    const tarballs = readdirSync(packs).map((name) => join('.packs', name));
    step(
      'npm install @playwright/test and the tarballs',
      'npm',
      ['install', '--no-audit', '--no-fund', '--prefer-offline', `@playwright/test@${playwrightVersion}`, ...tarballs],
      project,
    );
    for (const file of ['demo-qoe.spec.ts', 'playwright.config.ts', 'origin.mjs'])
      await copyFile(join(repoRoot, 'e2e', 'examples', file), join(project, file));
  });

  after(async () => {
    if (project !== undefined) await rm(project, { recursive: true, force: true });
  });

  // The example's origin paces without the BPF program: other tests of this phase may hold the
  // default cgroup's pins.
  it("runs the example spec with the project's Playwright configuration", () => {
    const installed = readdirSync(join(project, 'node_modules', '@trickle')).sort();
    assert.deepEqual(installed, ['e2e', 'native', 'origin', 'player-sim']);
    const output = step('npx playwright test', 'npx', ['playwright', 'test', '--reporter=line'], project, {
      ...process.env,
      TRICKLE_TEST_MEDIA: testMediaRoot(),
      TRICKLE_DELIVERY__CLAMP__BACKEND: 'pacing-rate',
    });
    assert.match(output, /2 passed/);
  });
});
