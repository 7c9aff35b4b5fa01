/**
 * @trickle/cli's public entry, for the checkout's benchmarks: the help text and progress helpers
 * every command shares. The command itself is bin/trickle.js (src/cli.ts).
 */
export { examples } from './help.js';
export { stageProgress } from './progress.js';
