import type { JobHelpers } from '../runtime';
import type { JobPayload } from '../../shared/queues/catalog';

/**
 * One step of a task: begin it, send its next action, or take a model turn (see TaskLoop). A
 * retryable model failure is thrown so that BullMQ tries the step again; on the last attempt
 * the task fails instead.
 */
export async function stepProcessor(payload: unknown, { job, container }: JobHelpers): Promise<string> {
  const { task_id, step } = payload as JobPayload<'task-steps', 'step'>;
  const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
  return container.loop.step(task_id, step, lastAttempt);
}
