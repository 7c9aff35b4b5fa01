/**
 * The delivery policies: each one a named pair of a rate rule (what rate: rates/) and an enforcer
 * (how it is enforced: enforcers/), one line each. The paper's groups are `app-pacing` (its
 * baseline), `app-pacing-16k` (shrunk-block) and `trickle`; `trickle-abr` is Trickle's cwnd clamp
 * (from the path's minimum RTT) with a rate adaptive players can live with, the default for
 * segments (progressive files get the paper's rate under it). `trickle-min-rtt` is the paper's
 * pair with the clamp from the minimum RTT, `trickle-abr-srtt` the ABR-aware pair with the paper's
 * srtt. `sammy` is the strongest published pacer, Netflix's, as a baseline.
 */
export const rateRuleNames = ['unthrottled', 'media', 'abr', 'sammy'] as const;
export type RateRuleName = (typeof rateRuleNames)[number];

export const enforcerNames = [
  'none',
  'token-bucket',
  'token-bucket-16k',
  'cwnd-clamp',
  'cwnd-clamp-min-rtt',
  'kernel-pacing',
  'kernel-pacing-exact',
] as const;
export type EnforcerName = (typeof enforcerNames)[number];

export interface PolicyPair {
  readonly rate: RateRuleName;
  readonly enforcer: EnforcerName;
  readonly description: string;
}

export const policyCatalogue = {
  bulk: { rate: 'unthrottled', enforcer: 'none', description: 'as fast as TCP allows (no throttling phase)' },
  'app-pacing': {
    rate: 'media',
    enforcer: 'token-bucket',
    description: "the paper's baseline: 64 kB blocks from a token bucket at 1.25 x R",
  },
  'app-pacing-16k': {
    rate: 'media',
    enforcer: 'token-bucket-16k',
    description: "the paper's shrunk-block group: 16 kB blocks",
  },
  trickle: {
    rate: 'media',
    enforcer: 'cwnd-clamp',
    description: "the paper's Trickle: Algorithm 1, cwnd clamped at 1.2 x R x rtt / mss",
  },
  'trickle-min-rtt': {
    rate: 'media',
    enforcer: 'cwnd-clamp-min-rtt',
    description:
      "Trickle's clamp from the path's minimum RTT instead of srtt (not the paper's: a clamp from srtt " +
      'grows with the queue it lets build on a deep buffer)',
  },
  pacing: { rate: 'media', enforcer: 'kernel-pacing', description: 'SO_MAX_PACING_RATE at 1.25 x R, with catch-up' },
  cmcd: {
    rate: 'abr',
    enforcer: 'kernel-pacing',
    description: 'the ABR-aware rate (CMCD when sent) under kernel pacing',
  },
  'trickle-abr': {
    rate: 'abr',
    enforcer: 'cwnd-clamp-min-rtt',
    description: "the ABR-aware rate (CMCD when sent) under Trickle's cwnd clamp from the path's minimum RTT",
  },
  'trickle-abr-srtt': {
    rate: 'abr',
    enforcer: 'cwnd-clamp',
    description:
      'trickle-abr with the clamp from srtt (before 2026-11-29): on a link slower than the aim the clamp grows ' +
      "with the queue, so a segment's slow start runs into a deep buffer's tail",
  },
  sammy: {
    rate: 'sammy',
    enforcer: 'kernel-pacing-exact',
    description:
      "Netflix's Sammy (SIGCOMM 2023, Algorithm 1): no pacing in the initial phase, then " +
      '(c1 B + c0 (1 - B)) x the top bitrate by kernel pacing',
  },
} as const satisfies Record<string, PolicyPair>;

export type PolicyName = keyof typeof policyCatalogue;
export const policyNames = Object.keys(policyCatalogue) as [PolicyName, ...PolicyName[]];

export function isPolicyName(name: string): name is PolicyName {
  return Object.hasOwn(policyCatalogue, name);
}
