/**
 * What a test file needs: root (the lab's namespaces), Debian's Chromium. In CI (root, Chromium
 * installed) a missing capability fails loudly; elsewhere the file is skipped with the reason
 * printed. Returns the reason, or false to run. The media fixture is never a reason to skip:
 * `testMediaRoot()` finds the one `npm test` makes, or fails naming the command.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { defaultChromiumPath } from '../../src/chromium.js';

export interface Needs {
  readonly root?: boolean;
  readonly chromium?: boolean;
}

function fixture(variable: string, cached: string, probe: string): string {
  const root = process.env[variable] ?? resolve(import.meta.dirname, '..', '..', '..', '..', '.cache', cached);
  if (!existsSync(join(root, probe)))
    throw new Error(
      `the test fixture ${root} is missing: run "npm test -- <file>" (scripts/test.js makes it) or set ${variable}`,
    );
  return root;
}

/** The demo fixture scripts/test.js makes: TRICKLE_TEST_MEDIA, else where it caches it. */
export function testMediaRoot(): string {
  return fixture('TRICKLE_TEST_MEDIA', 'test-media', join('demo', 'manifest.mpd'));
}

/**
 * The packaging corpus scripts/test.js makes (ffmpeg's and Shaka Packager's shapes): TRICKLE_TEST_CORPUS, else where it
 * caches it.
 */
export function testCorpusRoot(): string {
  return fixture('TRICKLE_TEST_CORPUS', 'test-corpus', 'README.md');
}

export function skipUnless(what: string, needs: Needs): string | false {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const chromium = existsSync(defaultChromiumPath);
  const missing =
    needs.root === true && !root
      ? 'the lab needs root (network namespaces)'
      : needs.chromium === true && !chromium
        ? `Chromium not installed at ${defaultChromiumPath} (apt-get install chromium)`
        : false;
  if (missing !== false && process.env.CI === 'true') throw new Error(`CI must run ${what}, but ${missing}`);
  if (missing !== false) console.log(`# skipping ${what}: ${missing}`);
  return missing;
}
