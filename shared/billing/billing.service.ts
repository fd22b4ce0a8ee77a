import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Caller } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, invalidRequest, notFound } from '../errors';
import type { Page, PageRequest } from '../pagination';
import {
  appendLedger,
  autoTopUpsSince,
  countActiveTasks,
  startFacts,
  ensureAccount,
  findAccount,
  findAccountByCustomer,
  findPlan,
  freeMinutesUsed,
  isMeteredTask,
  lastChargedMinute,
  lastChargedMachineMinute,
  machineMinutesDue,
  listLedger,
  listPlans,
  lockAccount,
  minutesSince,
  monthStart,
  recordProviderEvent,
  runningMeteredTaskIds,
  updateAccount,
  type AccountRow,
  type LedgerKind,
  type LedgerRow,
  type PlanRow,
} from './billing.repository';
import { concurrencyRefusal, covers, dollars, nextMinuteCost, nextMonthStart, outOfMinutesReason, startRefusal } from './billing-rules';
import { paymentsNotConfigured, type PaymentProvider, type ProviderEvent } from './payment-provider';

/** The spec-style objects billing answers with (api/schemas/billing.schemas.ts). */
export interface Plan {
  object: 'plan';
  plan_id: string;
  name: string;
  description: string;
  free_minutes: number;
  price_per_minute_cents: number | null;
  concurrent_tasks: number;
  self_serve: boolean;
}

export interface Usage {
  object: 'usage';
  month: string;
  period_start: string;
  period_end: string;
  plan: Plan;
  balance_cents: number;
  minutes_used: number;
  task_minutes: number;
  machine_minutes: number;
  free_minutes_used: number;
  free_minutes_left: number;
  spent_cents: number;
  running_tasks: number;
  by_day: Array<{ date: string; minutes: number }>;
  by_agent: Array<{ agent_id: string; minutes: number }>;
}

export interface BillingAccount {
  object: 'billing_account';
  plan_id: string;
  balance_cents: number;
  payments_available: boolean;
  card: { status: AccountRow['card_status'] };
  auto_topup: { enabled: boolean; amount_cents: number; threshold_cents: number; monthly_limit_cents: number; used_this_month_cents: number };
}

export interface LedgerEntry {
  object: 'ledger_entry';
  id: string;
  kind: LedgerKind;
  amount_cents: number;
  balance_after_cents: number;
  task_id: string | null;
  try_id: string | null;
  minute: number | null;
  free: boolean;
  payment_id: string | null;
  description: string;
  created_at: string;
}

export interface AutoTopUpSettings {
  enabled?: boolean;
  amount_cents?: number;
  threshold_cents?: number;
  monthly_limit_cents?: number;
}

/** How charging a task's minutes went: `uncovered` is why the next one could not be charged (the task stops), or null. */
export interface MinutesCharged {
  charged: number;
  uncovered: string | null;
}

export interface BillingDeps {
  db: Knex;
  clock: Clock;
  /** Null without STRIPE_SECRET_KEY: paid features answer 503 `payments_unavailable`, the free plan works. */
  provider: PaymentProvider | null;
  logger: Logger;
  /** The plan a new org starts on (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
}

type AuditCaller = Caller & { requestId?: string | null };

export function toPlan(row: PlanRow): Plan {
  return {
    object: 'plan',
    plan_id: row.id,
    name: row.name,
    description: row.description,
    free_minutes: row.free_minutes,
    price_per_minute_cents: row.price_per_minute_cents,
    concurrent_tasks: row.concurrent_tasks,
    self_serve: row.self_serve,
  };
}

export function toLedgerEntry(row: LedgerRow): LedgerEntry {
  return {
    object: 'ledger_entry',
    id: row.id,
    kind: row.kind,
    amount_cents: row.amount_cents,
    balance_after_cents: row.balance_after_cents,
    task_id: row.task_id,
    try_id: row.try_id,
    minute: row.minute,
    free: row.free,
    payment_id: row.payment_id,
    description: row.description,
    created_at: row.created_at.toISOString(),
  };
}

/**
 * Plans, the balance and its ledger, payments and the limits a task start meets (docs/billing.md).
 * The balance only moves in `appendLedger`, under the account's row lock, with its ledger row.
 */
export class BillingService {
  constructor(private readonly deps: BillingDeps) {}

