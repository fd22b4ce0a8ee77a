import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { JobQueues } from '../queues/job-queues';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import { useFreeSlotsSoon, type MachinesService } from '../machines/machines.service';
import type { CaseSnapshot, TryRow } from './test-run-rows';
import { findRun, freeSlotsFor, nextQueuedTry, runCase, runsWaitingFairly, updateRun, type RunOfTry } from './test-runs.repository';
import { moveTry } from './try-transitions';

export interface TrySchedulerDeps {
  db: Knex;
  queues: JobQueues;
  logger: Logger;
  machines: Pick<MachinesService, 'request' | 'placeNow'>;
  /** Silence after which a runner counts as offline (its slots are not free). */
  offlineAfterMs: number;
}

/**
 * How queued tries start (docs/evals.md, "Test runs"): a fair pass starts queued tries while
 * runners have free slots, the org and the run with fewest tries running first; a try that ends
 * hands its slot to the fairest run's next try in its own transaction. Starting a try requests
 * its machine and moves it from `queued` to `machine` (`TRY_TRANSITIONS`); the rest of its flow is
 * `TryFlow`'s.
 */
export class TryScheduler {
  constructor(private readonly deps: TrySchedulerDeps) {}

  /** Queues a scheduling pass, which gives waiting machines their slots first (`useFreeSlotsSoon`); passes asked for while one waits are one. */
  scheduleSoon(): Promise<void> {
    return useFreeSlotsSoon(this.deps.queues);
  }

  /**
   * Starts queued tries while runners have room, fairly across orgs and runs. Each started try's
   * machine is placed while the next try starts (a run's first tries start one after another, and
   * its slots fill sooner so). Returns how many started.
   */
  async schedule(): Promise<number> {
    let started = 0;
    const placing: Array<Promise<void>> = [];
    try {
      for (;;) {
        let startedThisPass = 0;
        for (const run of await runsWaitingFairly(this.deps.db, 100)) {
          const machineId = await this.startNext(run.id);
          if (!machineId) continue;
          startedThisPass += 1;
          // Its machine takes the slot counted free for it, in this job: no second hop through the
          // queue. A machine not yet placed counts as waiting, so the tries started meanwhile never
          // count its slot twice.
          placing.push(this.deps.machines.placeNow(machineId));
        }
        started += startedThisPass;
        if (!startedThisPass) return started;
      }
    } finally {
      await Promise.all(placing);
    }
  }

  /**
   * A try ended in the caller's transaction and let its machine go: the fairest run's next try
   * starts in a savepoint of the same transaction. Its machine waits for the slot the ended try's
   * machine holds until that machine is destroyed, whose settle hands the slot straight over
   * (`MachinesService.settle`): the slot never stands idle while tries wait. Returns a machine to
   * place once the transaction commits (it may fit a free slot elsewhere), or null. A next try
   * that cannot start (logged) is left to the scheduling pass queued after the commit, and the
   * ended try's end stands.
   */
  async startNextAfterEnd(trx: Knex.Transaction, endedTryId: string): Promise<string | null> {
    try {
      return await trx.transaction((savepoint) => this.startFairestIn(savepoint));
    } catch (error) {
      this.deps.logger.warn({ err: error, try: endedTryId }, 'could not start the next try as this one ended; the scheduling pass will');
      return null;
    }
  }

  /**
   * The run's next try started in a transaction of its own: the id of its machine, or null. A
   * run whose next try cannot start is logged and passed over, so that it holds up no other run.
   */
  private async startNext(runId: string): Promise<string | null> {
    try {
      return await this.deps.db.transaction((trx) => this.startNextIn(trx, runId));
    } catch (error) {
      this.deps.logger.warn({ err: error, run: runId }, 'could not start the next try of a run; the other runs go on');
      return null;
    }
  }

  /** `startNext` in the caller's transaction: the id of the machine requested for the try, to place once it commits; null when none started. */
  private async startNextIn(trx: Knex.Transaction, runId: string): Promise<string | null> {
    const next = await nextQueuedTry(trx, runId);
    if (!next) return null;
    const run = (await findRun(trx, null, runId))!;
    if (run.status !== 'queued' && run.status !== 'running') return null;
    const snapshot = (await runCase(trx, runId, next.position))!.snapshot;
    const free = await freeSlotsFor(trx, { orgId: run.org_id, image: snapshot.disk.image, pinnedRunnerId: snapshot.pinned_runner_id }, this.deps.offlineAfterMs);
    if (free <= 0) return null;
    const machineId = await this.startOnMachine(trx, run, next, snapshot);
    if (run.status === 'queued') await updateRun(trx, runId, { status: 'running', started_at: trx.fn.now() as never });
    return machineId;
  }

  /** The fairest run's next try started in the caller's transaction (`startNextIn`): its machine's id, or null. */
  private async startFairestIn(trx: Knex.Transaction): Promise<string | null> {
    for (const run of await runsWaitingFairly(trx, 100)) {
      const machineId = await this.startNextIn(trx, run.id);
      if (machineId) return machineId;
    }
    return null;
  }

  /** A fresh machine for the queued try (its first, or after an infrastructure failure): the try moves to `machine`. */
  private async startOnMachine(trx: Knex.Transaction, run: RunOfTry, row: TryRow, snapshot: CaseSnapshot): Promise<string> {
    const machine = await this.deps.machines.request(trx, {
      orgId: run.org_id,
      owner: { kind: 'try', id: row.id },
      disk: snapshot.disk,
      os: snapshot.os,
      pinnedRunnerId: snapshot.pinned_runner_id,
      label: `try ${row.attempt} of ${row.test_case_id} in ${run.id}`,
    });
    await moveTry(trx, row, 'machine', { machine_id: machine.id, task_id: null, runner_id: null, started_at: (row.started_at ?? trx.fn.now()) as never });
    return machine.id;
  }
}

/**
 * Queues a try's `advance` (worker-evals); what is lost in Redis the sweep finds. The job id names
 * the try, why, and the clock's now, so that the same news at another moment is another job.
 */
export function queueTryAdvance(queues: JobQueues, clock: Clock, tryId: string, why: string): Promise<boolean> {
  return queues.enqueueOrLeaveToSweep(QUEUE_NAMES.evals, 'try-advance', { try_id: tryId }, { jobId: jobId('try', tryId, why.replace(/:/g, '-'), clock.now().getTime()) });
}
