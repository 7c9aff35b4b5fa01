/**
 * A/B assignment as the paper's experiment did it: each new TCP connection is assigned to a group
 * at random, with weights, from a seeded generator (Mersenne Twister from pure-rand), so every group sees the same mix
 * of clients
 * and conditions. Group names may repeat a policy (baseline1=app-pacing, baseline2=app-pacing)
 * for A/A controls.
 */
import { uniformFloat64 } from 'pure-rand/distribution/uniformFloat64';
import { mersenne } from 'pure-rand/generator/mersenne';
import { OriginError } from '../errors.js';

export interface AbGroup {
  readonly name: string;
  readonly policy: string;
  readonly weight: number;
}

/** "bulk:25,app-pacing:25" or "baseline1=app-pacing:50,baseline2=app-pacing:50". */
export function parseAbSpec(spec: string, knownPolicies: readonly string[]): AbGroup[] {
  const groups = spec.split(',').map((part) => {
    const match = /^(?:([A-Za-z0-9_-]+)=)?([A-Za-z0-9_-]+):(\d+(?:\.\d+)?)$/.exec(part.trim());
    if (match === null) throw new OriginError('ORIGIN_ERR_CONFIG', `A/B group "${part}" is not [name=]policy:weight`);
    const policy = match[2]!;
    if (!knownPolicies.includes(policy))
      throw new OriginError(
        'ORIGIN_ERR_CONFIG',
        `A/B group "${part}": no policy "${policy}"; known: ${knownPolicies.join(', ')}`,
      );
    const weight = Number(match[3]);
    if (!(weight > 0)) throw new OriginError('ORIGIN_ERR_CONFIG', `A/B group "${part}": weight must be positive`);
    return { name: match[1] ?? policy, policy, weight };
  });
  const names = groups.map((g) => g.name);
  if (new Set(names).size !== names.length)
    throw new OriginError(
      'ORIGIN_ERR_CONFIG',
      `A/B groups must have distinct names (got ${names.join(', ')}); name repeats like baseline1=app-pacing`,
    );
  return groups;
}

export class AbAssigner<G extends AbGroup = AbGroup> {
  private readonly random: () => number;
  private readonly totalWeight: number;

  constructor(
    readonly groups: readonly G[],
    seed: number,
  ) {
    const generator = mersenne(seed);
    this.random = () => uniformFloat64(generator);
    this.totalWeight = groups.reduce((sum, g) => sum + g.weight, 0);
  }

  /** The group of the next new connection. */
  assign(): G {
    let pick = this.random() * this.totalWeight;
    for (const group of this.groups) {
      pick -= group.weight;
      if (pick < 0) return group;
    }
    return this.groups[this.groups.length - 1]!;
  }
}
