#!/usr/bin/env node
// The project's test command.
//
//   npm test                     everything (what .ci/run runs): build, the media fixtures, then the
//                                test files, each in its own node:test process, in three phases
//   npm run test:quick           unit tests and tests over loopback sockets only: no lab, no
//                                browser, no Docker, no guest kernel (the edit-test loop)
//   npm test -- <part of a path> only the matching test files (either tier)
//
// Phases (scripts/test-tiers.js says which file runs where, by what it contends for on this
// machine kind's two cores): concurrent (unit and loopback tests two at a time, the Docker stack in
// a lane of its own), paired (a lane of tests that time flows through emulated paths, one at a
// time, beside a lane of real players), solo (the netem checks in a guest kernel). At the end: the
// time of every phase, the 10 slowest files, every skip with its reason and every failure (its
// message, and its file's last '#' lines: a CI that keeps the run's tail keeps them). The exit
// code is 1 when any test failed.
//
// The contract with test files: TRICKLE_TEST_MEDIA and TRICKLE_TEST_CORPUS name the media fixtures
// this script makes (a 24 s demo clip made with the real ffmpeg, in .cache/test-media; the packaging
// corpus, in .cache/test-corpus); a test file run on its own finds them there, and fails with a
// clear message naming this command when they were never made.
import { phases, poolOrder } from './test-tiers.js';
import { build, lint, listTestFiles, makeFixtures, runTestFile } from './test-files.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const filters = args.filter((arg) => arg !== '--quick');
const startedMs = Date.now();
const timings = [];

function seconds(ms) {
  return `${(ms / 1000).toFixed(1)} s`;
}

async function phase(name, body) {
  const fromMs = Date.now();
  await body();
  timings.push({ name, ms: Date.now() - fromMs });
}

await phase('build (tsc -b)', build);
// The formatter and linter (npm run lint) over the whole tree: a few seconds; judged at the end.
let lintPassed = true;
if (filters.length === 0)
  await phase('lint (biome, clang-format)', () => {
    lintPassed = lint();
  });
const files = listTestFiles(filters).filter((file) => !quick || file.tier === 'quick');
const results = [];
/** How much of a failure the summary repeats: its error's lines after the first, and the file's last '#' lines. */
const failureLines = 12;
const storyLines = 8;
const storyLineChars = 600;

async function run(file) {
  const { ms, tests, code, output } = await runTestFile(file);
  const leaves = tests.filter((t) => !t.suite);
  const count = (status) => leaves.filter((t) => t.status === status).length;
  // A file that exits non-zero with no failed test (a crash at import, a suite hook) failed all the same.
  const failed = count('fail') > 0 || code !== 0;
  // Only a failed file's story is repeated in the summary.
  const story = failed
    ? output
        .toString()
        .split('\n')
        .filter((line) => line.startsWith('# '))
        .slice(-storyLines)
    : [];
  const result = {
    ...file,
    ms,
    pass: count('pass'),
    fail: count('fail'),
    skip: count('skip'),
    failed,
    code,
    tests,
    story,
  };
  results.push(result);
  process.stdout.write(`\n=== [${results.length}/${files.length}] ${file.name} (${file.tier}) ===\n`);
  process.stdout.write(output);
  process.stdout.write(
    `=== ${failed ? 'FAILED' : 'ok'}: ${file.name}: ${result.pass} pass, ${result.fail} ` +
      `fail, ${result.skip} skipped ` +
      `in ${seconds(ms)}${code !== 0 && count('fail') === 0 ? ` (exit ${code})` : ''} ` +
      `===\n`,
  );
}

/** A pool's files, taken from the front by its own workers and, by a pool that helps it, from the back. */
function queueOf(list) {
  return { list, front: 0, back: list.length };
}

/**
 * Runs a queue's files `width` at a time; then, given `help` ({ queue, tier, ready }), once `ready` has resolved, that
 * other queue's files of `tier` from its back (its own workers keep taking from the front) until none is left there.
 */