  /** The plans offered, and the org's own (listed or not), in the order offered. */
  async plans(orgId: string): Promise<Plan[]> {
    const { account } = await this.accountWithPlan(this.deps.db, orgId);
    return (await listPlans(this.deps.db, account.plan_id)).map(toPlan);
  }

  /** Work done when an org is born: its account, on the default (free) plan. */
  async onOrgCreated(trx: Knex.Transaction, orgId: string): Promise<void> {
    await ensureAccount(trx, orgId, this.deps.defaultPlanId);
  }

  private async accountWithPlan(db: Knex | Knex.Transaction, orgId: string): Promise<{ account: AccountRow; plan: PlanRow }> {
    await ensureAccount(db, orgId, this.deps.defaultPlanId);
    const account = (await findAccount(db, orgId))!;
    return { account, plan: (await findPlan(db, account.plan_id))! };
  }

  /** This month's usage: minutes by day and by agent, free minutes left, the balance and the plan. */
  async usage(orgId: string): Promise<Usage> {
    const now = this.deps.clock.now();
    const since = monthStart(now);
    const { account, plan } = await this.accountWithPlan(this.deps.db, orgId);
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
    const { account } = await this.accountWithPlan(this.deps.db, orgId);
    const used = await autoTopUpsSince(this.deps.db, orgId, monthStart(this.deps.clock.now()));
    return {
      object: 'billing_account',
      plan_id: account.plan_id,
      balance_cents: account.balance_cents,
      payments_available: this.deps.provider !== null,
      card: { status: account.card_status },
      auto_topup: {
        enabled: account.auto_topup_enabled,
        amount_cents: account.auto_topup_amount_cents,
        threshold_cents: account.auto_topup_threshold_cents,
        monthly_limit_cents: account.auto_topup_monthly_limit_cents,
        used_this_month_cents: used.cents,
      },
    };
  }

  /**
   * Puts the org on `planId`. An owner may choose a self-serve plan; the operator (`orgs set-plan`,
   * `operator: true`) any plan. 404 for an unknown plan, 403 for one only the operator sets.
   */
  async setPlan(orgId: string, planId: string, caller: AuditCaller, options: { operator?: boolean } = {}): Promise<Usage['plan']> {
    const plan = await findPlan(this.deps.db, planId);
    if (!plan) throw notFound(`No plan ${planId}; GET /v1/plans lists them`);
    if (!plan.self_serve && !options.operator) throw new ApiError('permission', `The ${plan.name} plan is set up by us on request, not chosen here`);
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      if (locked.plan_id === plan.id) return;
      await updateAccount(trx, orgId, { plan_id: plan.id }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.plan_changed', objectType: 'org', objectId: orgId, data: { from: locked.plan_id, to: plan.id }, requestId: caller.requestId });
    });
    return toPlan(plan);
  }

