import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { WebhookDeliveryService } from '../../shared/webhooks/webhook-delivery.service';
import type { QueueWiring } from '../runtime';
import type { SweepStep } from '../maintenance/sweep.processor';
import { createDeliverProcessor, createDispatchProcessor, type WebhookDelivery } from './dispatch.processor';

/** The `webhooks` queue: each job holds one attempt at most, bounded by the 10-second deadline. */
export function webhooksWiring(deps: { webhookDelivery: WebhookDelivery }): QueueWiring {
  return {
    queue: QUEUE_NAMES.webhooks,
    concurrency: WEBHOOKS_CONCURRENCY,
    processors: { dispatch: createDispatchProcessor(deps.webhookDelivery), deliver: createDeliverProcessor(deps.webhookDelivery) },
  };
}

/** How many attempts one delivery worker makes at once (outbound HTTP waits, it does not compute). */
export const WEBHOOKS_CONCURRENCY = 100;

/** Reconcile steps for the maintenance sweep: lost dispatch jobs and lost retry jobs. */
export function webhookSweepSteps(deps: { webhookDelivery: Pick<WebhookDeliveryService, 'redispatchLostEvents' | 'resumeOverdueDeliveries'> }): SweepStep[] {
  return [
    { name: 'webhook-dispatch', run: (options) => deps.webhookDelivery.redispatchLostEvents(options?.quietMs) },
    { name: 'webhook-retries', run: (options) => deps.webhookDelivery.resumeOverdueDeliveries(options?.quietMs) },
  ];
}
