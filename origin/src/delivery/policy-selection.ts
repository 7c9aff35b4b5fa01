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

function groupSelection(group: AbGroupConfig): Selection {
  return { policy: group.policy, source: 'group', reason: `A/B group ${group.name}` };
}

export class PolicySelector {
  private readonly assigner: AbAssigner<AbGroupConfig> | undefined;
  // Every selection but an override's is one of these, made once: a media request allocates none.
  private readonly groupSelections: ReadonlyMap<AbGroupConfig, Selection>;
  private readonly ruleSelections: readonly {
    readonly rule: DeliveryConfig['rules'][number];
    readonly selection: Selection;
  }[];
  private readonly defaultSelection: Selection;

  constructor(private readonly config: DeliveryConfig) {
    this.assigner = config.ab === undefined ? undefined : new AbAssigner(config.ab, config.abSeed);
    this.groupSelections = new Map((config.ab ?? []).map((group) => [group, Object.freeze(groupSelection(group))]));
    this.ruleSelections = config.rules.map((rule) => ({
      rule,
      selection: Object.freeze({
        policy: rule.policy,
        source: 'rule',
        reason: `rule ${rule.asset ?? '*'}/${rule.role ?? '*'}`,
      }),
    }));
    this.defaultSelection = Object.freeze({ policy: config.policy, source: 'default', reason: 'default policy' });
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
    if (input.group !== undefined) return this.groupSelections.get(input.group) ?? groupSelection(input.group);
    for (const { rule, selection } of this.ruleSelections)
      if (
        (rule.asset === undefined || rule.asset === input.asset) &&
        (rule.role === undefined || rule.role === input.role)
      )
        return selection;
    return this.defaultSelection;
  }
}
