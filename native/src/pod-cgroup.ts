/**
 * A Kubernetes pod's cgroup in the node's cgroup v2 hierarchy, found from the pod's UID (the
 * downward API's metadata.uid). The clamp is attached there by the pod's init container: BPF
 * programs attached to a cgroup act on every descendant, so the origin container's sockets, in a
 * child cgroup, reach it. The kubelet names the directory by its cgroup driver:
 *   cgroupfs: .../kubepods/<qos>/pod<uid>
 *   systemd:  .../kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid with _ for ->.slice
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { NativeError } from './errors.js';

const podUidPattern = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** kubepods sits at most a few levels below the root (e.g. kubelet.slice/kubepods.slice/...). */
const maxDepth = 6;

/** Whether a cgroup directory name is this pod's, under either cgroup driver. */
export function isPodCgroupName(name: string, podUid: string): boolean {
  return name === `pod${podUid}` || name.endsWith(`-pod${podUid.replaceAll('-', '_')}.slice`);
}

/** The pod's cgroup directory below `hierarchyRoot` (a cgroup v2 mount of the node's hierarchy), if it has one. */
function searchPodCgroup(hierarchyRoot: string, podUid: string): string | undefined {
  const pending: { dir: string; depth: number }[] = [{ dir: hierarchyRoot, depth: 0 }];
  while (pending.length > 0) {
    const { dir, depth } = pending.shift()!;
    let names: string[];
    try {
      names = readdirSync(dir, { withFileTypes: true })
        .filter((entry) => entry.isDirectory())
        .map((entry) => entry.name);
    } catch (error) {
      if (depth === 0)
        throw new NativeError(
          'NATIVE_ERR_CGROUP',
          `cannot read the cgroup hierarchy at ${hierarchyRoot}: ${(error as Error).message}`,
          { cause: error },
        );
      continue;
    }
    for (const name of names) {
      if (isPodCgroupName(name, podUid)) return join(dir, name);
      // Only kubelet's subtree holds pods: no walk through every service's cgroup.
      if (
        depth + 1 < maxDepth &&
        (name.startsWith('kube') || name.endsWith('.slice') || /^(besteffort|burstable|guaranteed)$/.test(name))
      )
        pending.push({ dir: join(dir, name), depth: depth + 1 });
    }
  }
  return undefined;
}

/** The pod's cgroup directory below `hierarchyRoot` (a cgroup v2 mount of the node's hierarchy). */
export function findPodCgroup(hierarchyRoot: string, podUid: string): string {
  if (!podUidPattern.test(podUid))
    throw new NativeError('NATIVE_ERR_ARGUMENT', `"${podUid}" is not a pod UID (metadata.uid)`);
  const found = searchPodCgroup(hierarchyRoot, podUid);
  if (found === undefined)
    throw new NativeError(
      'NATIVE_ERR_CGROUP',
      `no cgroup for pod ${podUid} below ${hierarchyRoot} (is it the node's cgroup v2 ` +
        `hierarchy, mounted from the host?)`,
    );
  return found;
}

/** The pod UIDs among `names` (a per-pod pin directory's entries) whose pods have no cgroup on this node any more. */
export function podsGone(names: readonly string[], hierarchyRoot: string): string[] {
  return names.filter((name) => podUidPattern.test(name) && searchPodCgroup(hierarchyRoot, name) === undefined);
}
