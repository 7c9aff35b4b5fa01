/** bulk: as fast as TCP allows; after idle, TCP restarts from an initial window of 10. */
import { slowStartAfterIdle, type DeliveryModel, type DeliveryRequest } from './delivery-model.js';

export const bulkDelivery: DeliveryModel = {
  name: 'bulk',
  transfer: (request: DeliveryRequest) => ({ slowStart: slowStartAfterIdle(request) }),
};
