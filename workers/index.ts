import type { Container } from '../shared/container';
import { QUEUE_NAMES, WORKER_TYPES, type QueueName, type WorkerType } from '../shared/queues/catalog';
import { startQueueWorker, type QueueWiring, type RunningWorker } from './runtime';
import { maintenanceWiring, REDIS_CHECK_EVERY_MS, REDIS_SETTLE_MS, SWEEP_EVERY_MS } from './maintenance';
import { watchRedis } from './maintenance/redis-watch';
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
    for (const queue of WORKER_TYPES[type]) {
      const worker = startQueueWorker(container, all[queue]);
      running.push(queue === QUEUE_NAMES.maintenance ? withRedisWatch(container, worker) : worker);
    }
  }
  if (types.includes('worker-clock')) {
    // One scheduler entry however many clock processes run: BullMQ upserts by id.
    await container.queues.queue(QUEUE_NAMES.maintenance).upsertJobScheduler('sweep', { every: SWEEP_EVERY_MS }, { name: 'sweep', data: {} });
  }
  return running;
}

/**
 * The clock's maintenance worker also keeps the sweep's schedule in Redis and rebuilds the
 * queues from PostgreSQL when Redis comes back empty; it stops with the worker.
 */
function withRedisWatch(container: Container, worker: RunningWorker): RunningWorker {
  const watch = watchRedis(container, { sweepEveryMs: SWEEP_EVERY_MS, checkEveryMs: REDIS_CHECK_EVERY_MS, settleMs: REDIS_SETTLE_MS });
  void watch.check();
  return {
    worker: worker.worker,
    close: () => (watch.stop(), worker.close()),
    abandon: () => (watch.stop(), worker.abandon()),
  };
}
