/**
 * LinkBackend: how the router namespace turns a LinkSpec into a real link. Both backends put the
 * bottleneck (a TBF tail-drop queue) on the router's egress, never on an end host's interface.
 */
import type { DirectionSpec, LinkSpec } from './link-spec.js';

export type LinkBackendName = 'delayline' | 'netem';

export interface RouterPorts {
  /** The router's network namespace; null: this process's own (a router container). */
  readonly routerNs: string | null;
  /**
   * How frames cross the router: `bridge` (the lab: origin and player on one subnet), or `routed`
   * (a compose stack: two networks, the kernel forwards IP between them). Default bridge.
   */
  readonly forwarding?: 'bridge' | 'routed';
  /** Router interface toward the origin: egress of the uplink. */
  readonly originSide: string;
  /** Router interface toward the access network (player, cross): egress of the downlink. */
  readonly accessSide: string;
  /** Where the backend keeps control files and logs. */
  readonly stateDir: string;
}

export interface LinkBackend {
  readonly name: LinkBackendName;
  /** Forwarding and shaping in the router; returns the pids of processes it started. */
  apply(ports: RouterPorts, spec: LinkSpec): Promise<number[]>;
  setRate(ports: RouterPorts, direction: 'down' | 'up', spec: DirectionSpec): void;
  setDelay(ports: RouterPorts, downMs: number, upMs: number, spec: LinkSpec): Promise<void>;
  /** Counters of the backend's own forwarding (delay line), if any. */
  forwardingStats(ports: RouterPorts): Promise<Record<string, unknown> | undefined>;
  /**
   * What the backend's random loss saw in one direction since the link came up: packets offered
   * to it and packets it dropped at random (not the bottleneck's tail drops, not losses elsewhere).
   */
  randomLossCounters(ports: RouterPorts, direction: 'down' | 'up'): Promise<{ offered: number; dropped: number }>;
}

/** TBF burst: about a millisecond at the rate, and never less than two full frames. */
export function tbfBurstBytes(rateBps: number): number {
  return Math.max(2 * 1514, Math.ceil(rateBps / 8 / 1000));
}

export function tbfArgs(spec: DirectionSpec): string[] {
  return [
    'tbf',
    'rate',
    `${Math.round(spec.rateBps)}bit`,
    'burst',
    String(tbfBurstBytes(spec.rateBps)),
    'limit',
    String(Math.max(spec.bufferBytes, tbfBurstBytes(spec.rateBps))),
  ];
}
