import type { JobPayload } from '../../shared/queues/catalog';
import type { JobHelpers } from '../runtime';

/** `webhooks/dispatch`: an org event becomes a delivery (when the endpoint wants it) and its first attempt. */
export async function dispatchProcessor(payload: unknown, { container }: JobHelpers): Promise<string> {
  const { event_id } = payload as JobPayload<'webhooks', 'dispatch'>;
  return container.webhookDelivery.dispatch(event_id);
}

/** `webhooks/deliver`: a later attempt of a delivery (retry, redelivery, test event), if due. */
export async function deliverProcessor(payload: unknown, { container }: JobHelpers): Promise<string> {
  const { delivery_id } = payload as JobPayload<'webhooks', 'deliver'>;
  return container.webhookDelivery.deliver(delivery_id);
}
