/**
 * ./scripts/setup on a machine that has everything: idempotent (installs nothing, builds what
 * changed), and it removes the half-made npx cache entry that `npx trickle` run before setup
 * leaves (npx fetched npm's unrelated package of that name), which broke every later `npx trickle`
 * outside a checkout. Run with a cache folder of its own, so the user's is not touched.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const repoRoot = resolve(import.meta.dirname, '..', '..');

describe('./scripts/setup', () => {
  it('installs nothing more where everything is there, and removes a broken npx cache entry of trickle', async () => {
    const cache = await mkdtemp(join(tmpdir(), 'trickle-npm-cache-'));
    try {
      const broken = join(cache, '_npx', '5ae525d6b6b9a358');
      await mkdir(join(broken, 'node_modules', 'trickle'), { recursive: true });
      const healthy = join(cache, '_npx', '0123456789abcdef');
      await mkdir(join(healthy, 'node_modules', 'trickle'), { recursive: true });
      await writeFile(join(healthy, 'package.json'), '{}');
      const run = spawnSync(join(repoRoot, 'scripts', 'setup'), [], {
        cwd: repoRoot,
        encoding: 'utf8',
        env: { ...process.env, npm_config_cache: cache },
        timeout: 300_000,
      });
      assert.equal(run.status, 0, `${run.stdout}\n${run.stderr}`);
      assert.doesNotMatch(run.stdout, /installing Debian packages/, 'nothing to install');
      assert.match(run.stdout, /setup: removed a broken npx cache entry/);
      assert.equal(existsSync(broken), false, 'the half-made entry is gone');
      assert.equal(existsSync(healthy), true, 'a whole entry is kept');
      assert.match(run.stdout, /setup: done/);
    } finally {
      await rm(cache, { recursive: true, force: true });
    }
  });
});