async function pool(queue, width, help) {
  // A pool with no files of its own runs no worker, so helps no one: its lane (the Docker stack's, in a quick or
  // filtered run) never existed, and a helper would add a third process beside the two.
  const workers = Array.from({ length: Math.min(width, queue.back - queue.front) }, async () => {
    while (queue.front < queue.back) await run(queue.list[queue.front++]);
    if (help === undefined) return;
    await help.ready;
    const other = help.queue;
    while (other.front < other.back && other.list[other.back - 1].tier === help.tier)
      await run(other.list[--other.back]);
  });
  await Promise.all(workers);
}

console.log(`tests: ${files.length} files${quick ? ' (quick tier)' : ''}`);
// Every pool's queue, made up front: a pool that finishes early (`helps`) takes the tail of another in its phase.
const queues = new Map(phases.flatMap((phase) => phase.pools).map((p) => [p, queueOf(poolOrder(p, files))]));
let fixturesMade;
const fixturesReady = new Promise((resolve) => {
  fixturesMade = resolve;
});
const runPool = (phasePools, p) => {
  const helped = p.helps && phasePools.find((other) => other !== p && other.tiers.includes(p.helps.tier));
  const help = helped && { queue: queues.get(helped), tier: p.helps.tier, ready: fixturesReady };
  return pool(queues.get(p), p.width, help);
};
const started = new Map();
for (const { pools } of phases) for (const p of pools.filter((p) => p.early)) started.set(p, runPool(pools, p));
await phase('media fixtures', makeFixtures);
fixturesMade();
for (const { name, pools } of phases) {
  const lists = pools.filter((p) => queues.get(p).list.length > 0);
  if (lists.length === 0) continue;
  const label = lists
    .map(
      (p) =>
        `${queues.get(p).list.length} ${p.tiers.join('+')}` +
        `${p.width > 1 ? `, ${p.width} at a time` : ''}` +
        `${p.early ? ', from before the fixtures' : ''}` +
        `${p.helps ? `, then ${p.helps.tier} files` : ''}`,
    )
    .join(' | ');
  await phase(`${name} phase (${label})`, () => Promise.all(lists.map((p) => started.get(p) ?? runPool(pools, p))));
}

const total = (key) => results.reduce((sum, r) => sum + r[key], 0);
console.log('\n=== Summary ===');
console.log(`${total('pass')} pass, ${total('fail')} fail, ${total('skip')} skipped, in ${results.length} files`);
console.log('\nPhases:');
for (const { name, ms } of timings) console.log(`  ${seconds(ms).padStart(9)}  ${name}`);
console.log(`  ${seconds(Date.now() - startedMs).padStart(9)}  in all`);
console.log('\nThe 10 slowest files:');
for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 10))
  console.log(`  ${seconds(r.ms).padStart(9)}  ${r.name} (${r.tier})`);
const skips = results.flatMap((r) =>
  r.tests
    .filter((t) => t.status === 'skip' && !t.suite)
    .map((t) => `${r.name}: ${t.name}${t.reason ? `: ${t.reason}` : ''}`),
);
if (skips.length > 0) {
  console.log('\nSkipped:');
  for (const line of skips) console.log(`  ${line}`);
}
const failures = results.filter((r) => r.failed);
if (!lintPassed)
  console.log('\nLint failed: see its output at the start (npm run lint; npm run format fixes formatting).');
if (failures.length > 0 || !lintPassed) {
  console.log('\nFailed:');
  for (const r of failures) {
    const failedTests = r.tests.filter((t) => t.status === 'fail' && !t.suite);
    if (failedTests.length === 0)
      console.log(`  ${r.name}: exited ${r.code} with no failed test (see its output above)`);
    for (const t of failedTests) {
      const [first, ...rest] = String(t.error ?? '').split('\n');
      console.log(`  ${r.name}: ${t.name}: ${first}`);
      for (const line of rest.slice(0, failureLines)) console.log(`      ${line}`);
    }
    // The file's own story (its '# ' lines: what it measured, a session's page events) is repeated here, where a CI
    // that keeps the run's tail keeps it too.
    if (r.story.length > 0) console.log(`    its last ${r.story.length} '#' lines:`);
    for (const line of r.story)
      console.log(`      ${line.length > storyLineChars ? `${line.slice(0, storyLineChars)} ...` : line}`);
  }
  process.exit(1);
}
