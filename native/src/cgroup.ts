/**
 * cgroup v2 and bpffs plumbing for the clamp. cgroup membership is fixed when a socket is created
 * and accepted sockets inherit the listener's, so the serving process must join the clamp's
 * cgroup before it listens: joinCgroup() is meant to be called before listen().
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { isAbsolute, join, relative } from 'node:path';
import { NativeError } from './errors.js';

export const defaultPinDir = '/run/trickle/bpf';
export const defaultCgroupName = 'trickle';
const fallbackCgroup2Mount = '/run/trickle/cgroup2';

interface Mount {
  readonly mountPoint: string;
  readonly fsType: string;
}

function mounts(): Mount[] {
  const text = readFileSync('/proc/self/mountinfo', 'utf8');
  return text
    .split('\n')
    .filter((line) => line.includes(' - '))
    .map((line) => {
      const [left, right] = line.split(' - ') as [string, string];
      return { mountPoint: left.split(' ')[4]!.replace(/\\040/g, ' '), fsType: right.split(' ')[0]! };
    });
}

export function findCgroup2Mount(): string | undefined {
  return mounts().find((m) => m.fsType === 'cgroup2')?.mountPoint;
}

export function isBpffs(dir: string): boolean {
  return mounts().some((m) => m.fsType === 'bpf' && m.mountPoint === dir);
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

function mount(type: string, dir: string): void {
  const result = spawnSync('mount', ['-t', type, type === 'cgroup2' ? 'none' : type, dir], { encoding: 'utf8' });
  if (result.status !== 0)
    throw new NativeError(
      'NATIVE_ERR_CGROUP',
      `mount -t ${type} ${dir} failed: ${(result.stderr || result.error?.message || '').trim()}`,
    );
}

/** The cgroup2 mount point; mounts one at /run/trickle/cgroup2 when there is none (root only). */
export async function ensureCgroup2Mount(): Promise<string> {
  const existing = findCgroup2Mount();
  if (existing !== undefined) return existing;
  if (!isRoot())
    throw new NativeError('NATIVE_ERR_PRIVILEGE', 'no cgroup2 file system is mounted, and mounting one needs root');
  await mkdir(fallbackCgroup2Mount, { recursive: true });
  mount('cgroup2', fallbackCgroup2Mount);
  return fallbackCgroup2Mount;
}

/** An absolute cgroup directory stays as is; a name is taken below the cgroup2 mount. */
export async function resolveCgroupPath(pathOrName: string = defaultCgroupName): Promise<string> {
  return isAbsolute(pathOrName) ? pathOrName : join(await ensureCgroup2Mount(), pathOrName);
}

export async function createCgroup(path: string): Promise<void> {
  try {
    await mkdir(path, { recursive: true });
  } catch (error) {
    throw new NativeError('NATIVE_ERR_CGROUP', `cannot create cgroup ${path}: ${(error as Error).message}`, {
      cause: error,
    });
  }
  if (!existsSync(join(path, 'cgroup.procs')))
    throw new NativeError('NATIVE_ERR_CGROUP', `${path} is not a cgroup v2 directory (no cgroup.procs)`);
}

/** Moves a process (default: this one) into the cgroup. Call before listen(). */
export async function joinCgroup(path: string, pid: number = process.pid): Promise<void> {
  try {
    await writeFile(join(path, 'cgroup.procs'), `${pid}\n`);
  } catch (error) {
    throw new NativeError(
      'NATIVE_ERR_CGROUP',
      `cannot move process ${pid} into cgroup ${path}: ${(error as Error).message}. The ` +
        `clamp only acts on sockets created inside its cgroup: run "trickle native setup" as ` +
        `root (it can chown the cgroup to the serving user), or start the server inside the ` +
        `cgroup.`,
      { cause: error },
    );
  }
}

/** This process's cgroup v2 path, relative to the hierarchy root ("/trickle"). */
export function currentCgroup(pid: number | 'self' = 'self'): string | undefined {
  const line = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
    .split('\n')
    .find((l) => l.startsWith('0::'));
  return line?.slice(3);
}

/** Whether the process is in `path` (an absolute cgroup directory under a cgroup2 mount). */
export function isInCgroup(path: string, pid: number | 'self' = 'self'): boolean {
  // The cgroup2 mount that holds `path` (a host may have several: /sys/fs/cgroup/unified beside one of our own).
  const mountPoint = mounts()
    .filter(
      (m) =>
        m.fsType === 'cgroup2' && (path === m.mountPoint || path.startsWith(`${m.mountPoint.replace(/\/$/, '')}/`)),
    )
    .sort((a, b) => b.mountPoint.length - a.mountPoint.length)[0]?.mountPoint;
  const current = currentCgroup(pid);
  if (mountPoint === undefined || current === undefined) return false;
  return `/${relative(mountPoint, path)}` === current;
}

/** Mounts bpffs at `dir` unless it is one already (root only). */
export async function ensureBpffs(dir: string): Promise<void> {
  if (isBpffs(dir)) return;
  if (!isRoot())
    throw new NativeError('NATIVE_ERR_PRIVILEGE', `${dir} is not a bpffs mount, and mounting one needs root`);
  await mkdir(dir, { recursive: true });
  mount('bpf', dir);
}
