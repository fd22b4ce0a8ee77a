import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { createSweepProcessor, type SweepStep } from './sweep.processor';
import { webhookSweepSteps } from '../webhooks';
import { expireSessionProcessor } from './expire-session.processor';
import { approvalTimeoutProcessor } from './task-timers.processor';

/** How often the reconcile sweep runs. */
export const SWEEP_EVERY_MS = 15_000;
/** How often worker-clock looks whether Redis lost its data (see `watchRedis`). */
export const REDIS_CHECK_EVERY_MS = 5_000;
/** After Redis answers again, how long the clock lets every process reconnect before it rebuilds (ioredis retries every 2 s at most). */
export const REDIS_SETTLE_MS = 3_000;

export const SWEEP_STEPS: SweepStep[] = [
  { name: 'expire-sessions', run: ({ container }) => container.sessions.expireDue() },
  { name: 'reconcile-tasks', run: ({ container }, options) => container.loop.reconcile(options?.quietMs) },
  // Approvals past approval_timeout_minutes whose delayed job was lost.
  { name: 'approval-timeouts', run: ({ container }) => container.loop.timeOutOverdueApprovals() },
  ...webhookSweepSteps,
];

export const maintenanceWiring: QueueWiring = {
  queue: QUEUE_NAMES.maintenance,
  concurrency: 2,
  processors: { sweep: createSweepProcessor(SWEEP_STEPS), 'expire-session': expireSessionProcessor,
    'approval-timeout': approvalTimeoutProcessor,
  },
};
