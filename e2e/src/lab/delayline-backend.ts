/**
 * The `delayline` backend, for kernels without netem (like these machines): the delay line (a C
 * program from @trickle/native) forwards frames between the router's two interfaces with a
 * per-direction delay and seeded random loss; a TBF on each egress is the bottleneck.
 */
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { delaylinePath } from '@trickle/native/paths';
import { E2eError } from '../errors.js';
import { inNs } from './shell.js';
import { tbfArgs, type LinkBackend, type RouterPorts } from './link-backend.js';
import type { DirectionSpec, LinkSpec } from './link-spec.js';

/** The delay line runs with --if-a <origin side> --if-b <access side>: "ab" is the downlink. */
function controlText(downMs: number, upMs: number, spec: LinkSpec): string {
  return (
    `delay-ab-us ${Math.round(downMs * 1000)}\ndelay-ba-us ` +
    `${Math.round(upMs * 1000)}\nloss-ab ${spec.down.lossRate}\nloss-ba ` +
    `${spec.up.lossRate}\n`
  );
}

/**
 * Starts the delay line in the router between the two ports and resolves to its pid once it is
 * forwarding. `linksFile`: a population's per-address delays and losses (population-lab.ts).
 */
export async function startDelayline(ports: RouterPorts, spec: LinkSpec, linksFile?: string): Promise<number> {
  const control = join(ports.stateDir, 'delayline.control');
  await writeFile(control, controlText(spec.down.delayMs, spec.up.delayMs, spec));
  const log = openSync(join(ports.stateDir, 'delayline.log'), 'a');
  // a = origin side, b = access side: a->b is the downlink.
  const command = [
    delaylinePath(),
    ...['--if-a', ports.originSide, '--if-b', ports.accessSide],
    ...[
      '--delay-ab-us',
      String(Math.round(spec.down.delayMs * 1000)),
      '--delay-ba-us',
      String(Math.round(spec.up.delayMs * 1000)),
    ],
    ...[
      '--loss-ab',
      String(spec.down.lossRate),
      '--loss-ba',
      String(spec.up.lossRate),
      '--seed',
      String(spec.seed),
      '--control',
      control,
    ],
    ...(linksFile === undefined ? [] : ['--links', linksFile]),
  ];
  const inRouter = ports.routerNs === null ? command : ['ip', 'netns', 'exec', ports.routerNs, ...command];
  const child = spawn(inRouter[0]!, inRouter.slice(1), { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  for (let i = 0; i < 100; i++) {
    const text = await readFile(join(ports.stateDir, 'delayline.log'), 'utf8').catch(() => '');
    if (text.includes('"ready":true')) return child.pid!;
    if (child.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const text = await readFile(join(ports.stateDir, 'delayline.log'), 'utf8').catch(() => '');
  throw new E2eError(
    'E2E_ERR_LAB',
    `the delay line did not start: ${text.trim() || `is ${delaylinePath()} built? (npm ci builds it)`}`,
  );
}

export class DelaylineBackend implements LinkBackend {
  readonly name = 'delayline';

  async apply(ports: RouterPorts, spec: LinkSpec): Promise<number[]> {
    if (ports.forwarding === 'routed')
      throw new E2eError(
        'E2E_ERR_LAB',
        'the delay line forwards frames between two interfaces of one subnet (bridge ' +
          'forwarding); for routed forwarding the router gives it an inner veth pair ' +
          '(routed-line.ts)',
      );
    inNs(ports.routerNs, ['tc', 'qdisc', 'replace', 'dev', ports.accessSide, 'root', ...tbfArgs(spec.down)]);
    inNs(ports.routerNs, ['tc', 'qdisc', 'replace', 'dev', ports.originSide, 'root', ...tbfArgs(spec.up)]);
    return [await startDelayline(ports, spec)];
  }

  setRate(ports: RouterPorts, direction: 'down' | 'up', spec: DirectionSpec): void {
    inNs(ports.routerNs, [
      'tc',
      'qdisc',
      'change',
      'dev',
      direction === 'down' ? ports.accessSide : ports.originSide,
      'root',
      ...tbfArgs(spec),
    ]);
  }

  async setDelay(ports: RouterPorts, downMs: number, upMs: number, spec: LinkSpec): Promise<void> {
    await writeFile(join(ports.stateDir, 'delayline.control'), controlText(downMs, upMs, spec));
    const pid = await this.pid(ports);
    if (pid !== undefined) process.kill(pid, 'SIGHUP');
  }

  async forwardingStats(ports: RouterPorts): Promise<Record<string, unknown> | undefined> {
    const pid = await this.pid(ports);
    if (pid === undefined) return undefined;
    const logPath = join(ports.stateDir, 'delayline.log');
    const before = (await readFile(logPath, 'utf8')).length;
    process.kill(pid, 'SIGUSR1');
    for (let i = 0; i < 50; i++) {
      await new Promise((resolve) => setTimeout(resolve, 10));
      const text = await readFile(logPath, 'utf8');
      const fresh = text
        .slice(before)
        .trim()
        .split('\n')
        .filter((line) => line.startsWith('{"ab"'));
      if (fresh.length > 0) {
        const raw = JSON.parse(fresh[fresh.length - 1]!) as Record<string, unknown>;
        return { down: raw.ab, up: raw.ba, ...(raw.links === undefined ? {} : { links: raw.links }) };
      }
    }
    return undefined;
  }

  /** The delay line's own counters: frames it read in that direction, and the ones its seeded random loss dropped. */
  async randomLossCounters(
    ports: RouterPorts,
    direction: 'down' | 'up',
  ): Promise<{ offered: number; dropped: number }> {
    const counters = (await this.forwardingStats(ports))?.[direction] as
      | { received?: number; droppedLoss?: number }
      | undefined;
    if (counters === undefined)
      throw new E2eError(
        'E2E_ERR_LAB',
        `the delay line of ${ports.stateDir} did not report its counters (is it running?)`,
      );
    return { offered: counters.received ?? 0, dropped: counters.droppedLoss ?? 0 };
  }

  private async pid(ports: RouterPorts): Promise<number | undefined> {
    const state = JSON.parse(await readFile(join(ports.stateDir, 'state.json'), 'utf8').catch(() => '{}')) as {
      pids?: { delayline?: number };
    };
    return state.pids?.delayline;
  }
}
