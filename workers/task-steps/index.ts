import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { stepProcessor } from './step.processor';

export const taskStepsWiring: QueueWiring = {
  queue: QUEUE_NAMES.taskSteps,
  concurrency: 50,
  processors: { step: stepProcessor },
  // A step whose worker died is not run again behind the task's back: the job fails as stalled
  // and the reconcile sweep fails its task with "server restarted".
  workerOptions: { maxStalledCount: 0 },
};
