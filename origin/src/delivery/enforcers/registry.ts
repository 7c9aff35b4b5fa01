/** One line per enforcer: name -> factory from the validated delivery config. */
import type { EnforcerName } from '../catalogue.js';
import type { DeliveryConfig } from '../delivery-config.js';
import { cwndClampEnforcer } from './cwnd-clamp.js';
import type { Enforcer } from './enforcer.js';
import { kernelPacingEnforcer } from './kernel-pacing.js';
import { noneEnforcer } from './none.js';
import { tokenBucketEnforcer } from './token-bucket.js';

export const enforcers: Readonly<Record<EnforcerName, (config: DeliveryConfig) => Enforcer>> = {
  none: () => noneEnforcer,
  'token-bucket': (config) => tokenBucketEnforcer('token-bucket', config.appPacing),
  'token-bucket-16k': (config) => tokenBucketEnforcer('token-bucket-16k', config.appPacing16k),
  'cwnd-clamp': (config) => cwndClampEnforcer('cwnd-clamp', { ...config.trickle, clampRtt: 'srtt' }),
  'cwnd-clamp-min-rtt': (config) => cwndClampEnforcer('cwnd-clamp-min-rtt', { ...config.trickle, clampRtt: 'min-rtt' }),
  'kernel-pacing': (config) => kernelPacingEnforcer(config.pacing),
  // The rate rule's rate is the pace rate itself (Sammy's): no headroom over it.
  'kernel-pacing-exact': (config) => kernelPacingEnforcer({ ...config.pacing, headroom: 1 }),
};
