import type { JobHelpers } from '../runtime';

/**
 * One pass of reconciliation between PostgreSQL (the record) and the queues. Each domain adds
 * its step (session expiry, approval timeouts, time limits, lost step jobs); a step's failure is
 * logged and does not stop the others.
 */
export type SweepStep = { name: string; run: (helpers: JobHelpers) => Promise<number> };

export function createSweepProcessor(steps: SweepStep[]) {
  return async (_payload: unknown, helpers: JobHelpers): Promise<Record<string, number | string>> => {
    const outcome: Record<string, number | string> = {};
    for (const step of steps) {
      try {
        outcome[step.name] = await step.run(helpers);
      } catch (error) {
        helpers.logger.error({ err: error, step: step.name }, 'sweep step failed');
        outcome[step.name] = `failed: ${(error as Error).message}`;
      }
    }
    return outcome;
  };
}
