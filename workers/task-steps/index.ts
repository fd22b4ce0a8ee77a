import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { createStepProcessor, type StepRunner } from './step.processor';

/** The `task-steps` queue: each job is one step of one task, taken by the task loop. */
export function taskStepsWiring(deps: { loop: StepRunner }): QueueWiring {
  return {
    queue: QUEUE_NAMES.taskSteps,
    concurrency: 50,
    processors: { step: createStepProcessor(deps.loop) },
    // A step whose worker died is not run again behind the task's back: the job fails as stalled
    // and the reconcile sweep fails its task with "server restarted".
    workerOptions: { maxStalledCount: 0 },
  };
}
