import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import { findPlan, freeMinutesUsed, lockAccount, monthStart, startFacts } from './billing.repository';
import { concurrencyRefusal, covers, nextMinuteCost, startRefusal } from './billing-rules';
import type { BillingReadsService } from './billing-reads.service';
import type { PaymentsService } from './payments.service';

export interface StartAdmissionDeps {
  db: Knex;
  clock: Clock;
  /** The plan an account is opened on when a start finds none (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
  reads: Pick<BillingReadsService, 'accountWithPlan'>;
  /** The auto top-up tried before a start the balance cannot cover. */
  payments: Pick<PaymentsService, 'autoTopUpIfDue'>;
}

/**
 * Whether a task on a person's computer may start (docs/billing.md, "Starting a task: 402 and
 * 429"): `shared/tasks/create-task.ts` calls `prepareStart` before the start's transaction and
 * `admitStart` in it, before the task row is written.
 */
export class StartAdmissionService {
  constructor(private readonly deps: StartAdmissionDeps) {}

  /**
   * Before a task's start transaction: when the next minute is not covered, an auto top-up is
   * tried (outside any lock: it waits on the provider). The start itself decides under the lock.
   */
  async prepareStart(orgId: string): Promise<void> {
    const { account, plan } = await this.deps.reads.accountWithPlan(orgId);
    const cost = nextMinuteCost(plan, await freeMinutesUsed(this.deps.db, orgId, monthStart(this.deps.clock.now())));
    if (covers(account.balance_cents, cost) || cost.cents === null) return;
    await this.deps.payments.autoTopUpIfDue(orgId, cost.cents);
  }

  /**
   * In a task's start transaction, before its row is written: takes the org's account lock (so
   * that the org's starts happen one after another), then 429 `concurrency_limit` when the plan's
   * tasks at once are taken and 402 when the next minute is not covered.
   */
  async admitStart(trx: Knex.Transaction, orgId: string): Promise<void> {
    const account = await lockAccount(trx, orgId, this.deps.defaultPlanId);
    const plan = (await findPlan(trx, account.plan_id))!;
    const now = this.deps.clock.now();
    // Three round trips in the lock: each start of the org waits for the one before to commit.
    const facts = await startFacts(trx, orgId, monthStart(now));
    const refusedForConcurrency = concurrencyRefusal(plan, facts.activeTasks);
    if (refusedForConcurrency) throw refusedForConcurrency;
    const refused = startRefusal({ plan, account, freeMinutesUsed: facts.freeMinutesUsed, autoTopUpsThisMonthCents: facts.autoTopUpCents, now });
    if (refused) throw refused;
  }
}
