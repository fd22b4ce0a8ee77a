import type { JobPayload } from '../../shared/queues/catalog';
import type { Processor } from '../runtime';

/**
 * One pass of reconciliation between PostgreSQL (the record) and the queues. Each domain adds
 * its step (session expiry, approval timeouts, time limits, lost step jobs); a step's failure is
 * logged and does not stop the others. `quietMs`, when given, is how long work must have looked
 * lost before a step queues it again (0 after Redis lost its data); each step has its default.
 * Evals, when they have jobs, add their step here: runs whose job is missing queued again.
 */
export type SweepStep = { name: string; run: (options?: { quietMs?: number }) => Promise<number> };

export function createSweepProcessor(steps: readonly SweepStep[]): Processor {
  return async (payload, helpers): Promise<Record<string, number | string>> => {
    const { quiet_ms: quietMs } = payload as JobPayload<'maintenance', 'sweep'>;
    const outcome: Record<string, number | string> = {};
    for (const step of steps) {
      try {
        outcome[step.name] = await step.run({ quietMs });
      } catch (error) {
        helpers.logger.error({ err: error, step: step.name }, 'sweep step failed');
        outcome[step.name] = `failed: ${(error as Error).message}`;
      }
    }
    return outcome;
  };
}
