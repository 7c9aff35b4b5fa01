/**
 * A minimal emulated path for the native tests: server ns -- router ns -- client ns over veth
 * pairs. In the router, the delay line adds propagation delay at layer 2 and a TBF qdisc on the
 * egress toward the client is the bottleneck (never on the server's own interface: drops there
 * are reported straight back to TCP). The lab (e2e) builds the full version of this.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { delaylinePath } from '../../src/index.js';

export interface NetPathOptions {
  /** Short unique prefix (interface names are limited to 15 characters). */
  readonly name: string;
  readonly subnet: number;
  readonly rateMbit: number;
  readonly oneWayDelayMs: number;
  readonly bufferBytes: number;
}

export interface NetPath {
  readonly serverNs: string;
  readonly clientNs: string;
  readonly routerNs: string;
  readonly serverAddress: string;
  readonly clientAddress: string;
  setOneWayDelayMs(ms: number): Promise<void>;
  setRateMbit(mbit: number): void;
  bottleneckDrops(): number;
  down(): Promise<void>;
}

function sh(args: string[]): string {
  const result = spawnSync(args[0]!, args.slice(1), { encoding: 'utf8' });
  if (result.status !== 0)
    throw new Error(`${args.join(' ')} failed: ${result.stderr.trim() || result.error?.message}`);
  return result.stdout;
}

export async function createNetPath(options: NetPathOptions): Promise<NetPath> {
  const p = options.name;
  const serverNs = `${p}-srv`;
  const routerNs = `${p}-rtr`;
  const clientNs = `${p}-cli`;
  const serverAddress = `10.77.${options.subnet}.1`;
  const clientAddress = `10.77.${options.subnet}.2`;
  const control = `/tmp/${p}-delayline.control`;
  let delayline: ChildProcess | undefined;

  const down = async () => {
    if (delayline !== undefined && delayline.exitCode === null) {
      delayline.kill('SIGTERM');
      await once(delayline, 'exit');
    }
    for (const ns of [serverNs, routerNs, clientNs]) spawnSync('ip', ['netns', 'del', ns]);
  };
  await down();
  try {
    for (const ns of [serverNs, routerNs, clientNs]) sh(['ip', 'netns', 'add', ns]);
    sh(['ip', 'link', 'add', `${p}s0`, 'netns', serverNs, 'type', 'veth', 'peer', 'name', `${p}r0`, 'netns', routerNs]);
    sh(['ip', 'link', 'add', `${p}c0`, 'netns', clientNs, 'type', 'veth', 'peer', 'name', `${p}r1`, 'netns', routerNs]);
    sh(['ip', 'netns', 'exec', routerNs, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1']);
    // Each connection starts from scratch: no ssthresh or RTT cached from the previous one.
    for (const ns of [serverNs, clientNs])
      sh(['ip', 'netns', 'exec', ns, 'sysctl', '-qw', 'net.ipv4.tcp_no_metrics_save=1']);
    for (const [ns, dev, address] of [
      [serverNs, `${p}s0`, serverAddress],
      [clientNs, `${p}c0`, clientAddress],
      [routerNs, `${p}r0`, undefined],
      [routerNs, `${p}r1`, undefined],
    ] as const) {
      // Offloads off: the delay line forwards frames as they are, so they must be MTU-sized with full checksums.
      sh(['ip', 'netns', 'exec', ns, 'ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off']);
      if (address !== undefined) sh(['ip', '-n', ns, 'addr', 'add', `${address}/24`, 'dev', dev]);
      sh(['ip', '-n', ns, 'link', 'set', dev, 'up']);
      sh(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    }
    sh([
      'ip',
      'netns',
      'exec',
      routerNs,
      'tc',
      'qdisc',
      'add',
      'dev',
      `${p}r1`,
      'root',
      'tbf',
      'rate',
      `${options.rateMbit}mbit`,
      'burst',
      '6000',
      'limit',
      String(options.bufferBytes),
    ]);
    const delayUs = String(Math.round(options.oneWayDelayMs * 1000));
    await writeFile(control, `delay-ab-us ${delayUs}\ndelay-ba-us ${delayUs}\n`);
    delayline = spawn(
      'ip',
      [
        'netns',
        'exec',
        routerNs,
        delaylinePath(),
        '--if-a',
        `${p}r0`,
        '--if-b',
        `${p}r1`,
        '--delay-ab-us',
        delayUs,
        '--delay-ba-us',
        delayUs,
        '--control',
        control,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const [first] = (await once(delayline.stdout!, 'data')) as [Buffer];
    if (!first.toString().includes('"ready":true')) throw new Error(`delay line did not start: ${first.toString()}`);
  } catch (error) {
    await down();
    throw error;
  }
  return {
    serverNs,
    clientNs,
    routerNs,
    serverAddress,
    clientAddress,
    async setOneWayDelayMs(ms: number) {
      const us = String(Math.round(ms * 1000));
      await writeFile(control, `delay-ab-us ${us}\ndelay-ba-us ${us}\n`);
      delayline!.kill('SIGHUP');
    },
    setRateMbit(mbit: number) {
      sh([
        'ip',
        'netns',
        'exec',
        routerNs,
        'tc',
        'qdisc',
        'change',
        'dev',
        `${p}r1`,
        'root',
        'tbf',
        'rate',
        `${mbit}mbit`,
        'burst',
        '6000',
        'limit',
        String(options.bufferBytes),
      ]);
    },
    bottleneckDrops() {
      const text = sh(['ip', 'netns', 'exec', routerNs, 'tc', '-s', 'qdisc', 'show', 'dev', `${p}r1`]);
      return Number(/dropped (\d+)/.exec(text)?.[1] ?? 0);
    },
    down,
  };
}