  /** The operator's credit (`orgs credit`): `cents` added to the balance (negative: taken back). */
  async credit(orgId: string, cents: number, caller: AuditCaller, note?: string): Promise<LedgerEntry> {
    if (!Number.isSafeInteger(cents) || cents === 0 || Math.abs(cents) > 100_000_000) throw invalidRequest('cents must be a whole number of cents, not 0, at most 1,000,000 dollars either way');
    return this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      const row = await appendLedger(trx, locked, { kind: 'credit', amount_cents: cents, description: note ?? (cents > 0 ? `Credit of ${dollars(cents)}` : `Correction of ${dollars(cents)}`) }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.credited', objectType: 'org', objectId: orgId, data: { cents, ledger_id: row!.id }, requestId: caller.requestId });
      return toLedgerEntry(row!);
    });
  }

  /** Changes the auto top-up settings; only sent fields change. */
  async updateSettings(orgId: string, settings: AutoTopUpSettings, caller: AuditCaller): Promise<BillingAccount> {
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      if (settings.enabled && !this.deps.provider) throw paymentsNotConfigured();
      if (settings.enabled && locked.card_status === 'none') throw new ApiError('conflict', 'Save a card first (POST /v1/billing/card): auto top-ups charge it', { code: 'no_card' });
      const changes: Partial<AccountRow> = {};
      if (settings.enabled !== undefined) changes.auto_topup_enabled = settings.enabled;
      if (settings.amount_cents !== undefined) changes.auto_topup_amount_cents = settings.amount_cents;
      if (settings.threshold_cents !== undefined) changes.auto_topup_threshold_cents = settings.threshold_cents;
      if (settings.monthly_limit_cents !== undefined) changes.auto_topup_monthly_limit_cents = settings.monthly_limit_cents;
      const amount = changes.auto_topup_amount_cents ?? locked.auto_topup_amount_cents;
      const limit = changes.auto_topup_monthly_limit_cents ?? locked.auto_topup_monthly_limit_cents;
      if (amount > limit) throw invalidRequest(`amount_cents (${amount}) must not be more than monthly_limit_cents (${limit})`, { param: 'amount_cents' });
      if (Object.keys(changes).length === 0) return;
      await updateAccount(trx, orgId, changes, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.settings_updated', objectType: 'org', objectId: orgId, data: { ...settings }, requestId: caller.requestId });
    });
    return this.account(orgId);
  }

  private provider(): PaymentProvider {
    if (!this.deps.provider) throw paymentsNotConfigured();
    return this.deps.provider;
  }

  /** The org's customer at the provider, made on first use. */
  private async customerOf(orgId: string): Promise<string> {
    const { account } = await this.accountWithPlan(this.deps.db, orgId);
    if (account.provider_customer_id) return account.provider_customer_id;
    // The provider's idempotency key makes two concurrent first uses one customer.
    const customerId = await this.provider().createCustomer(orgId);
    await this.deps.db('billing_accounts').where({ org_id: orgId }).whereNull('provider_customer_id').update({ provider_customer_id: customerId });
    return customerId;
  }

  /** Starts saving (or replacing) a card: a SetupIntent whose client secret the browser confirms; the provider's webhook says when the card is saved. */
  async startCardSetup(orgId: string, caller: AuditCaller): Promise<{ object: 'card_setup'; setup_intent_id: string; client_secret: string }> {
    const provider = this.provider();
    const customerId = await this.customerOf(orgId);
    const intent = await provider.createSetupIntent(customerId, orgId);
    await recordAudit(this.deps.db, { orgId, actor: caller.actor, action: 'billing.card_setup_started', objectType: 'org', objectId: orgId, data: { setup_intent_id: intent.id }, requestId: caller.requestId });
    return { object: 'card_setup', setup_intent_id: intent.id, client_secret: intent.clientSecret };
  }

  /** Charges the saved card `cents` now and credits the balance; 402 `card_needs_attention` when it is declined. */
  async topUp(orgId: string, cents: number, caller: AuditCaller, requestId: string): Promise<LedgerEntry> {
    const provider = this.provider();
    const { account } = await this.accountWithPlan(this.deps.db, orgId);
    if (account.card_status === 'none' || !account.payment_method_id || !account.provider_customer_id) {
      throw new ApiError('conflict', 'Save a card first (POST /v1/billing/card)', { code: 'no_card' });
    }
    const outcome = await provider.charge({ customerId: account.provider_customer_id, paymentMethodId: account.payment_method_id, amountCents: cents, orgId, auto: false, idempotencyKey: `top-up-${orgId}-${requestId}` });
    if (!outcome.ok) {
      await this.markCardNeedsAttention(orgId, outcome.reason, caller);
      throw new ApiError('payment_required', `The card was declined (${outcome.reason}); update the card (POST /v1/billing/card) and try again`, { code: 'card_needs_attention' });
    }
    const entry = await this.creditPayment(orgId, outcome.paymentId, cents, 'top_up', caller);
    return entry;
  }

  /** A page of the ledger, newest first; `kinds` narrows it (the console's top-ups list). */
  async ledger(orgId: string, kinds: LedgerKind[] | null, page: PageRequest): Promise<Page<LedgerEntry>> {
    await ensureAccount(this.deps.db, orgId, this.deps.defaultPlanId);
    const rows = await listLedger(this.deps.db, orgId, kinds, page);
    return { ...rows, data: rows.data.map(toLedgerEntry) };
  }

  /** Credits a succeeded payment once, however many times it is told (the charge's answer, then its webhook). */
  private async creditPayment(orgId: string, paymentId: string, cents: number, kind: 'top_up' | 'auto_top_up', caller: AuditCaller): Promise<LedgerEntry> {
    return this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      const row = await appendLedger(trx, locked, { kind, amount_cents: cents, payment_id: paymentId, description: `${kind === 'auto_top_up' ? 'Auto top-up' : 'Top-up'} of ${dollars(cents)}` }, this.deps.clock.now());
      if (row) {
        await recordAudit(trx, { orgId, actor: caller.actor, action: kind === 'auto_top_up' ? 'billing.auto_topped_up' : 'billing.topped_up', objectType: 'org', objectId: orgId, data: { cents, payment_id: paymentId, ledger_id: row.id }, requestId: caller.requestId });
        return toLedgerEntry(row);
      }
      return toLedgerEntry((await trx<LedgerRow>('billing_ledger').where({ payment_id: paymentId }).first())!);
    });
  }

  private async markCardNeedsAttention(orgId: string, reason: string, caller: AuditCaller): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      if (locked.card_status === 'needs_attention') return;
      await updateAccount(trx, orgId, { card_status: 'needs_attention', card_version: locked.card_version + 1 }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.card_needs_attention', objectType: 'org', objectId: orgId, data: { reason }, requestId: caller.requestId });
    });
  }

  /**
   * An auto top-up, when it is on, the card is fine, the balance is below the threshold (or
   * cannot cover `atLeastCents`) and this month's limit allows it. Concurrent calls make one
   * payment: the provider's idempotency key is the org, the month, the top-up's number in it
   * and the card's version.
   */
  async autoTopUpIfDue(orgId: string, atLeastCents = 0): Promise<'topped_up' | 'not_due' | 'limit_reached' | 'declined'> {
    const provider = this.deps.provider;
    const account = await findAccount(this.deps.db, orgId);
    if (!provider || !account?.auto_topup_enabled || account.card_status !== 'ok' || !account.payment_method_id || !account.provider_customer_id) return 'not_due';
    // A minute's price at least, whatever the threshold: the next minute must be covered.
    const price = (await findPlan(this.deps.db, account.plan_id))?.price_per_minute_cents ?? 0;
    if (account.balance_cents >= Math.max(account.auto_topup_threshold_cents, atLeastCents, price)) return 'not_due';
    const now = this.deps.clock.now();
    const month = monthStart(now);
    const used = await autoTopUpsSince(this.deps.db, orgId, month);
    if (used.cents + account.auto_topup_amount_cents > account.auto_topup_monthly_limit_cents) return 'limit_reached';
    const cents = account.auto_topup_amount_cents;
    const outcome = await provider.charge({
      customerId: account.provider_customer_id,
      paymentMethodId: account.payment_method_id,
      amountCents: cents,
      orgId,
      auto: true,
      // The card's version too: after a decline and a card update, the next try is a new payment, not the declined one replayed.
      idempotencyKey: `auto-top-up-${orgId}-${month.toISOString().slice(0, 7)}-${used.count + 1}-card${account.card_version}`,
    });
    if (!outcome.ok) {
      this.deps.logger.warn({ org_id: orgId, reason: outcome.reason }, 'auto top-up declined');
      await this.markCardNeedsAttention(orgId, outcome.reason, { orgId, actor: null });
      return 'declined';
    }
    await this.creditPayment(orgId, outcome.paymentId, cents, 'auto_top_up', { orgId, actor: null });
    return 'topped_up';
  }

  /**
   * Before a task's start transaction: when the next minute is not covered, an auto top-up is
   * tried (outside any lock: it waits on the provider). The start itself decides under the lock.
   */
  async prepareStart(orgId: string): Promise<void> {
    const { account, plan } = await this.accountWithPlan(this.deps.db, orgId);
    const cost = nextMinuteCost(plan, await freeMinutesUsed(this.deps.db, orgId, monthStart(this.deps.clock.now())));
    if (covers(account.balance_cents, cost) || cost.cents === null) return;
    await this.autoTopUpIfDue(orgId, cost.cents);
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

  /** A webhook request from the provider: verified on its raw body, handled once per event id. 400 when it does not verify. */
  async handleProviderWebhook(rawBody: Buffer, signature: string | undefined): Promise<{ received: true; handled: boolean }> {
    if (!this.deps.provider) throw paymentsNotConfigured();
    let event: ProviderEvent;
    try {
      event = this.deps.provider.verifyWebhook(rawBody, signature);
    } catch (error) {
      throw invalidRequest(`The webhook's signature does not verify: ${(error as Error).message}`);
    }
    const handled = await this.deps.db.transaction((trx) => recordProviderEvent(trx, event.id, event.type));
    if (!handled) return { received: true, handled: false };
    try {
      await this.handleEvent(event);
    } catch (error) {
      // Not handled after all: the provider sends it again (it retries what is not answered 2xx).
      await this.deps.db('billing_provider_events').where({ id: event.id }).delete();
      throw error;
    }
    return { received: true, handled: true };
  }

  private async handleEvent(event: ProviderEvent): Promise<void> {
    const object = event.object;
    const customerId = typeof object.customer === 'string' ? object.customer : null;
    const account = customerId ? await findAccountByCustomer(this.deps.db, customerId) : undefined;
    if (!account) {
      this.deps.logger.info({ event_id: event.id, type: event.type }, 'provider event for no known customer; ignored');
      return;
    }
    const caller = { orgId: account.org_id, actor: null };
    switch (event.type) {
      case 'payment_intent.succeeded': {
        const metadata = (object.metadata ?? {}) as Record<string, string>;
        const cents = Number(object.amount_received ?? object.amount);
        await this.creditPayment(account.org_id, String(object.id), cents, metadata.kind === 'auto_top_up' ? 'auto_top_up' : 'top_up', caller);
        return;
      }
      case 'payment_intent.payment_failed': {
        const error = object.last_payment_error as { message?: string } | null | undefined;
        await this.markCardNeedsAttention(account.org_id, error?.message ?? 'the payment failed', caller);
        return;
      }
      case 'setup_intent.succeeded':
      case 'payment_method.attached': {
        const paymentMethod = event.type === 'payment_method.attached' ? object.id : object.payment_method;
        if (typeof paymentMethod !== 'string') return;
        await this.deps.db.transaction(async (trx) => {
          const locked = await lockAccount(trx, account.org_id, this.deps.defaultPlanId);
          await updateAccount(trx, account.org_id, { card_status: 'ok', payment_method_id: paymentMethod, card_version: locked.card_version + 1 }, this.deps.clock.now());
          await recordAudit(trx, { orgId: account.org_id, actor: null, action: 'billing.card_updated', objectType: 'org', objectId: account.org_id, data: { payment_method_id: paymentMethod, event_id: event.id } });
        });
        return;
      }
      default:
        return;
    }
  }
}
