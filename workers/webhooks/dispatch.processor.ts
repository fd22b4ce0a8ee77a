import type { JobPayload } from '../../shared/queues/catalog';
import type { WebhookDeliveryService } from '../../shared/webhooks/webhook-delivery.service';
import type { Processor } from '../runtime';

/** What the webhooks queue needs of delivery. */
export type WebhookDelivery = Pick<WebhookDeliveryService, 'dispatch' | 'deliver'>;

/** `webhooks/dispatch`: an org event becomes a delivery (when the endpoint wants it) and its first attempt. */
export function createDispatchProcessor(delivery: WebhookDelivery): Processor {
  return async (payload) => {
    const { event_id } = payload as JobPayload<'webhooks', 'dispatch'>;
    return delivery.dispatch(event_id);
  };
}

/** `webhooks/deliver`: a later attempt of a delivery (retry, redelivery, test event), if due. */
export function createDeliverProcessor(delivery: WebhookDelivery): Processor {
  return async (payload) => {
    const { delivery_id } = payload as JobPayload<'webhooks', 'deliver'>;
    return delivery.deliver(delivery_id);
  };
}
