/**
 * A loopback address routed with an Ethernet MTU: TCP to it uses the MSS viewers' paths carry
 * (1448 bytes with timestamps) instead of loopback's 64 kB. The kernel paces whole segments, so at
 * a lowest rung's 0.1 Mbit/s a 64 kB segment leaves every 5 s and a 12 s window sees two or three
 * of them: a flow's rate over the window is then a count of segments, not its pacing. The route
 * is one /32 in the local table (more specific than 127.0.0.0/8), added for the run and removed
 * after it. Needs root (CAP_NET_ADMIN).
 */
import { spawnSync } from 'node:child_process';
import { BenchError } from './errors.js';
import { undoneAfter } from './interrupt.js';
import type { ServerPlace } from './trickle-server.js';

/** The address: not 127.0.0.1, so nothing else on the machine goes through the route. */
export const ethernetLoopbackAddress = '127.0.0.8';
/** MSS over the route: MTU 1500 less 40 bytes of IPv4 and TCP headers and 12 of timestamps. */
export const ethernetLoopbackMssBytes = 1448;

function route(verb: 'replace' | 'del'): { ok: boolean; message: string } {
  const result = spawnSync(
    'ip',
    ['route', verb, 'local', `${ethernetLoopbackAddress}/32`, 'dev', 'lo', 'table', 'local', 'mtu', 'lock', '1500'],
    { encoding: 'utf8' },
  );
  return { ok: result.status === 0, message: (result.stderr || result.error?.message || '').trim() };
}

/** Runs `body` with servers listening on the Ethernet-MTU loopback address; the route goes afterwards. */
export async function withEthernetLoopback<T>(body: (place: ServerPlace) => Promise<T>): Promise<T> {
  const added = route('replace');
  if (!added.ok)
    throw new BenchError(
      'BENCH_ERR_NETWORK',
      `cannot route ${ethernetLoopbackAddress} with MTU 1500 (needs root): ${added.message}`,
    );
  const removeRoute = () => {
    const removed = route('del');
    if (!removed.ok)
      process.stderr.write(`bench: the route of ${ethernetLoopbackAddress} was not removed: ${removed.message}\n`);
  };
  return undoneAfter(`the route of ${ethernetLoopbackAddress}`, removeRoute, () =>
    body({ host: ethernetLoopbackAddress, wrap: [] }),
  );
}
