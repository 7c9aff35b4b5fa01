/** One model per origin delivery policy, from the origin's catalogue. */
import { policyNames } from '@trickle/origin/rules';
import type { DeliveryModel } from './delivery-model.js';
import { originPolicyModel } from './origin-policy.js';

export const deliveryModels: Readonly<Record<string, () => DeliveryModel>> = Object.fromEntries(
  policyNames.map((name) => [name, () => originPolicyModel(name)]),
);
