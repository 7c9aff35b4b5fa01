// Which test files run where (scripts/test.js, scripts/flake-hunt). Paths are of compiled tests,
// relative to the repository root.
//
//   quick   unit tests and tests over loopback sockets: `npm run test:quick` and the concurrent phase
//   full    also in the concurrent phase, but not quick: a browser, root's cgroups and BPF, a
//           compiler, Docker's tools (no engine)
//   serial  one at a time after the rest: they time flows through emulated paths (the lab's delay
//           line, namespace paths with TBF), or share the machine's namespaces, cgroups, BPF pins or
//           Docker engine; beside another test their figures pick up its load

export const testFileRoots = ['dist/test', 'origin/dist/test', 'native/dist/test', 'player-sim/dist/test', 'e2e/dist/test'];

const serialParts = [
  'e2e/dist/test/lab/',
  'e2e/dist/test/policies/',
  'e2e/dist/test/qoe/run.test.js',
  'e2e/dist/test/qoe-matrix/cell.test.js',
  'e2e/dist/test/experiment/smoke.test.js',
  'e2e/dist/test/experiment/population-smoke.test.js',
  'e2e/dist/test/examples/',
  'dist/test/docker/stack.test.js',
  'origin/dist/test/delivery/churn.test.js',
  'native/dist/test/clamp/bpf-path.test.js',
  'native/dist/test/clamp/bpf-schedule.test.js',
];

const fullParts = [
  // Chromium
  'e2e/dist/test/player-page.test.js',
  'e2e/dist/test/player-charts.test.js',
  'e2e/dist/test/aspect-ratios.test.js',
  'e2e/dist/test/qoe/codecs.test.js',
  'e2e/dist/test/fixture-package.test.js',
  // root: cgroups, BPF, users, a compiler
  'native/dist/test/clamp/bpf-lifecycle.test.js',
  'origin/dist/test/delivery/kernel-drain.test.js',
  'origin/dist/test/delivery/enforcers/kernel-phase.test.js',
  'dist/test/deploy/',
];

/** Pure unit tests of the lab's parts (no namespaces): quick, though they live beside the lab's path tests. */
const quickInSerialDirs = ['e2e/dist/test/lab/link-spec.test.js', 'e2e/dist/test/lab/trace-replay.test.js', 'e2e/dist/test/lab/analysis/', 'e2e/dist/test/lab/cpu-time.test.js', 'e2e/dist/test/lab/population.test.js', 'e2e/dist/test/lab/population-accuracy.test.js'];

export function classify(name) {
  if (quickInSerialDirs.some((part) => name.includes(part))) return 'quick';
  if (serialParts.some((part) => name.includes(part))) return 'serial';
  if (fullParts.some((part) => name.includes(part))) return 'full';
  return 'quick';
}

/** The serial phase's order: as found (the same every run), so a flake hunt runs them as CI does. */
export function serialOrder(files) {
  return [...files].sort((a, b) => a.name.localeCompare(b.name));
}
