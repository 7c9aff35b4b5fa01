// Which test files run where (scripts/test.js, scripts/flake-hunt), by what they contend for on
// this machine kind's two cores. Paths are of compiled tests, relative to the repository root.
//
// Phase 1, concurrent:
//   quick    unit tests and tests over loopback sockets: also `npm run test:quick`; two at a time
//   full     the same phase, but not quick: a browser, root's cgroups and BPF, a compiler
//   docker   the demo stack under a real Docker engine: image builds and containers that judge no
//            timing, in a lane of its own beside the two above (its build is mostly downloads); when it
//            is done, the lane takes quick files from the back of the other pool (a machine whose
//            two lanes of tests outlast the stack ends the phase sooner; the load stays three)
// Phase 2, paired: two lanes side by side, one file at a time in each
//   lab      what times flows or RTTs through emulated paths (the lab's delay line, namespace
//            paths with TBF, the BPF clamp) or judges timers: never beside another such test
//   browser  real players in Chromium through a lab: judged by what they play, not by the
//            millisecond, beside one lab test at a time (browser-after-lab: the lab lane's last,
//            when only browser tests are left beside them)
// Phase 3, solo:
//   solo     the netem checks in a guest kernel under TCG: its emulated clock needs both cores

export const testFileRoots = [
  'dist/test',
  'origin/dist/test',
  'native/dist/test',
  'player-sim/dist/test',
  'e2e/dist/test',
  'cli/dist/test',
];

const byTier = {
  docker: ['dist/test/docker/stack.test.js'],
  solo: ['e2e/dist/test/lab/netem.test.js'],
  lab: [
    'e2e/dist/test/lab/lab.test.js',
    'e2e/dist/test/lab/measure.test.js',
    'e2e/dist/test/lab/population-lab.test.js',
    'e2e/dist/test/lab/sim-live.test.js',
    'e2e/dist/test/policies/paced-delivery.test.js',
    'native/dist/test/clamp/bpf-path.test.js',
    'native/dist/test/clamp/bpf-schedule.test.js',
    'native/dist/test/clamp/bpf-lifecycle.test.js',
    'native/dist/test/socket.test.js',
    'origin/dist/test/delivery/churn.test.js',
    'origin/dist/test/delivery/delivery-engine.test.js',
    'origin/dist/test/delivery/kernel-drain.test.js',
    'origin/dist/test/delivery/enforcers/kernel-phase.test.js',
  ],
  browser: [
    'e2e/dist/test/examples/',
    'e2e/dist/test/experiment/smoke.test.js',
    'e2e/dist/test/experiment/population-smoke.test.js',
    'e2e/dist/test/policies/players-every-policy.test.js',
    'e2e/dist/test/qoe-matrix/cell.test.js',
    'e2e/dist/test/qoe/run.test.js',
  ],
  // Browser tests that follow the lab tests in their lane (balancing the two lanes): beside another browser test only.
  'browser-after-lab': [
    'e2e/dist/test/policies/https.test.js',
    'e2e/dist/test/policies/packagers.test.js',
    'e2e/dist/test/qoe/shaka.test.js',
  ],
  full: [
    // Chromium
    'e2e/dist/test/player-page.test.js',
    'e2e/dist/test/player-charts.test.js',
    'e2e/dist/test/aspect-ratios.test.js',
    'e2e/dist/test/qoe/codecs.test.js',
    'e2e/dist/test/fixture-package.test.js',
    // root: users, cgroups, a compiler; the setup script; the BPF program on loopback, judging no timing
    'native/dist/test/clamp/bpf-target.test.js',
    'dist/test/deploy/',
    'dist/test/setup.test.js',
  ],
};

/**
 * Each phase's pools: files of the listed tiers, `width` at a time; the pools of a phase run side by side (an `early`
 * one from before the media fixtures are made; one that `helps` then takes files of that tier from the back of the
 * phase's pool that holds them, once the fixtures are made).
 */
export const phases = [
  // The Docker stack needs neither the media fixtures nor another test: it starts while they are made.
  {
    name: 'concurrent',
    pools: [
      { tiers: ['full', 'quick'], width: 2 },
      { tiers: ['docker'], width: 1, early: true, helps: { tier: 'quick' } },
    ],
  },
  {
    name: 'paired',
    pools: [
      { tiers: ['lab', 'browser-after-lab'], width: 1 },
      { tiers: ['browser'], width: 1 },
    ],
  },
  { name: 'solo', pools: [{ tiers: ['solo'], width: 1 }] },
];

export function classify(name) {
  for (const [tier, parts] of Object.entries(byTier)) if (parts.some((part) => name.includes(part))) return tier;
  return 'quick';
}

/** A pool's files in the order CI runs them: by its tiers' order, then by name (the same every run). */
export function poolOrder(pool, files) {
  return files
    .filter((file) => pool.tiers.includes(file.tier))
    .sort((a, b) => pool.tiers.indexOf(a.tier) - pool.tiers.indexOf(b.tier) || a.name.localeCompare(b.name));
}
