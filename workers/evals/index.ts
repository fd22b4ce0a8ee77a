import { QUEUE_NAMES, type JobPayload } from '../../shared/queues/catalog';
import type { MachinesService } from '../../shared/machines/machines.service';
import type { StartStateFlow } from '../../shared/start-states/start-state-flow';
import type { TryFlow } from '../../shared/test-runs/try-flow';
import { everyInterval, type QueueWiring } from '../runtime';
import type { Logger } from '../../shared/logger';
import type { SweepStep } from '../maintenance/sweep.processor';

export interface EvalsDeps {
  machines: Pick<MachinesService, 'placeNow' | 'placeWaiting' | 'timedOut' | 'timeOutOverdue' | 'checkRunner' | 'sweep'>;
  startStates: Pick<StartStateFlow, 'advance' | 'closeExpired' | 'sweep'>;
  tries: Pick<TryFlow, 'schedule' | 'advance' | 'sweep'>;
}

/** How often worker-evals looks for runner commands past their deadline and open start states past their time. */
export const DEADLINES_EVERY_MS = 1_000;

/**
 * The `evals` queue (worker-evals): machines placed on runners, runners that went checked, start
 * states moved along, tries scheduled and carried out. Every job carries ids; what to do is read
 * from PostgreSQL, so a job run twice does its work once. Beside the worker, a look every second
 * times out the runner commands past their deadline and closes the open start states past their
 * time (both deadlines are in their rows; the sweep looks too).
 */
export function evalsWiring(deps: EvalsDeps & { logger: Logger }): QueueWiring {
  const useFreeSlots = async () => {
    await deps.machines.placeWaiting();
    await deps.tries.schedule();
  };
  return {
    queue: QUEUE_NAMES.evals,
    concurrency: 10,
    processors: {
      'use-free-slots': useFreeSlots,
      // Queued by earlier releases.
      'place-machine': async (payload) => deps.machines.placeNow((payload as JobPayload<'evals', 'place-machine'>).machine_id),
      'place-machines': useFreeSlots,
      'schedule-tries': useFreeSlots,
      // Queued by earlier releases, which gave each command a delayed job of its own.
      'command-timeout': async (payload) => deps.machines.timedOut((payload as JobPayload<'evals', 'command-timeout'>).command_id),
      'runner-check': async (payload) => deps.machines.checkRunner((payload as JobPayload<'evals', 'runner-check'>).runner_id),
      'start-state-advance': async (payload) => deps.startStates.advance((payload as JobPayload<'evals', 'start-state-advance'>).start_state_id),
      'try-advance': async (payload) => deps.tries.advance((payload as JobPayload<'evals', 'try-advance'>).try_id),
    },
    async alongside() {
      const lookAtDeadlines = async () => {
        await deps.machines.timeOutOverdue();
        await deps.startStates.closeExpired();
      };
      return everyInterval(DEADLINES_EVERY_MS, lookAtDeadlines, deps.logger, 'could not time out overdue runner commands or close open start states');
    },
  };
}

/** The maintenance sweep's steps for evals: what a lost job or a runner gone without a goodbye left behind. */
export function evalsSweepSteps(deps: EvalsDeps): SweepStep[] {
  return [
    { name: 'machines', run: () => deps.machines.sweep() },
    { name: 'start-states', run: () => deps.startStates.sweep() },
    { name: 'tries', run: () => deps.tries.sweep() },
  ];
}
