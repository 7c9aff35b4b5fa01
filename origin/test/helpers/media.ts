/**
 * The shared media fixtures scripts/test.js makes: a 24 s demo clip from the real ffmpeg
 * (TRICKLE_TEST_MEDIA, else .cache/test-media) and the packaging corpus (TRICKLE_TEST_CORPUS, else
 * .cache/test-corpus). A test file run on its own uses them where `npm test` left them, and fails
 * with the command that makes them when they were never made: never a silent skip.
 */
import { existsSync } from 'node:fs';
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const checkout = resolve(import.meta.dirname, '..', '..', '..', '..');

function fixture(variable: string, cached: string, probe: string): string {
  const root = process.env[variable] ?? join(checkout, '.cache', cached);
  if (!existsSync(join(root, probe)))
    throw new Error(
      `the test fixture ${root} is missing: run "npm test -- <file>" (scripts/test.js makes it) or set ${variable}`,
    );
  return root;
}

export function testMediaRoot(): string {
  return fixture('TRICKLE_TEST_MEDIA', 'test-media', join('demo', 'manifest.mpd'));
}

export function testCorpusRoot(): string {
  return fixture('TRICKLE_TEST_CORPUS', 'test-corpus', 'README.md');
}

export function demoDir(): string {
  return join(testMediaRoot(), 'demo');
}

/** A private copy of the demo under a fresh media root, for tests that modify files. */
export async function copyDemo(assetName = 'demo'): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'trickle-media-'));
  await cp(demoDir(), join(root, assetName), { recursive: true });
  return root;
}
