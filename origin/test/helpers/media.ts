/** The shared media fixture made by scripts/test.js (a 24 s demo clip from the real ffmpeg). */
import { cp, mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function testMediaRoot(): string {
  const root = process.env.TRICKLE_TEST_MEDIA;
  if (root === undefined) throw new Error('TRICKLE_TEST_MEDIA is not set: run the tests with "npm test", which generates the media fixture');
  return root;
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
