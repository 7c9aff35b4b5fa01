#!/usr/bin/env node
// The `trickle` command: the compiled CLI is dist/src/cli.js (built by `npm run build`, or packed).
import('../dist/src/cli.js').catch((error) => {
  if (error && error.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/src/cli.js')) {
    console.error('trickle: the CLI is not built yet; run "npm ci" (or "npm run build") in the repository first');
    process.exit(1);
  }
  throw error;
});
