// libbpf, libelf and zlib as position-independent static archives, for the prebuilt addon: Debian
// ships them only as non-PIC archives (they cannot go into a shared object) and as shared
// libraries a user's host may lack (libelf1 is not in slim images), or not for a cross target.
// Built from Debian's pinned source tarballs (the versions bookworm's headers describe), checked
// by SHA-256, cached per arch.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';

const mirror = 'http://deb.debian.org/debian/pool/main';
export const staticSources = {
  zlib: {
    url: `${mirror}/z/zlib/zlib_1.2.13.dfsg.orig.tar.bz2`,
    sha256: '71feb7947e3c00ef125f83b79a4e529bde31171e5babe48b391f06758d1ab0a1',
    dir: 'zlib-1.2.13.dfsg',
  },
  elfutils: {
    url: `${mirror}/e/elfutils/elfutils_0.188.orig.tar.bz2`,
    sha256: 'fb8b0e8d0802005b9a309c60c1d8de32dd2951b56f0c3a3cb56d21ce01595dff',
    dir: 'elfutils-0.188',
  },
  libbpf: {
    url: `${mirror}/libb/libbpf/libbpf_1.1.2.orig.tar.gz`,
    sha256: 'b50ab60637fb713db78aa98e6ca911ddf13c0799d498a1f6ec03ebffc7dca588',
    dir: 'libbpf-1.1.2',
  },
};

/**
 * make on every core unless the caller chose (the builds here are make-driven: one job per core halves them on 2
 * cores).
 */
export const parallelMakeEnv = { MAKEFLAGS: process.env.MAKEFLAGS ?? `-j${availableParallelism()}` };

function run(command, args, cwd, env = {}) {
  const result = spawnSync(command, args, {
    cwd,
    stdio: ['ignore', 'pipe', 'pipe'],
    encoding: 'utf8',
    env: { ...process.env, ...parallelMakeEnv, ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (result.error) throw new Error(`${command}: ${result.error.message}`);
  if (result.status !== 0)
    throw new Error(
      `${command} ${args.join(' ')} exited ` +
        `with ${result.status}: ${(result.stderr || result.stdout).trim().split('\n').slice(-3).join(' | ')}`,
    );
}

async function download(source, cacheDir) {
  const file = join(cacheDir, source.url.split('/').pop());
  if (!existsSync(file)) {
    const response = await fetch(source.url).catch((error) => {
      throw new Error(`cannot download ${source.url}: ${error.cause?.message ?? error.message}`);
    });
    if (!response.ok) throw new Error(`cannot download ${source.url}: HTTP ${response.status}`);
    writeFileSync(file, Buffer.from(await response.arrayBuffer()));
  }
  const sha256 = createHash('sha256').update(readFileSync(file)).digest('hex');
  if (sha256 !== source.sha256) {
    rmSync(file);
    throw new Error(`${source.url}: SHA-256 ${sha256}, expected ${source.sha256}`);
  }
  return file;
}

/**
 * Builds (or finds cached) libz.a, libelf.a and libbpf.a (and libbpf's headers, in include/)
 * compiled with -fPIC by `cc` (for the autoconf `host` triplet when cross-compiling) into
 * `outDir`; returns outDir. `log` receives one line per step.
 */
export async function buildStaticLibs({ outDir, cc, host, log }) {
  const done = join(outDir, 'done.json');
  const key = JSON.stringify({ sources: staticSources, cc, host });
  if (existsSync(done) && readFileSync(done, 'utf8') === key) return outDir;
  rmSync(outDir, { recursive: true, force: true });
  const work = join(outDir, 'src');
  mkdirSync(work, { recursive: true });
  const cacheDir = join(outDir, '..', 'downloads');
  mkdirSync(cacheDir, { recursive: true });
  const prefix = join(work, 'prefix');
  const flags = {
    CC: cc,
    CFLAGS: '-fPIC -O2',
    CPPFLAGS: `-I${join(prefix, 'include')}`,
    LDFLAGS: `-L${join(prefix, 'lib')}`,
  };

  log(`static libs: ${staticSources.zlib.dir} (-fPIC)`);
  run('tar', ['xjf', await download(staticSources.zlib, cacheDir), '-C', work], outDir);
  const zlib = join(work, staticSources.zlib.dir);
  run('./configure', ['--static', `--prefix=${prefix}`], zlib, {
    CC: cc,
    CFLAGS: '-fPIC -O2',
    ...(host ? { CHOST: host } : {}),
  });
  run('make', ['-s', 'install'], zlib);
  copyFileSync(join(prefix, 'lib', 'libz.a'), join(outDir, 'libz.a'));

  log(`static libs: elfutils ${staticSources.elfutils.dir} (libelf, -fPIC)`);
  run('tar', ['xjf', await download(staticSources.elfutils, cacheDir), '-C', work], outDir);
  const elfutils = join(work, staticSources.elfutils.dir);
  run(
    './configure',
    [
      '-q',
      ...(host ? [`--host=${host}`] : []),
      '--disable-debuginfod',
      '--disable-libdebuginfod',
      '--without-bzlib',
      '--without-lzma',
      '--without-zstd',
    ],
    elfutils,
    flags,
  );
  run('make', ['-s', '-C', 'lib'], elfutils);
  run('make', ['-s', '-C', 'libelf', 'libelf.a'], elfutils);
  copyFileSync(join(elfutils, 'libelf', 'libelf.a'), join(outDir, 'libelf.a'));

  log(`static libs: ${staticSources.libbpf.dir} (-fPIC)`);
  run('tar', ['xzf', await download(staticSources.libbpf, cacheDir), '-C', work], outDir);
  const libbpf = join(work, staticSources.libbpf.dir, 'src');
  // Its OBJDIR made first: libbpf 1.1.2's rule for libbpf.pc writes into it without depending on it (a race under -j).
  mkdirSync(join(work, 'libbpf-obj'));
  run(
    'make',
    [
      '-s',
      'BUILD_STATIC_ONLY=1',
      `OBJDIR=${join(work, 'libbpf-obj')}`,
      `CC=${cc}`,
      `CFLAGS=-fPIC -O2 -I${join(elfutils, 'libelf')} -I${join(prefix, 'include')}`,
    ],
    libbpf,
  );
  copyFileSync(join(work, 'libbpf-obj', 'libbpf.a'), join(outDir, 'libbpf.a'));
  // Its headers beside it: a cross compiler does not search /usr/include.
  run('make', ['-s', 'install_headers', `DESTDIR=${outDir}`, 'PREFIX=', 'INCLUDEDIR=/include'], libbpf);

  rmSync(work, { recursive: true, force: true });
  writeFileSync(done, key);
  return outDir;
}
