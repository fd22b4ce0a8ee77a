import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { QueueWiring } from '../runtime';
import { createSweepProcessor, type SweepStep } from './sweep.processor';
import { expireSessionProcessor } from './expire-session.processor';

/** How often the reconcile sweep runs. */
export const SWEEP_EVERY_MS = 15_000;

export const SWEEP_STEPS: SweepStep[] = [
  { name: 'expire-sessions', run: ({ container }) => container.sessions.expireDue() },
];

export const maintenanceWiring: QueueWiring = {
  queue: QUEUE_NAMES.maintenance,
  concurrency: 2,
  processors: { sweep: createSweepProcessor(SWEEP_STEPS), 'expire-session': expireSessionProcessor },
};
