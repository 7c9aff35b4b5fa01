/**
 * Routed forwarding for the delay line (kernels without netem, like these machines): the delay line
 * forwards frames between two interfaces of one L2 segment, but a compose stack's router joins two
 * IP networks. So the router's address on the access network moves to an inner veth end (the route
 * end); the kernel routes between the origin side and it, and the delay line bridges its peer (the
 * line end) to the access interface:
 *
 *   origin side <-(IP forwarding)-> route end ==veth== line end <-(delay line)-> access side
 *
 * The access interface keeps no address and answers no ARP, so the players reach the router only
 * through the line: both directions are delayed and shaped (TBF on the line end for the uplink, on
 * the access side for the downlink, as with bridge forwarding).
 */
import { inNs, run } from './shell.js';

export const routeEnd = 'trk-route';
export const lineEnd = 'trk-line';

export interface RoutedLine {
  /** The interface the delay line and the uplink's TBF take as their origin side. */
  readonly lineEnd: string;
  /** Gives the access side its addresses, ARP and routes back, and removes the veth pair. */
  remove(): void;
}

interface MovedRoute {
  readonly destination: string;
  readonly rest: readonly string[];
}

/** The routes through `dev` that are not the kernel's own (those come back with the addresses). */
function routesVia(dev: string): MovedRoute[] {
  return run(['ip', '-o', '-4', 'route', 'show', 'dev', dev])
    .stdout.split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((words) => words.length > 1 && !words.includes('kernel'))
    .map(([destination, ...rest]) => ({ destination: destination!, rest }));
}

function addressesOn(dev: string): string[] {
  return run(['ip', '-o', '-4', 'addr', 'show', 'dev', dev])
    .stdout.split('\n')
    .map((line) => /\binet (\S+)/.exec(line)?.[1])
    .filter((address): address is string => address !== undefined);
}

export function routeThroughLine(accessSide: string): RoutedLine {
  const addresses = addressesOn(accessSide);
  const routes = routesVia(accessSide);
  const mtu = /\bmtu (\d+)/.exec(run(['ip', '-o', 'link', 'show', 'dev', accessSide]).stdout)?.[1] ?? '1500';
  inNs(null, ['ip', 'link', 'del', routeEnd], { allowFailure: true });
  inNs(null, ['ip', 'link', 'add', routeEnd, 'mtu', mtu, 'type', 'veth', 'peer', 'name', lineEnd, 'mtu', mtu]);
  for (const address of addresses) {
    inNs(null, ['ip', 'addr', 'del', address, 'dev', accessSide]);
    inNs(null, ['ip', 'addr', 'add', address, 'dev', routeEnd]);
  }
  // With arp on, the access side would answer for the route end's address (Linux answers ARP for
  // any local address) and the players' frames would skip the line.
  inNs(null, ['ip', 'link', 'set', accessSide, 'arp', 'off']);
  for (const dev of [routeEnd, lineEnd]) {
    inNs(null, ['ip', 'link', 'set', dev, 'up']);
    run(['ethtool', '-K', dev, 'tx', 'off', 'tso', 'off', 'gso', 'off', 'gro', 'off'], { allowFailure: true });
  }
  // `ip route show dev X` leaves out "dev X": each route is its destination and the rest.
  for (const route of routes)
    inNs(null, ['ip', 'route', 'replace', route.destination, ...route.rest, 'dev', routeEnd], { allowFailure: true });
  return {
    lineEnd,
    remove() {
      inNs(null, ['ip', 'link', 'del', routeEnd], { allowFailure: true });
      inNs(null, ['ip', 'link', 'set', accessSide, 'arp', 'on'], { allowFailure: true });
      for (const address of addresses)
        inNs(null, ['ip', 'addr', 'add', address, 'dev', accessSide], { allowFailure: true });
      for (const route of routes)
        inNs(null, ['ip', 'route', 'replace', route.destination, ...route.rest, 'dev', accessSide], {
          allowFailure: true,
        });
    },
  };
}
