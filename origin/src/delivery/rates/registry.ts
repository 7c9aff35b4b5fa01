/** One line per rate rule: name -> factory from the validated delivery config. */
import type { RateRuleName } from '../catalogue.js';
import type { DeliveryConfig } from '../delivery-config.js';
import { abrRateRule } from './abr-rate.js';
import { mediaRateRule } from './media-rate.js';
import { sammyRateRule } from './sammy-rate.js';
import type { RateRule } from './rate-rule.js';
import { unthrottledRule } from './unthrottled.js';

export const rateRules: Readonly<Record<RateRuleName, (config: DeliveryConfig) => RateRule>> = {
  unthrottled: () => unthrottledRule(),
  media: (config) => mediaRateRule(config),
  abr: (config) => abrRateRule({ ...config.abr, startupSec: config.startupSec }),
  sammy: (config) => sammyRateRule({ ...config.sammy, startupSec: config.startupSec }),
};
