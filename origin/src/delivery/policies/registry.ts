/** One line per policy: name -> factory from the validated delivery config. */
import type { DeliveryConfig, PolicyName } from '../../config/config.js';
import { appPacingPolicy } from './app-pacing.js';
import { bulkPolicy } from './bulk.js';
import { cmcdPolicy } from './cmcd.js';
import type { DeliveryPolicy } from './delivery-policy.js';
import { pacingPolicy } from './pacing.js';
import { tricklePolicy } from './trickle.js';

export const deliveryPolicies: Readonly<Record<PolicyName, (config: DeliveryConfig) => DeliveryPolicy>> = {
  bulk: () => bulkPolicy(),
  'app-pacing': (config) => appPacingPolicy('app-pacing', config.appPacing),
  'app-pacing-16k': (config) => appPacingPolicy('app-pacing-16k', config.appPacing16k),
  trickle: (config) => tricklePolicy(config.trickle),
  pacing: (config) => pacingPolicy({ ...config.pacing, floorPackets: config.kernelPacing.floorPackets }),
  cmcd: (config) => cmcdPolicy({ ...config.cmcd, floorPackets: config.kernelPacing.floorPackets }),
};
