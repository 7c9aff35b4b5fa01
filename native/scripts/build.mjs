#!/usr/bin/env node
// The native parts, at install time or for a release:
//   node scripts/build.mjs             (npm's install script) a prebuilt addon for this platform
//                                      that loads is used as it is (no compiler needed); otherwise
//                                      the sources are built: the sock_ops program (clang -target
//                                      bpf against the checked-in bpf/vmlinux.h, CO-RE), its libbpf
//                                      skeleton (bpftool), the N-API addon (node-gyp) with or
//                                      without libbpf; then the lab's delay line (gcc).
//   node scripts/build.mjs --prebuild [--arch x64|arm64]
//                                      builds prebuilds/linux-<arch>/@trickle+native.napi.glibc.node:
//                                      the BPF object embedded, libbpf/libelf/zlib linked statically
//                                      (scripts/static-libs.mjs, cached in out/static or
//                                      $TRICKLE_NATIVE_STATIC_DIR), for `npm pack`.
//   node scripts/build.mjs --static-libs [--arch x64|arm64]
//                                      only the static libraries a prebuild links (into the same
//                                      cache): the repository's setup makes them, so that a prebuild
//                                      (the package-install test's) compiles the addon only.
// A part that cannot be built is recorded in out/native-status.json with the reason and never
// fails the user's install; TRICKLE_NATIVE_STRICT=1 (this repository's CI) makes it an error, and
// TRICKLE_NATIVE_FROM_SOURCE=1 (this repository's setup) builds the sources even where a prebuild loads.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildStaticLibs, parallelMakeEnv } from './static-libs.mjs';

const root = join(import.meta.dirname, '..');
const build = join(root, 'out');
const bpfOut = join(build, 'bpf');
// node-gyp owns build/ (rebuild wipes it); our generated files live in out/.
mkdirSync(bpfOut, { recursive: true });
const strict = process.env.TRICKLE_NATIVE_STRICT === '1';
const status = { platform: process.platform, addon: false, prebuilt: null, bpf: false, delayline: false, reasons: {} };
const prebuildName = '@trickle+native.napi.glibc.node';
const crossTriplets = { x64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

function which(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).status === 0;
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, {
    cwd: root,
    stdio: ['ignore', options.stdout ?? 'inherit', 'inherit'],
    encoding: 'utf8',
    env: { ...process.env, ...parallelMakeEnv, ...options.env },
    maxBuffer: 256 * 1024 * 1024,
  });
  if (result.error) return { ok: false, message: result.error.message };
  return { ok: result.status === 0, message: `${command} exited with ${result.status}`, stdout: result.stdout };
}

function finish(code) {
  writeFileSync(join(build, 'native-status.json'), `${JSON.stringify(status, null, 2)}\n`);
  const addon = status.prebuilt === null ? (status.addon ? 'built' : 'NOT built') : `prebuilt (${status.prebuilt})`;
  console.log(
    `native: addon ${addon}, bpf clamp ${status.bpf ? 'built' : 'NOT built'}, ` +
      `delayline ${status.delayline ? 'built' : 'NOT built'}`,
  );
  for (const [part, reason] of Object.entries(status.reasons)) console.log(`native: ${part}: ${reason}`);
  process.exit(code);
}

function fail(part, reason) {
  status.reasons[part] = reason;
  if (strict) finish(1);
}

