#!/usr/bin/env node
// Builds the native parts at install time: the sock_ops program (clang -target bpf, vmlinux.h from
// the running kernel's BTF, a libbpf skeleton from bpftool), the N-API addon (node-gyp, with or
// without libbpf), and the lab's delay line (gcc). Missing optional toolchains degrade gracefully
// and are recorded in build/native-status.json with the reason; a broken build fails loudly in CI.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const root = join(import.meta.dirname, '..');
const build = join(root, 'out');
const bpfOut = join(build, 'bpf');
// node-gyp owns build/ (rebuild wipes it); our generated files live in out/.
mkdirSync(bpfOut, { recursive: true });
const ci = process.env.CI === 'true';
const status = { platform: process.platform, addon: false, bpf: false, delayline: false, reasons: {} };

function which(command) {
  return spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).status === 0;
}

function run(command, args, options = {}) {
  const result = spawnSync(command, args, { cwd: root, stdio: ['ignore', options.stdout ?? 'inherit', 'inherit'], encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
  if (result.error) return { ok: false, message: result.error.message };
  return { ok: result.status === 0, message: `${command} exited with ${result.status}`, stdout: result.stdout };
}

function finish(code) {
  writeFileSync(join(build, 'native-status.json'), JSON.stringify(status, null, 2) + '\n');
  console.log(`native: addon ${status.addon ? 'built' : 'NOT built'}, bpf clamp ${status.bpf ? 'built' : 'NOT built'}, delayline ${status.delayline ? 'built' : 'NOT built'}`);
  for (const [part, reason] of Object.entries(status.reasons)) console.log(`native: ${part}: ${reason}`);
  process.exit(code);
}

if (process.platform !== 'linux') {
  status.reasons.addon = `${process.platform} is not Linux: the JS fallback reports supported: false`;
  finish(0);
}

// 1. The BPF object and its skeleton.
const bpfMissing = [
  ['clang', which('clang')],
  ['bpftool', which('bpftool')],
  ['libbpf headers (libbpf-dev)', existsSync('/usr/include/bpf/libbpf.h')],
  ['kernel BTF (/sys/kernel/btf/vmlinux)', existsSync('/sys/kernel/btf/vmlinux')],
].filter(([, present]) => !present).map(([name]) => name);
if (bpfMissing.length > 0) {
  status.reasons.bpf = `missing ${bpfMissing.join(', ')}`;
} else {
  const object = join(bpfOut, 'cwnd_clamp.bpf.o');
  const steps = [
    () => run('bpftool', ['btf', 'dump', 'file', '/sys/kernel/btf/vmlinux', 'format', 'c'], { stdout: 'pipe' }),
    (vmlinux) => (writeFileSync(join(bpfOut, 'vmlinux.h'), vmlinux.stdout), run('clang', ['-O2', '-g', '-Wall', '-target', 'bpf', `-I${bpfOut}`, '-Ibpf', '-c', 'bpf/cwnd_clamp.bpf.c', '-o', object])),
    () => run('bpftool', ['gen', 'skeleton', object, 'name', 'cwnd_clamp_bpf'], { stdout: 'pipe' }),
  ];
  let result = { ok: true };
  for (const step of steps) {
    result = step(result);
    if (!result.ok) break;
  }
  if (result.ok) {
    writeFileSync(join(bpfOut, 'cwnd_clamp.skel.h'), result.stdout);
    status.bpf = true;
  } else {
    status.reasons.bpf = `BPF build failed: ${result.message}`;
    if (ci) finish(1);
  }
}

// 2. The addon.
// npm sets npm_config_node_gyp for install scripts; run directly, use the node-gyp npm bundles.
function findNodeGyp() {
  if (process.env.npm_config_node_gyp) return process.env.npm_config_node_gyp;
  const npm = spawnSync('sh', ['-c', 'readlink -f "$(command -v npm)"'], { encoding: 'utf8' }).stdout.trim();
  const bundled = join(npm, '..', '..', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js');
  return existsSync(bundled) ? bundled : undefined;
}
const nodeGyp = findNodeGyp();
const gyp = nodeGyp ? [process.execPath, [nodeGyp]] : ['node-gyp', []];
// Build offline against the installed Node headers when npm did not say where they are.
const nodedir = process.env.npm_config_nodedir ?? (existsSync('/usr/include/node/node_api.h') ? '/usr' : undefined);
const addon = run(gyp[0], [...gyp[1], 'rebuild', '--silent', `--trickle_bpf=${status.bpf ? 1 : 0}`, ...(nodedir === undefined ? [] : [`--nodedir=${nodedir}`])]);
status.addon = addon.ok;
if (!addon.ok) {
  status.reasons.addon = `node-gyp failed (${addon.message}): the JS fallback reports supported: false`;
  if (ci) finish(1);
}

// 3. The delay line of the lab.
if (existsSync(join(root, 'delayline', 'delayline.c'))) {
  if (!which('gcc')) {
    status.reasons.delayline = 'gcc not found';
  } else {
    const delayline = run('gcc', ['-O2', '-Wall', '-Wextra', '-o', join(build, 'delayline'), 'delayline/delayline.c']);
    status.delayline = delayline.ok;
    if (!delayline.ok) {
      status.reasons.delayline = delayline.message;
      if (ci) finish(1);
    }
  }
}
finish(0);
