/**
 * Attaching the clamp: the BPF backend when this host and process can use it, else an honest
 * fallback whose `fallbackReason` says why. The serving process must be in the clamp's cgroup
 * before it listens; `join: true` moves it there.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { binding, bindingUnavailableReason } from '../binding.js';
import { createCgroup, defaultPinDir, ensureBpffs, isInCgroup, joinCgroup, resolveCgroupPath } from '../cgroup.js';
import type { ClampBackend, ClampBackendName } from './clamp-backend.js';
import { clampBackends } from './registry.js';

export interface AttachOptions {
  /** cgroup v2 directory, or a name below the cgroup2 mount. Default "trickle". */
  readonly cgroupPath?: string;
  /** bpffs directory holding the pinned maps and link. Default /run/trickle/bpf. */
  readonly pinDir?: string;
  /** The backend wanted; weaker ones are used only when it cannot be. Default "bpf". */
  readonly prefer?: ClampBackendName;
  /** Move this process into the cgroup (do it before listen()). Default false. */
  readonly join?: boolean;
}

export interface AttachedClamp extends ClampBackend {
  readonly cgroupPath: string | undefined;
  readonly pinDir: string | undefined;
}

function isRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

function withPlace(backend: ClampBackend, cgroupPath: string | undefined, pinDir: string | undefined): AttachedClamp {
  return Object.assign(backend, { cgroupPath, pinDir });
}

export async function attachClamp(options: AttachOptions = {}): Promise<AttachedClamp> {
  const prefer = options.prefer ?? 'bpf';
  if (binding === undefined)
    return withPlace(
      clampBackends.none({ native: undefined, fallbackReason: bindingUnavailableReason }),
      undefined,
      undefined,
    );
  if (prefer !== 'bpf')
    return withPlace(clampBackends[prefer]({ native: binding, fallbackReason: undefined }), undefined, undefined);
  const fallback = (reason: string) =>
    withPlace(
      clampBackends['pacing-rate']({ native: binding, fallbackReason: `BPF clamp unavailable: ${reason}` }),
      undefined,
      undefined,
    );

  const compiled = binding.bpfCompiled();
  if (!compiled.compiled) return fallback(compiled.reason ?? 'not compiled');
  const pinDir = options.pinDir ?? defaultPinDir;
  let cgroupPath: string;
  try {
    cgroupPath = await resolveCgroupPath(options.cgroupPath);
    // Root loads this build's program every time: pins of another map layout are replaced, and a
    // pinned link running another program (an upgrade that changed only its logic) gets this one.
    // Anyone else opens the pins, and is told why when they are another build's.
    if (!isRoot() && existsSync(join(pinDir, 'trickle_targets'))) {
      binding.bpfOpenPinned(pinDir);
    } else if (isRoot()) {
      await ensureBpffs(pinDir);
      await createCgroup(cgroupPath);
      binding.bpfLoadAndAttach(cgroupPath, pinDir);
    } else {
      return fallback(
        `no pinned clamp maps in ${pinDir} and this process is not root: run "npx trickle ` +
          `native setup --cgroup ${cgroupPath} --pin ${pinDir}" as root first`,
      );
    }
    // Already there (started in it, as a systemd unit's processes are): no write, which a read-only cgroupfs would
    // refuse.
    if (options.join === true && !isInCgroup(cgroupPath)) await joinCgroup(cgroupPath);
  } catch (error) {
    binding.bpfClose();
    return fallback((error as Error).message);
  }
  if (!isInCgroup(cgroupPath)) {
    binding.bpfClose();
    return fallback(
      `this process is not in cgroup ${cgroupPath}, so its sockets never reach the ` +
        `program: attach with join: true before listen()`,
    );
  }
  return withPlace(clampBackends.bpf({ native: binding, fallbackReason: undefined }), cgroupPath, pinDir);
}
