import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, invalidRequest, notFound } from '../errors';
import { appendLedger, ensureAccount, findPlan, lockAccount, updateAccount, type AccountRow } from './billing.repository';
import { dollars } from './billing-rules';
import { paymentsNotConfigured } from './payment-provider';
import { toLedgerEntry, toPlan, type AutoTopUpSettings, type BillingAccount, type BillingCaller, type LedgerEntry, type Plan } from './billing-objects';
import type { BillingReadsService } from './billing-reads.service';

export interface BillingLeversDeps {
  db: Knex;
  clock: Clock;
  /** Whether a payment provider is set up: auto top-up cannot be turned on without one. */
  paymentsAvailable: boolean;
  /** The plan a new org starts on (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
  /** The account as it reads after a change of its settings. */
  reads: Pick<BillingReadsService, 'account'>;
}

/**
 * What an owner or the operator changes of an org's billing: its plan, a credit, the auto top-up
 * settings, and the account a new org is born with. Each change writes its audit row in its own
 * transaction, under the account's row lock.
 */
export class BillingLeversService {
  constructor(private readonly deps: BillingLeversDeps) {}

  /** Work done when an org is born (`OrgService.onCreated`): its account, on the default plan. */
  async onOrgCreated(trx: Knex.Transaction, orgId: string): Promise<void> {
    await ensureAccount(trx, orgId, this.deps.defaultPlanId);
  }

  /**
   * Puts the org on `planId`. An owner may choose a self-serve plan; the operator (`orgs set-plan`,
   * `operator: true`) any plan. 404 for an unknown plan, 403 for one only the operator sets.
   */
  async setPlan(orgId: string, planId: string, caller: BillingCaller, options: { operator?: boolean } = {}): Promise<Plan> {
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
  async credit(orgId: string, cents: number, caller: BillingCaller, note?: string): Promise<LedgerEntry> {
    if (!Number.isSafeInteger(cents) || cents === 0 || Math.abs(cents) > 100_000_000) throw invalidRequest('cents must be a whole number of cents, not 0, at most 1,000,000 dollars either way');
    return this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      const row = await appendLedger(trx, locked, { kind: 'credit', amount_cents: cents, description: note ?? (cents > 0 ? `Credit of ${dollars(cents)}` : `Correction of ${dollars(cents)}`) }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.credited', objectType: 'org', objectId: orgId, data: { cents, ledger_id: row!.id }, requestId: caller.requestId });
      return toLedgerEntry(row!);
    });
  }

  /** Changes the auto top-up settings; only sent fields change. */
  async updateSettings(orgId: string, settings: AutoTopUpSettings, caller: BillingCaller): Promise<BillingAccount> {
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      if (settings.enabled && !this.deps.paymentsAvailable) throw paymentsNotConfigured();
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
    return this.deps.reads.account(orgId);
  }
}
