import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import type { SweepStep } from '../maintenance/sweep.processor';
import { deliverProcessor, dispatchProcessor } from './dispatch.processor';

/** The `webhooks` queue: each job holds one attempt at most, bounded by the 10-second deadline. */
export const webhooksWiring: QueueWiring = {
  queue: QUEUE_NAMES.webhooks,
  concurrency: 100,
  processors: { dispatch: dispatchProcessor, deliver: deliverProcessor },
};

/** Reconcile steps for the maintenance sweep: lost dispatch jobs and lost retry jobs. */
export const webhookSweepSteps: SweepStep[] = [
  { name: 'webhook-dispatch', run: ({ container }, options) => container.webhookDelivery.redispatchLostEvents(options?.quietMs) },
  { name: 'webhook-retries', run: ({ container }, options) => container.webhookDelivery.resumeOverdueDeliveries(options?.quietMs) },
];
