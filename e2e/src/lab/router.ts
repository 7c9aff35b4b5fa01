/**
 * The lab's router outside the lab: the same LinkBackends and link specifications applied to two
 * interfaces of the namespace this process runs in (the compose stack's router container, or the
 * lab's router namespace when a test runs the container's entrypoint there). `trickle router`.
 * Traces are replayed in-process, by the lab's own replayer (trace-replay.ts).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { E2eError } from '../errors.js';
import { linkBackends } from './backends.js';
import type { LinkBackend, LinkBackendName, RouterPorts } from './link-backend.js';
import type { LinkSpec } from './link-spec.js';
import { netemAvailableHere } from './netem-backend.js';
import { inNs, run } from './shell.js';
import { routeThroughLine } from './routed-line.js';
import { replayTrace } from './trace-replay.js';

export interface RouterOptions {
  readonly originSide: string;
  readonly accessSide: string;
  readonly forwarding: 'bridge' | 'routed';
  readonly spec: LinkSpec;
  /**
   * `auto`: netem where this kernel has it, else the delay line (routed through an inner veth pair, see
   * routed-line.ts).
   */
  readonly backend?: 'auto' | LinkBackendName;
  readonly stateDir: string;
}

export interface RunningRouter {
  readonly backend: LinkBackendName;
  readonly ports: RouterPorts;
  /** Stops the trace replay and the delay line, and removes the qdiscs (and the bridge) it set. */
  stop(): Promise<void>;
}

function chooseBackend(options: RouterOptions): LinkBackendName {
  const requested = options.backend ?? 'auto';
  const netem = requested === 'delayline' ? { available: false } : netemAvailableHere();
  if (requested === 'netem' && !netem.available)
    throw new E2eError(
      'E2E_ERR_LAB',
      `the netem backend is not available here (${netem.reason ?? 'unknown'}); on a ` +
        `Docker host load sch_netem (modprobe sch_netem)`,
    );
  return netem.available ? 'netem' : 'delayline';
}

function checkInterface(name: string): void {
  if (!/^[A-Za-z0-9_.@-]{1,15}$/.test(name) || !run(['ip', 'link', 'show', name], { allowFailure: true }).ok)
    throw new E2eError('E2E_ERR_LAB', `no network interface "${name}" here`);
}

export async function startRouter(options: RouterOptions): Promise<RunningRouter> {
  checkInterface(options.originSide);
  checkInterface(options.accessSide);
  if (options.originSide === options.accessSide)
    throw new E2eError('E2E_ERR_LAB', 'the origin side and the access side must be two interfaces');
  const backendName = chooseBackend(options);
  const backend: LinkBackend = linkBackends[backendName]();
  await mkdir(options.stateDir, { recursive: true });
  // Offloads off, as in the lab: shaped and forwarded frames must be MTU-sized with complete checksums.
  for (const dev of [options.originSide, options.accessSide])
    run(['ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off'], { allowFailure: true });
  // The delay line bridges frames: routed, it bridges an inner veth end to the access side.
  const routedLine =
    options.forwarding === 'routed' && backendName === 'delayline' ? routeThroughLine(options.accessSide) : null;
  const ports: RouterPorts = {
    routerNs: null,
    accessSide: options.accessSide,
    stateDir: options.stateDir,
    ...(routedLine === null
      ? { forwarding: options.forwarding, originSide: options.originSide }
      : { forwarding: 'bridge' as const, originSide: routedLine.lineEnd }),
  };
  let pids: number[];
  try {
    pids = await backend.apply(ports, options.spec);
  } catch (error) {
    routedLine?.remove();
    throw error;
  }
  await writeFile(
    `${options.stateDir}/state.json`,
    JSON.stringify({ pids: { ...(pids[0] === undefined ? {} : { delayline: pids[0] }) } }),
  );
  const trace = options.spec.trace;
  const stopReplay =
    trace === undefined
      ? () => undefined
      : replayTrace(trace, {
          setDownRate: (rateBps) => backend.setRate(ports, 'down', { ...options.spec.down, rateBps }),
          setDownDelay: (delayMs) => backend.setDelay(ports, delayMs, options.spec.up.delayMs, options.spec),
        });
  return {
    backend: backendName,
    ports,
    async stop() {
      stopReplay();
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGTERM');
        } catch {
          // already gone
        }
      }
      for (const dev of [ports.originSide, ports.accessSide])
        inNs(null, ['tc', 'qdisc', 'del', 'dev', dev, 'root'], { allowFailure: true });
      if (options.forwarding === 'bridge' && backendName === 'netem')
        inNs(null, ['ip', 'link', 'del', 'br0'], { allowFailure: true });
      routedLine?.remove();
    },
  };
}
