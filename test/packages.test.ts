/**
 * What `npm pack` puts in each workspace package: its built entry points and what they read at run
 * time (the player page, the addon's sources for its fallback build), never tests or TypeScript
 * sources. Reads `npm pack --dry-run --json` of the built tree.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, it } from 'node:test';

const repoRoot = resolve(import.meta.dirname, '..', '..');

function packedFiles(workspace: string): string[] {
  const result = spawnSync('npm', ['pack', '--dry-run', '--json', '--workspace', workspace], {
    cwd: repoRoot,
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.equal(result.status, 0, result.stderr);
  const [report] = JSON.parse(result.stdout) as { files: { path: string }[] }[];
  return report!.files.map((file) => file.path);
}

/** Every file an `exports` / `main` entry of the package names (none for the CLI: a command, not a library). */
function entryFiles(workspace: string): string[] {
  const manifest = JSON.parse(readFileSync(join(repoRoot, workspace, 'package.json'), 'utf8')) as {
    main?: string;
    exports?: Record<string, { types: string; default: string }>;
  };
  const paths = [
    ...(manifest.main === undefined ? [] : [manifest.main]),
    ...Object.values(manifest.exports ?? {}).flatMap((entry) => [entry.types, entry.default]),
  ];
  return [...new Set(paths.map((path) => path.replace(/^\.\//, '')))];
}

describe('npm pack of the workspace packages', () => {
  const runtime: Record<string, readonly string[]> = {
    origin: ['static/player/index.html', 'dist/player/player.js', 'dist/player/charts.js'],
    native: [
      'binding.gyp',
      'scripts/build.mjs',
      'scripts/static-libs.mjs',
      'addon/addon.cc',
      'bpf/cwnd_clamp.bpf.c',
      'bpf/vmlinux.h',
      'delayline/delayline.c',
    ],
    'player-sim': [],
    e2e: ['dist/src/qoe/origin-main.js', 'dist/src/lab/replay-main.js'],
    cli: ['bin/trickle.js', 'dist/src/cli.js'],
  };
  for (const [workspace, needed] of Object.entries(runtime)) {
    it(`${workspace}: built entry points and run-time files, no tests or sources`, () => {
      const files = packedFiles(workspace);
      for (const path of [...entryFiles(workspace), ...needed, 'package.json'])
        assert.ok(files.includes(path), `${workspace} packs ${path}`);
      const stray = files.filter(
        (path) => /(^|\/)test\//.test(path) || /^src\/.*\.ts$/.test(path) || path.endsWith('tsconfig.json'),
      );
      assert.deepEqual(stray, [], `${workspace} packs no tests, TypeScript sources or tsconfig`);
    });
  }
});