/** The BPF object and its skeleton (out/bpf/cwnd_clamp.skel.h, which embeds the object). */
function buildBpf() {
  const missing = [
    ['clang', which('clang')],
    ['bpftool', which('bpftool')],
    ['libbpf headers (libbpf-dev)', existsSync('/usr/include/bpf/libbpf.h')],
  ]
    .filter(([, present]) => !present)
    .map(([name]) => name);
  if (missing.length > 0) return { ok: false, message: `missing ${missing.join(', ')}` };
  const object = join(bpfOut, 'cwnd_clamp.bpf.o');
  const compiled = run('clang', [
    '-O2',
    '-g',
    '-Wall',
    '-target',
    'bpf',
    '-Ibpf',
    '-c',
    'bpf/cwnd_clamp.bpf.c',
    '-o',
    object,
  ]);
  if (!compiled.ok) return { ok: false, message: `BPF build failed: ${compiled.message}` };
  const skeleton = run('bpftool', ['gen', 'skeleton', object, 'name', 'cwnd_clamp_bpf'], { stdout: 'pipe' });
  if (!skeleton.ok) return { ok: false, message: `BPF skeleton failed: ${skeleton.message}` };
  writeFileSync(join(bpfOut, 'cwnd_clamp.skel.h'), skeleton.stdout);
  return { ok: true };
}

