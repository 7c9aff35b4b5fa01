/**
 * What a test file needs: root (the lab's namespaces), Debian's Chromium, the media fixture that
 * `npm test` makes. In CI (root, Chromium installed) a missing capability fails loudly; elsewhere
 * the file is skipped with the reason printed. Returns the reason, or false to run.
 */
import { existsSync } from 'node:fs';
import { defaultChromiumPath } from '../../src/index.js';

export interface Needs {
  readonly root?: boolean;
  readonly chromium?: boolean;
  readonly media?: boolean;
}

export function skipUnless(what: string, needs: Needs): string | false {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const chromium = existsSync(defaultChromiumPath);
  const missing = needs.root === true && !root ? 'the lab needs root (network namespaces)' : needs.chromium === true && !chromium ? `Chromium not installed at ${defaultChromiumPath} (apt-get install chromium)` : false;
  if (missing !== false && process.env.CI === 'true') throw new Error(`CI must run ${what}, but ${missing}`);
  const reason = missing !== false ? missing : needs.media === true && process.env.TRICKLE_TEST_MEDIA === undefined ? 'TRICKLE_TEST_MEDIA not set: run via npm test' : false;
  if (reason !== false) console.log(`# skipping ${what}: ${reason}`);
  return reason;
}
