import type { Container } from '../shared/container';
import { QUEUE_NAMES, WORKER_TYPES, type QueueName, type WorkerType } from '../shared/queues/catalog';
import { startQueueWorker, type QueueWiring, type RunningWorker } from './runtime';
import { maintenanceWiring, SWEEP_EVERY_MS } from './maintenance';
import { taskStepsWiring } from './task-steps';
import { webhooksWiring } from './webhooks';
import { toolCallsWiring } from './tool-calls';
import { guardrailsWiring } from './guardrails';

/** Each queue's wiring; a queue whose jobs arrive with later features starts with no processors. */
function wirings(): Record<QueueName, QueueWiring> {
  return {
    [QUEUE_NAMES.taskSteps]: taskStepsWiring,
    [QUEUE_NAMES.guardrails]: guardrailsWiring,
    [QUEUE_NAMES.webhooks]: webhooksWiring,
    // A finished call resumes its task: the reply (or why it failed) goes to the model.
    [QUEUE_NAMES.toolCalls]: toolCallsWiring((call, { container }) => container.loop.toolCallFinished(call)),
    [QUEUE_NAMES.evals]: { queue: QUEUE_NAMES.evals, concurrency: 5, processors: {} },
    [QUEUE_NAMES.maintenance]: maintenanceWiring,
  };
}

/** Starts the workers of the given process types. */
export async function startWorkers(container: Container, types: WorkerType[]): Promise<RunningWorker[]> {
  const all = wirings();
  const running: RunningWorker[] = [];
  for (const type of types) {
    for (const queue of WORKER_TYPES[type]) running.push(startQueueWorker(container, all[queue]));
  }
  if (types.includes('worker-clock')) {
    // One scheduler entry however many clock processes run: BullMQ upserts by id.
    await container.queues.queue(QUEUE_NAMES.maintenance).upsertJobScheduler('sweep', { every: SWEEP_EVERY_MS }, { name: 'sweep', data: {} });
  }
  return running;
}
