/**
 * The README's Playwright Test example (e2e/examples) runs as a user would run it: type-checked in
 * strict mode, then `npx playwright test -c e2e/examples` with its own origin as web server.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, it } from 'node:test';
import { skipUnless } from '../helpers/requirements.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..', '..');
const media = process.env.TRICKLE_TEST_MEDIA;
const skip = skipUnless('the fixture example', { chromium: true, media: true });

describe('the Playwright Test fixture example', { skip }, () => {
  it('type-checks in strict mode', () => {
    const result = spawnSync('npx', ['tsc', '-p', 'e2e/examples/tsconfig.json'], { cwd: repoRoot, encoding: 'utf8' });
    assert.equal(result.status, 0, `${result.stdout}${result.stderr}`);
  });

  it('passes under `npx playwright test -c e2e/examples`', () => {
    const result = spawnSync('npx', ['playwright', 'test', '-c', 'e2e/examples', '--reporter=line'], { cwd: repoRoot, encoding: 'utf8', env: { ...process.env, TRICKLE_TEST_MEDIA: media }, timeout: 240_000 });
    const output = `${result.stdout}${result.stderr}`;
    assert.equal(result.status, 0, output);
    assert.match(output, /2 passed/);
  });
});
