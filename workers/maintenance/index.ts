import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { SessionsService } from '../../shared/sessions/sessions.service';
import type { QueueWiring } from '../runtime';
import { createSweepProcessor, type SweepStep } from './sweep.processor';
import { webhookSweepSteps } from '../webhooks';
import { evalsSweepSteps, type EvalsDeps } from '../evals';
import { createExpireSessionProcessor } from './expire-session.processor';
import { createApprovalTimeoutProcessor, type TaskTimers } from './task-timers.processor';
import { watchRedis, type RedisWatchDeps } from './redis-watch';

/** How often the reconcile sweep runs. */
export const SWEEP_EVERY_MS = 15_000;
/** How often worker-clock looks whether Redis lost its data (see `watchRedis`). */
export const REDIS_CHECK_EVERY_MS = 5_000;
/** After Redis answers again, how long the clock lets every process reconnect before it rebuilds (ioredis retries every 2 s at most). */
export const REDIS_SETTLE_MS = 3_000;

/** What the maintenance queue needs: the services its jobs and sweep steps call. */
export interface MaintenanceDeps {
  sessions: Pick<SessionsService, 'expireDue'>;
  loop: TaskTimers & { reconcile(quietMs?: number): Promise<number>; timeOutOverdueApprovals(): Promise<number>; meterRunning(): Promise<number> };
  webhookDelivery: Parameters<typeof webhookSweepSteps>[0]['webhookDelivery'];
  evals: EvalsDeps;
  /** Deletes `Idempotency-Key`s past their 24 hours. */
  idempotency: { deleteExpired(): Promise<number> };
  billing: { metering: { chargeMachineMinutes(): Promise<number> } };
}

/** The reconcile sweep's steps, in the order they run. */
export function sweepSteps(deps: MaintenanceDeps): SweepStep[] {
  return [
    { name: 'expire-sessions', run: () => deps.sessions.expireDue() },
    { name: 'reconcile-tasks', run: (options) => deps.loop.reconcile(options?.quietMs) },
    // Approvals past approval_timeout_minutes whose delayed job was lost.
    { name: 'approval-timeouts', run: () => deps.loop.timeOutOverdueApprovals() },
    // Running tasks charged minute by minute (docs/billing.md); one that cannot pay its next minute stops.
    { name: 'meter-tasks', run: () => deps.loop.meterRunning() },
    // Eval tries on cloud runners: machine minutes.
    { name: 'meter-machines', run: () => deps.billing.metering.chargeMachineMinutes() },
    ...webhookSweepSteps(deps),
    ...evalsSweepSteps(deps.evals),
    { name: 'expired-idempotency-keys', run: () => deps.idempotency.deleteExpired() },
  ];
}

/**
 * The `maintenance` queue (worker-clock). Beside its worker, the clock keeps the sweep's
 * schedule in Redis and rebuilds the queues from PostgreSQL when Redis comes back empty.
 */
export function maintenanceWiring(deps: MaintenanceDeps & { redisWatch: RedisWatchDeps }): QueueWiring {
  return {
    queue: QUEUE_NAMES.maintenance,
    concurrency: 2,
    processors: {
      sweep: createSweepProcessor(sweepSteps(deps)),
      'expire-session': createExpireSessionProcessor(deps.sessions),
      'approval-timeout': createApprovalTimeoutProcessor(deps.loop),
    },
    async alongside() {
      const watch = watchRedis(deps.redisWatch, { sweepEveryMs: SWEEP_EVERY_MS, checkEveryMs: REDIS_CHECK_EVERY_MS, settleMs: REDIS_SETTLE_MS });
      void watch.check();
      try {
        // One scheduler entry however many clock processes run: BullMQ upserts by id.
        await deps.redisWatch.queues.queue(QUEUE_NAMES.maintenance).upsertJobScheduler('sweep', { every: SWEEP_EVERY_MS }, { name: 'sweep', data: {} });
      } catch (error) {
        watch.stop();
        throw error;
      }
      return watch;
    },
  };
}
