import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { scopeProcessor } from './scope.processor';

/** The `guardrails` queue: checks that need a model or take longer than a step should wait. */
export const guardrailsWiring: QueueWiring = {
  queue: QUEUE_NAMES.guardrails,
  concurrency: 10,
  processors: { scope: scopeProcessor },
};
