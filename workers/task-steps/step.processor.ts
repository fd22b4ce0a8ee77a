import type { JobPayload } from '../../shared/queues/catalog';
import type { Processor } from '../runtime';

/** What a step needs of the task loop. */
export interface StepRunner {
  step(taskId: string, n: number, lastAttempt: boolean): Promise<string>;
}

/**
 * One step of a task: begin it, send its next action, or take a model turn (see TaskLoop). A
 * retryable model failure is thrown so that BullMQ tries the step again; on the last attempt
 * the task fails instead.
 */
export function createStepProcessor(loop: StepRunner): Processor {
  return async (payload, { job }) => {
    const { task_id, step } = payload as JobPayload<'task-steps', 'step'>;
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    return loop.step(task_id, step, lastAttempt);
  };
}
