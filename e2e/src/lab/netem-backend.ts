/**
 * The `netem` backend, for kernels that have it (Docker hosts, most distributions): the router
 * bridges its two interfaces (the lab) or forwards IP between them (a compose stack), and each
 * egress gets netem (delay, loss) as root qdisc with a TBF child as the bottleneck. netem's random
 * loss is the kernel's own, not seeded by the lab.
 */
import { spawnSync } from 'node:child_process';
import { inNs } from './shell.js';
import { tbfArgs, type LinkBackend, type RouterPorts } from './link-backend.js';
import type { DirectionSpec, LinkSpec } from './link-spec.js';

function netemArgs(direction: DirectionSpec, delayMs: number): string[] {
  const args = ['netem', 'delay', `${delayMs}ms`, 'limit', '100000'];
  if (direction.lossRate > 0) args.push('loss', `${direction.lossRate * 100}%`);
  return args;
}

/**
 * Whether this kernel has netem, tried in this process's own namespace on its loopback (for a
 * router container, which may not create namespaces), never assumed.
 */
export function netemAvailableHere(): { available: boolean; reason?: string } {
  const result = spawnSync('tc', ['qdisc', 'add', 'dev', 'lo', 'root', 'handle', '7357:', 'netem', 'delay', '1ms'], {
    encoding: 'utf8',
  });
  if (result.status !== 0)
    return { available: false, reason: `tc says: ${(result.stderr || result.error?.message || '').trim()}` };
  spawnSync('tc', ['qdisc', 'del', 'dev', 'lo', 'root', 'handle', '7357:']);
  return { available: true };
}

/** Whether this kernel has netem: tried in a throwaway namespace, never assumed. */
export function netemAvailable(): { available: boolean; reason?: string } {
  const ns = `trickle-netem-probe-${process.pid}`;
  const added = spawnSync('ip', ['netns', 'add', ns], { encoding: 'utf8' });
  if (added.status !== 0)
    return { available: false, reason: `cannot create a network namespace: ${added.stderr.trim()}` };
  try {
    const result = spawnSync(
      'ip',
      ['netns', 'exec', ns, 'tc', 'qdisc', 'add', 'dev', 'lo', 'root', 'netem', 'delay', '1ms'],
      { encoding: 'utf8' },
    );
    return result.status === 0 ? { available: true } : { available: false, reason: `tc says: ${result.stderr.trim()}` };
  } finally {
    spawnSync('ip', ['netns', 'del', ns]);
  }
}

export class NetemBackend implements LinkBackend {
  readonly name = 'netem';

  async apply(ports: RouterPorts, spec: LinkSpec): Promise<number[]> {
    if (ports.forwarding === 'routed') {
      // A container's /proc/sys is read-only: compose sets it (sysctls); set it only where it is off.
      if (inNs(ports.routerNs, ['sysctl', '-n', 'net.ipv4.ip_forward']).stdout.trim() !== '1')
        inNs(ports.routerNs, ['sysctl', '-qw', 'net.ipv4.ip_forward=1']);
    } else {
      inNs(ports.routerNs, ['ip', 'link', 'add', 'br0', 'type', 'bridge']);
      inNs(ports.routerNs, ['ip', 'link', 'set', ports.originSide, 'master', 'br0']);
      inNs(ports.routerNs, ['ip', 'link', 'set', ports.accessSide, 'master', 'br0']);
      inNs(ports.routerNs, ['ip', 'link', 'set', 'br0', 'up']);
    }
    for (const [dev, direction] of [
      [ports.accessSide, spec.down],
      [ports.originSide, spec.up],
    ] as const) {
      inNs(ports.routerNs, [
        'tc',
        'qdisc',
        'replace',
        'dev',
        dev,
        'root',
        'handle',
        '1:',
        ...netemArgs(direction, direction.delayMs),
      ]);
      inNs(ports.routerNs, [
        'tc',
        'qdisc',
        'replace',
        'dev',
        dev,
        'parent',
        '1:1',
        'handle',
        '10:',
        ...tbfArgs(direction),
      ]);
    }
    return [];
  }

  setRate(ports: RouterPorts, direction: 'down' | 'up', spec: DirectionSpec): void {
    inNs(ports.routerNs, [
      'tc',
      'qdisc',
      'change',
      'dev',
      direction === 'down' ? ports.accessSide : ports.originSide,
      'parent',
      '1:1',
      'handle',
      '10:',
      ...tbfArgs(spec),
    ]);
  }

  async setDelay(ports: RouterPorts, downMs: number, upMs: number, spec: LinkSpec): Promise<void> {
    inNs(ports.routerNs, [
      'tc',
      'qdisc',
      'change',
      'dev',
      ports.accessSide,
      'root',
      'handle',
      '1:',
      ...netemArgs(spec.down, downMs),
    ]);
    inNs(ports.routerNs, [
      'tc',
      'qdisc',
      'change',
      'dev',
      ports.originSide,
      'root',
      'handle',
      '1:',
      ...netemArgs(spec.up, upMs),
    ]);
  }

  async forwardingStats(): Promise<undefined> {
    return undefined;
  }

  /**
   * netem's own counters: the packets it passed on to the bottleneck and the ones it dropped (its random loss; its
   * limit is never reached).
   */
  async randomLossCounters(
    ports: RouterPorts,
    direction: 'down' | 'up',
  ): Promise<{ offered: number; dropped: number }> {
    const dev = direction === 'down' ? ports.accessSide : ports.originSide;
    const entries = JSON.parse(inNs(ports.routerNs, ['tc', '-s', '-j', 'qdisc', 'show', 'dev', dev]).stdout) as {
      kind: string;
      packets?: number;
      drops?: number;
    }[];
    const netem = entries.find((entry) => entry.kind === 'netem');
    return { offered: (netem?.packets ?? 0) + (netem?.drops ?? 0), dropped: netem?.drops ?? 0 };
  }
}
