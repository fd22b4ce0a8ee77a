import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import { appendLedger, findPlan, freeMinutesUsed, isMeteredTask, lastChargedMachineMinute, lastChargedMinute, lockAccount, machineMinutesDue, monthStart, runningMeteredTaskIds } from './billing.repository';
import { covers, nextMinuteCost, outOfMinutesReason } from './billing-rules';

export interface MeteringDeps {
  db: Knex;
  clock: Clock;
  /** The plan an account is opened on when a charge finds none (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
}

/** How charging a task's minutes went: `uncovered` is why the next one could not be charged (the task stops), or null. */
export interface MinutesCharged {
  charged: number;
  uncovered: string | null;
}

/**
 * Minutes into the ledger (docs/billing.md): a task's minutes on a person's computer (the task
 * loop charges them as they begin and at the task's end, `shared/tasks/loop/metering.ts`) and
 * eval tries' machine minutes (the maintenance sweep). A minute is charged once, whoever charges
 * it: the ledger's unique task (or try) and minute.
 */
export class MeteringService {
  constructor(private readonly deps: MeteringDeps) {}

  /**
   * Charges a task's minutes 1…`upTo` not charged yet, in the caller's transaction (which holds
   * the task's lock; this takes the account's). Free minutes first, then the balance. Without
   * `overdraft` it stops at the first minute not covered and says why; with it (the task's end:
   * the minutes were used) every minute is written, a paid one even past the balance.
   */
  async chargeTaskMinutes(trx: Knex.Transaction, task: { id: string; org_id: string; session_id: string }, upTo: number, options: { overdraft: boolean }): Promise<MinutesCharged> {
    if (upTo < 1 || !(await isMeteredTask(trx, task.session_id))) return { charged: 0, uncovered: null };
    const from = (await lastChargedMinute(trx, task.id)) + 1;
    if (from > upTo) return { charged: 0, uncovered: null };
    const account = await lockAccount(trx, task.org_id, this.deps.defaultPlanId);
    const plan = (await findPlan(trx, account.plan_id))!;
    const now = this.deps.clock.now();
    let freeUsed = await freeMinutesUsed(trx, task.org_id, monthStart(now));
    let charged = 0;
    for (let minute = from; minute <= upTo; minute++) {
      const cost = nextMinuteCost(plan, freeUsed);
      if (!covers(account.balance_cents, cost) && !options.overdraft) return { charged, uncovered: outOfMinutesReason(plan, cost) };
      const description = cost.free ? `Minute ${minute} of ${task.id} (free)` : cost.cents === null ? `Minute ${minute} of ${task.id} (past the free minutes; ${plan.name} plan)` : `Minute ${minute} of ${task.id}`;
      const row = await appendLedger(trx, account, { kind: 'task_minute', amount_cents: -(cost.cents ?? 0), task_id: task.id, minute, free: cost.free, description }, now);
      if (row) charged++;
      if (cost.free) freeUsed++;
    }
    return { charged, uncovered: null };
  }

  /**
   * Machine minutes (docs/billing.md): eval tries on cloud runners are charged per minute of the
   * machine, free minutes first, then the balance, even past it (a try is not cut short; a test
   * run is not refused at its start). Tries on the org's own runners are not charged. Returns
   * how many minutes it charged.
   */
  async chargeMachineMinutes(limit = 500): Promise<number> {
    let charged = 0;
    for (const due of await machineMinutesDue(this.deps.db, limit)) {
      charged += await this.deps.db.transaction(async (trx) => {
        const account = await lockAccount(trx, due.org_id, this.deps.defaultPlanId);
        const plan = (await findPlan(trx, account.plan_id))!;
        const now = this.deps.clock.now();
        let freeUsed = await freeMinutesUsed(trx, due.org_id, monthStart(now));
        let written = 0;
        for (let minute = (await lastChargedMachineMinute(trx, due.id)) + 1; minute <= due.due; minute++) {
          const cost = nextMinuteCost(plan, freeUsed);
          const row = await appendLedger(trx, account, { kind: 'machine_minute', amount_cents: -(cost.cents ?? 0), try_id: due.id, minute, free: cost.free, description: `Machine minute ${minute} of ${due.id}${cost.free ? ' (free)' : ''}` }, now);
          if (row) written++;
          if (cost.free) freeUsed++;
        }
        return written;
      });
    }
    return charged;
  }

  /** The running tasks the meter has work for (on people's computers, a minute begun and not charged), at most `limit`. */
  runningTasks(limit = 500): Promise<Array<{ id: string; org_id: string }>> {
    return runningMeteredTaskIds(this.deps.db, this.deps.clock.now(), limit);
  }
}
