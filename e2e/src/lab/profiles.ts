/** Named link presets, with their numbers documented in the README. */
import { E2eError } from '../errors.js';
import { symmetricLink, type LinkSpec } from './link-spec.js';
import { lteLikeTrace, threeGLikeTrace } from '@trickle/player-sim/traces';

export interface Profile {
  readonly name: string;
  readonly description: string;
  readonly link: () => LinkSpec;
}

export const profiles: Readonly<Record<string, Profile>> = {
  'lan-1gbit': {
    name: 'lan-1gbit',
    description:
      '1 Gbit/s both ways, 2 ms RTT, 2x BDP buffer (unconstrained: the smoke tests and ' +
      '`trickle e2e --asset` without --link)',
    link: () => symmetricLink({ rateBps: 1e9, rttMs: 2, bufferBdp: 2 }),
  },
  'dsl-6mbit': {
    name: 'dsl-6mbit',
    description: '6 Mbit/s down, 1 Mbit/s up, 40 ms RTT, 2x BDP tail-drop buffer (a residential DSL line)',
    link: () => symmetricLink({ rateBps: 6e6, upRateBps: 1e6, rttMs: 40, bufferBdp: 2 }),
  },
  'fast-20mbit': {
    name: 'fast-20mbit',
    description: '20 Mbit/s down, 5 Mbit/s up, 20 ms RTT, 2x BDP buffer (cable/fibre, well above the top rung)',
    link: () => symmetricLink({ rateBps: 20e6, upRateBps: 5e6, rttMs: 20, bufferBdp: 2 }),
  },
  'slow-1mbit': {
    name: 'slow-1mbit',
    description: "0.7 Mbit/s down and up, 300 ms RTT, deep buffer (4x BDP), like the paper's DC2 users",
    link: () => symmetricLink({ rateBps: 0.7e6, rttMs: 300, bufferBdp: 4 }),
  },
  'lte-trace': {
    name: 'lte-trace',
    description:
      'LTE-like random walk around 12 Mbit/s (1-40 Mbit/s, 500 ms steps, seeded), 50 ms RTT, 2x BDP of the mean',
    link: () => ({
      ...symmetricLink({ rateBps: 12e6, upRateBps: 5e6, rttMs: 50, bufferBdp: 2 }),
      trace: lteLikeTrace(1),
    }),
  },
  '3g-trace': {
    name: '3g-trace',
    description:
      '3G-like random walk around 1.2 Mbit/s (0.15-3 Mbit/s, 1 s steps, seeded), 150 ms RTT, 2x BDP of the mean',
    link: () => ({
      ...symmetricLink({ rateBps: 1.2e6, upRateBps: 0.5e6, rttMs: 150, bufferBdp: 2 }),
      trace: threeGLikeTrace(1),
    }),
  },
};

export function profileLink(name: string): LinkSpec {
  const profile = profiles[name];
  if (profile === undefined)
    throw new E2eError('E2E_ERR_LINK_SPEC', `no link profile "${name}"; known: ${Object.keys(profiles).join(', ')}`);
  return profile.link();
}
