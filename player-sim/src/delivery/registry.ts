/** One line per delivery policy the simulator models. */
import { bulkDelivery } from './bulk.js';
import { cappedDelivery } from './capped.js';
import { cmcdDelivery } from './cmcd.js';
import type { DeliveryModel } from './delivery-model.js';

export const deliveryModels: Readonly<Record<string, () => DeliveryModel>> = {
  bulk: () => bulkDelivery,
  'app-pacing': () => cappedDelivery('app-pacing', 1.25),
  'app-pacing-16k': () => cappedDelivery('app-pacing-16k', 1.25),
  trickle: () => cappedDelivery('trickle', 1.2),
  pacing: () => cappedDelivery('pacing', 1.2),
  cmcd: () => cmcdDelivery(),
};
