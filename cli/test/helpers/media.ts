/**
 * The demo fixture scripts/test.js makes: TRICKLE_TEST_MEDIA, else where it caches it; missing, a failure naming the
 * command.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

export function testMediaRoot(): string {
  const root =
    process.env.TRICKLE_TEST_MEDIA ?? resolve(import.meta.dirname, '..', '..', '..', '..', '.cache', 'test-media');
  if (!existsSync(join(root, 'demo', 'manifest.mpd')))
    throw new Error(
      `the test fixture ${root} is missing: run "npm test -- <file>" (scripts/test.js ` +
        `makes it) or set TRICKLE_TEST_MEDIA`,
    );
  return root;
}
