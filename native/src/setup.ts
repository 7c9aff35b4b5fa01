/**
 * The privileged half of the privilege split: as root, mount bpffs and cgroup2 where needed,
 * create the cgroup, load and attach the program, pin the maps and link, and open the maps (and
 * the cgroup) to the serving user. An unprivileged origin then opens the pinned maps.
 */
import { spawnSync } from 'node:child_process';
import { chmod, chown, readdir, rmdir } from 'node:fs/promises';
import { join } from 'node:path';
import { binding, bindingUnavailableReason } from './binding.js';
import { createCgroup, defaultPinDir, ensureBpffs, resolveCgroupPath } from './cgroup.js';
import { NativeError } from './errors.js';
import { podsGone } from './pod-cgroup.js';

export interface SetupOptions {
  readonly cgroup?: string;
  readonly pinDir?: string;
  /** The user the origin runs as: gets read/write on the pinned maps (and the cgroup, see shareCgroup). */
  readonly user?: string;
  /**
   * Give `user` the cgroup too, so an origin started outside it can move itself in (default). Off
   * where the origin is started inside it (systemd, a container) or the cgroup is not ours to give
   * (a Kubernetes pod's).
   */
  readonly shareCgroup?: boolean;
}

export interface SetupResult {
  readonly cgroupPath: string;
  readonly pinDir: string;
  /** False when a pinned link showed the program attached already (setup is idempotent). */
  readonly attachedNow: boolean;
  readonly owner: { uid: number; gid: number } | undefined;
}

function requireBpf() {
  if (binding === undefined)
    throw new NativeError('NATIVE_ERR_UNSUPPORTED', `native addon unavailable: ${bindingUnavailableReason}`);
  const compiled = binding.bpfCompiled();
  if (!compiled.compiled)
    throw new NativeError('NATIVE_ERR_BPF_UNAVAILABLE', compiled.reason ?? 'BPF support not compiled');
  return binding;
}

function lookupUser(user: string): { uid: number; gid: number } {
  const uid = spawnSync('id', ['-u', user], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', user], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) throw new NativeError('NATIVE_ERR_ARGUMENT', `no such user "${user}"`);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export async function setupClamp(options: SetupOptions = {}): Promise<SetupResult> {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw new NativeError(
      'NATIVE_ERR_PRIVILEGE',
      'trickle native setup must run as root (it mounts bpffs, creates a cgroup and loads a BPF program)',
    );
  }
  const native = requireBpf();
  const owner = options.user === undefined ? undefined : lookupUser(options.user);
  const pinDir = options.pinDir ?? defaultPinDir;
  const cgroupPath = await resolveCgroupPath(options.cgroup);
  await ensureBpffs(pinDir);
  await createCgroup(cgroupPath);
  let attachedNow: boolean;
  try {
    attachedNow = native.bpfLoadAndAttach(cgroupPath, pinDir);
  } finally {
    // The link is pinned: the program stays attached after this process closes its handles.
    native.bpfClose();
  }
  const mapMode = owner === undefined ? 0o600 : 0o660;
  for (const name of ['trickle_targets', 'trickle_stats', 'trickle_closed']) {
    const path = join(pinDir, name);
    if (owner !== undefined) await chown(path, owner.uid, owner.gid);
    await chmod(path, mapMode);
  }
  if (owner !== undefined) {
    await chown(pinDir, owner.uid, owner.gid);
    if (options.shareCgroup !== false)
      for (const name of ['', 'cgroup.procs']) await chown(join(cgroupPath, name), owner.uid, owner.gid);
  }
  return { cgroupPath, pinDir, attachedNow, owner };
}

/** Detaches the program and removes the pinned maps and link (and the cgroup when empty). */
export async function teardownClamp(options: { cgroup?: string; pinDir?: string } = {}): Promise<void> {
  const native = requireBpf();
  native.bpfUnpin(options.pinDir ?? defaultPinDir);
  if (options.cgroup !== undefined) await rmdir(await resolveCgroupPath(options.cgroup)).catch(() => undefined);
}

/**
 * Removes the pins of pods that are gone from this node: each `<pinsRoot>/<pod uid>` whose pod has
 * no cgroup below `hierarchyRoot` (a pod's init container runs this before its own setup, so a
 * node keeps the pins of its live pods only). Returns the pod UIDs reaped.
 */
export async function reapPodPins(pinsRoot: string, hierarchyRoot: string): Promise<string[]> {
  const gone = podsGone(await readdir(pinsRoot), hierarchyRoot);
  for (const podUid of gone) {
    await teardownClamp({ pinDir: join(pinsRoot, podUid) });
    await rmdir(join(pinsRoot, podUid));
  }
  return gone;
}
