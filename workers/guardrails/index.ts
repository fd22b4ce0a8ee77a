import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { createScopeProcessor, type ScopeCheckDeps } from './scope.processor';

/** The `guardrails` queue: checks that need a model or take longer than a step should wait. */
export function guardrailsWiring(deps: ScopeCheckDeps): QueueWiring {
  return {
    queue: QUEUE_NAMES.guardrails,
    concurrency: 10,
    processors: { scope: createScopeProcessor(deps) },
  };
}
