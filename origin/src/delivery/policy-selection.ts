/**
 * Which policy serves a response, in order: `?policy=` when overrides are allowed (experiments),
 * the connection's A/B group, the first matching rule (asset and/or role), the default. A/B
 * groups are drawn once per TCP connection, from a seeded generator.
 */
import { AbAssigner } from './ab.js';
import { isPolicyName, policyNames, type PolicyName } from './catalogue.js';
import type { AbGroupConfig, DeliveryConfig } from './delivery-config.js';

export interface Selection {
  readonly policy: PolicyName;
  /** Where the choice came from, as data (a response pinned by `override` is about its viewer: not for shared caches). */
  readonly source: 'override' | 'group' | 'rule' | 'default';
  readonly reason: string;
}

export type SelectionResult = Selection | { readonly error: string };

export class PolicySelector {
  private readonly assigner: AbAssigner<AbGroupConfig> | undefined;

  constructor(private readonly config: DeliveryConfig) {
    this.assigner = config.ab === undefined ? undefined : new AbAssigner(config.ab, config.abSeed);
  }

  /** The A/B group of a new connection (undefined without A/B). */
  assignGroup(): AbGroupConfig | undefined {
    return this.assigner?.assign();
  }

  select(input: {
    asset: string;
    role: 'segment' | 'progressive';
    override: string | undefined;
    group: AbGroupConfig | undefined;
  }): SelectionResult {
    if (input.override !== undefined && this.config.allowPolicyOverride) {
      if (!isPolicyName(input.override))
        return { error: `unknown policy "${input.override}"; known: ${policyNames.join(', ')}` };
      return { policy: input.override, source: 'override', reason: `?policy=${input.override}` };
    }
    if (input.group !== undefined)
      return { policy: input.group.policy, source: 'group', reason: `A/B group ${input.group.name}` };
    const rule = this.config.rules.find(
      (r) => (r.asset === undefined || r.asset === input.asset) && (r.role === undefined || r.role === input.role),
    );
    if (rule !== undefined)
      return { policy: rule.policy, source: 'rule', reason: `rule ${rule.asset ?? '*'}/${rule.role ?? '*'}` };
    return { policy: this.config.policy, source: 'default', reason: 'default policy' };
  }
}