// npm sets npm_config_node_gyp for install scripts; run directly, use the node-gyp npm bundles.
function nodeGyp(args, env = {}) {
  let script = process.env.npm_config_node_gyp;
  if (script === undefined) {
    const npm = spawnSync('sh', ['-c', 'readlink -f "$(command -v npm)"'], { encoding: 'utf8' }).stdout.trim();
    const bundled = join(npm, '..', '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
    if (existsSync(bundled)) script = bundled;
  }
  // Build offline against the installed Node headers when npm did not say where they are.
  const nodedir = process.env.npm_config_nodedir ?? (existsSync('/usr/include/node/node_api.h') ? '/usr' : undefined);
  const all = [...args, ...(nodedir === undefined ? [] : [`--nodedir=${nodedir}`])];
  return script === undefined ? run('node-gyp', all, { env }) : run(process.execPath, [script, ...all], { env });
}

/** Loads the prebuild for this platform in a child (a crash there cannot take the install down). */
function loadPrebuild() {
  const probe =
    `const b = require('node-gyp-build')(${JSON.stringify(root)}); ` +
    `console.log(JSON.stringify({ file: ` +
    `require('node-gyp-build').path(${JSON.stringify(root)}), bpf: b.bpfCompiled() }))`;
  const result = spawnSync(process.execPath, ['-e', probe], {
    cwd: root,
    encoding: 'utf8',
    env: { ...process.env, PREBUILDS_ONLY: '1' },
  });
  if (result.status !== 0)
    return {
      ok: false,
      message: (result.stderr.split('\n').find((line) => /Error/.test(line)) ?? `exit ${result.status}`).trim(),
    };
  return { ok: true, ...JSON.parse(result.stdout) };
}

function buildDelayline() {
  if (!existsSync(join(root, 'delayline', 'delayline.c'))) return;
  if (!which('gcc')) {
    status.reasons.delayline = 'gcc not found (only the lab needs it)';
    return;
  }
  const delayline = run('gcc', ['-O2', '-Wall', '-Wextra', '-o', join(build, 'delayline'), 'delayline/delayline.c']);
  status.delayline = delayline.ok;
  if (!delayline.ok) fail('delayline', delayline.message);
}

/** The compilers for `arch` (a cross toolchain when it is not this machine's), checked to be there. */
function toolchain(arch) {
  const triplet = crossTriplets[arch];
  if (triplet === undefined) throw new Error(`--arch ${arch}: one of ${Object.keys(crossTriplets).join(', ')}`);
  const cross = arch !== process.arch;
  const tools = cross
    ? { CC: `${triplet}-gcc`, CXX: `${triplet}-g++`, STRIP: `${triplet}-strip` }
    : { CC: 'gcc', CXX: 'g++', STRIP: 'strip' };
  const missing = [...Object.values(tools), 'make', 'tar'].filter((tool) => !which(tool));
  if (missing.length > 0)
    throw new Error(
      `missing ${missing.join(', ')}${cross ? ` (Debian: apt-get install g++-${triplet.replace(/_/g, '-')})` : ''}`,
    );
  return { tools, host: cross ? triplet : undefined };
}

/** libz.a, libelf.a and libbpf.a for `arch`, built once into the cache and found there after. */
function staticLibs(arch, { tools, host }, label) {
  return buildStaticLibs({
    outDir: join(process.env.TRICKLE_NATIVE_STATIC_DIR ?? join(build, 'static'), arch),
    cc: tools.CC,
    host,
    log: (line) => console.log(`${label}: ${line}`),
  });
}

async function prebuild(arch) {
  const chain = toolchain(arch);
  const { tools } = chain;
  const bpf = buildBpf();
  if (!bpf.ok) throw new Error(bpf.message);
  const libs = await staticLibs(arch, chain, 'prebuild');
  console.log(`prebuild: addon for linux-${arch}`);
  const addon = nodeGyp(
    [
      'rebuild',
      '--silent',
      `--arch=${arch}`,
      '--trickle_bpf=1',
      '--trickle_prebuild=1',
      `--trickle_static_libs=${libs}`,
    ],
    { CC: tools.CC, CXX: tools.CXX },
  );
  if (!addon.ok) throw new Error(`node-gyp failed: ${addon.message}`);
  const dir = join(root, 'prebuilds', `linux-${arch}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const file = join(dir, prebuildName);
  copyFileSync(join(root, 'build', 'Release', 'trickle_native.node'), file);
  const stripped = run(tools.STRIP, ['--strip-unneeded', file]);
  if (!stripped.ok) throw new Error(stripped.message);
  console.log(`prebuild: ${file}`);
}

/** The release modes: each builds one thing for `--arch` (default: this machine's), then exits; a failure is one coded line. */
const releaseModes = {
  '--static-libs': {
    code: 'NATIVE_ERR_STATIC_LIBS',
    run: async (arch) =>
      console.log(`linux-${arch}: static libs in ${await staticLibs(arch, toolchain(arch), `linux-${arch}`)}`),
  },
  '--prebuild': { code: 'NATIVE_ERR_PREBUILD', run: prebuild },
};
const releaseMode = Object.hasOwn(releaseModes, process.argv[2] ?? '') ? releaseModes[process.argv[2]] : undefined;
if (releaseMode !== undefined) {
  const archIndex = process.argv.indexOf('--arch');
  const arch = archIndex === -1 ? process.arch : process.argv[archIndex + 1];
  try {
    await releaseMode.run(arch);
  } catch (error) {
    console.error(`${releaseMode.code}: linux-${arch}: ${error.message}`);
    process.exit(1);
  }
  process.exit(0);
}

if (process.platform !== 'linux') {
  status.reasons.addon = `${process.platform} is not Linux: the JS fallback reports supported: false`;
  finish(0);
}

// 1. A prebuild that loads here is the addon.
if (process.env.TRICKLE_NATIVE_FROM_SOURCE !== '1' && existsSync(join(root, 'prebuilds'))) {
  const loaded = loadPrebuild();
  if (loaded.ok) {
    Object.assign(status, { addon: true, prebuilt: loaded.file.slice(root.length + 1), bpf: loaded.bpf.compiled });
    if (!loaded.bpf.compiled) status.reasons.bpf = loaded.bpf.reason;
    buildDelayline();
    finish(0);
  }
  status.reasons.prebuild = `the prebuild does not load here (${loaded.message}): building from source`;
}

// 2. From source: the BPF object and its skeleton, then the addon.
const bpf = buildBpf();
status.bpf = bpf.ok;
if (!bpf.ok) fail('bpf', bpf.message);
const addon = nodeGyp(['rebuild', '--silent', `--trickle_bpf=${status.bpf ? 1 : 0}`]);
status.addon = addon.ok;
if (!addon.ok) fail('addon', `node-gyp failed (${addon.message}): the JS fallback reports supported: false`);

// 3. The delay line of the lab.
buildDelayline();
finish(0);
