import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Page, PageRequest } from '../pagination';
import { autoTopUpsSince, countActiveTasks, ensureAccount, findAccount, findPlan, listLedger, listPlans, minutesSince, monthStart, type AccountRow, type LedgerKind, type PlanRow } from './billing.repository';
import { nextMonthStart } from './billing-rules';
import { toBillingAccount, toLedgerEntry, toPlan, type BillingAccount, type LedgerEntry, type Plan, type Usage } from './billing-objects';

export interface BillingReadsDeps {
  db: Knex;
  clock: Clock;
  /** Whether a payment provider is set up (STRIPE_SECRET_KEY); the account says so. */
  paymentsAvailable: boolean;
  /** The plan an account is opened on when it is first read (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
}

/**
 * What an org's members read of billing: the plans, this month's usage, the account and its
 * ledger (docs/billing.md). An org made before billing gets its account on its first read.
 */
export class BillingReadsService {
  constructor(private readonly deps: BillingReadsDeps) {}

  /** The plans offered, and the org's own (listed or not), in the order offered. */
  async plans(orgId: string): Promise<Plan[]> {
    const { account } = await this.accountWithPlan(orgId);
    return (await listPlans(this.deps.db, account.plan_id)).map(toPlan);
  }

  /** The org's account row and its plan's row, the account opened first when missing. */
  async accountWithPlan(orgId: string): Promise<{ account: AccountRow; plan: PlanRow }> {
    const { db } = this.deps;
    await ensureAccount(db, orgId, this.deps.defaultPlanId);
    const account = (await findAccount(db, orgId))!;
    return { account, plan: (await findPlan(db, account.plan_id))! };
  }

  /** This month's usage: minutes by day and by agent, free minutes left, the balance and the plan. */
  async usage(orgId: string): Promise<Usage> {
    const now = this.deps.clock.now();
    const since = monthStart(now);
    const { account, plan } = await this.accountWithPlan(orgId);
    const [minutes, running] = await Promise.all([minutesSince(this.deps.db, orgId, since), countActiveTasks(this.deps.db, orgId)]);
    return {
      object: 'usage',
      month: since.toISOString().slice(0, 7),
      period_start: since.toISOString(),
      period_end: nextMonthStart(now).toISOString(),
      plan: toPlan(plan),
      balance_cents: account.balance_cents,
      minutes_used: minutes.taskMinutes + minutes.machineMinutes,
      task_minutes: minutes.taskMinutes,
      machine_minutes: minutes.machineMinutes,
      free_minutes_used: minutes.freeMinutes,
      free_minutes_left: Math.max(0, plan.free_minutes - minutes.freeMinutes),
      spent_cents: minutes.spentCents,
      running_tasks: running,
      by_day: minutes.byDay,
      by_agent: minutes.byAgent,
    };
  }

  /** The org's billing settings: plan, balance, card, auto top-up. */
  async account(orgId: string): Promise<BillingAccount> {
    const { account } = await this.accountWithPlan(orgId);
    const used = await autoTopUpsSince(this.deps.db, orgId, monthStart(this.deps.clock.now()));
    return toBillingAccount(account, this.deps.paymentsAvailable, used.cents);
  }

  /** A page of the ledger, newest first; `kinds` narrows it (the console's top-ups list). */
  async ledger(orgId: string, kinds: LedgerKind[] | null, page: PageRequest): Promise<Page<LedgerEntry>> {
    await ensureAccount(this.deps.db, orgId, this.deps.defaultPlanId);
    const rows = await listLedger(this.deps.db, orgId, kinds, page);
    return { ...rows, data: rows.data.map(toLedgerEntry) };
  }
}
