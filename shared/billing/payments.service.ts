import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { recordAudit } from '../audit/audit.repository';
import { ApiError } from '../errors';
import { appendLedger, autoTopUpsSince, findAccount, findLedgerEntryOfPayment, findPlan, lockAccount, monthStart, saveProviderCustomerId, updateAccount } from './billing.repository';
import { dollars } from './billing-rules';
import { paymentsNotConfigured, type PaymentProvider } from './payment-provider';
import { toLedgerEntry, type BillingCaller, type CardSetup, type LedgerEntry } from './billing-objects';
import type { BillingReadsService } from './billing-reads.service';

export interface PaymentsDeps {
  db: Knex;
  clock: Clock;
  /** Null without STRIPE_SECRET_KEY: paid features answer 503 `payments_unavailable`, the free plan works. */
  provider: PaymentProvider | null;
  logger: Logger;
  /** The plan an account is opened on when a payment finds none (DESKHAND_DEFAULT_PLAN). */
  defaultPlanId: string;
  reads: Pick<BillingReadsService, 'accountWithPlan'>;
}

/** What an auto top-up did: charged and credited, nothing to do, over this month's limit, or declined (the card is marked). */
export type AutoTopUpOutcome = 'topped_up' | 'not_due' | 'limit_reached' | 'declined';

/**
 * Money from the payment provider (Stripe, docs/billing.md): the org's customer there, saving a
 * card, top-ups and auto top-ups, and what the provider's answers and webhooks change: a payment
 * credited once, a card marked as needing attention or saved. The balance only moves in
 * `appendLedger`, under the account's row lock, with its ledger row.
 */
export class PaymentsService {
  constructor(private readonly deps: PaymentsDeps) {}

  private provider(): PaymentProvider {
    if (!this.deps.provider) throw paymentsNotConfigured();
    return this.deps.provider;
  }

  /** The org's customer at the provider, made on first use. */
  private async customerOf(orgId: string): Promise<string> {
    const { account } = await this.deps.reads.accountWithPlan(orgId);
    if (account.provider_customer_id) return account.provider_customer_id;
    // The provider's idempotency key makes two concurrent first uses one customer.
    const customerId = await this.provider().createCustomer(orgId);
    await saveProviderCustomerId(this.deps.db, orgId, customerId);
    return customerId;
  }

  /** Starts saving (or replacing) a card: a SetupIntent whose client secret the browser confirms; the provider's webhook says when the card is saved. */
  async startCardSetup(orgId: string, caller: BillingCaller): Promise<CardSetup> {
    const provider = this.provider();
    const customerId = await this.customerOf(orgId);
    const intent = await provider.createSetupIntent(customerId, orgId);
    await recordAudit(this.deps.db, { orgId, actor: caller.actor, action: 'billing.card_setup_started', objectType: 'org', objectId: orgId, data: { setup_intent_id: intent.id }, requestId: caller.requestId });
    return { object: 'card_setup', setup_intent_id: intent.id, client_secret: intent.clientSecret };
  }

  /** Charges the saved card `cents` now and credits the balance; 402 `card_needs_attention` when it is declined. */
  async topUp(orgId: string, cents: number, caller: BillingCaller, requestId: string): Promise<LedgerEntry> {
    const provider = this.provider();
    const { account } = await this.deps.reads.accountWithPlan(orgId);
    if (account.card_status === 'none' || !account.payment_method_id || !account.provider_customer_id) {
      throw new ApiError('conflict', 'Save a card first (POST /v1/billing/card)', { code: 'no_card' });
    }
    const outcome = await provider.charge({ customerId: account.provider_customer_id, paymentMethodId: account.payment_method_id, amountCents: cents, orgId, auto: false, idempotencyKey: `top-up-${orgId}-${requestId}` });
    if (!outcome.ok) {
      await this.markCardNeedsAttention(orgId, outcome.reason, caller);
      throw new ApiError('payment_required', `The card was declined (${outcome.reason}); update the card (POST /v1/billing/card) and try again`, { code: 'card_needs_attention' });
    }
    return this.creditPayment(orgId, outcome.paymentId, cents, 'top_up', caller);
  }

  /**
   * An auto top-up, when it is on, the card is fine, the balance is below the threshold (or
   * cannot cover `atLeastCents`) and this month's limit allows it. Concurrent calls make one
   * payment: the provider's idempotency key is the org, the month, the top-up's number in it
   * and the card's version.
   */
  async autoTopUpIfDue(orgId: string, atLeastCents = 0): Promise<AutoTopUpOutcome> {
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

  /** Credits a succeeded payment once, however many times it is told (the charge's answer, then its webhook); returns its ledger entry. */
  async creditPayment(orgId: string, paymentId: string, cents: number, kind: 'top_up' | 'auto_top_up', caller: BillingCaller): Promise<LedgerEntry> {
    return this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      const row = await appendLedger(trx, locked, { kind, amount_cents: cents, payment_id: paymentId, description: `${kind === 'auto_top_up' ? 'Auto top-up' : 'Top-up'} of ${dollars(cents)}` }, this.deps.clock.now());
      if (row) {
        await recordAudit(trx, { orgId, actor: caller.actor, action: kind === 'auto_top_up' ? 'billing.auto_topped_up' : 'billing.topped_up', objectType: 'org', objectId: orgId, data: { cents, payment_id: paymentId, ledger_id: row.id }, requestId: caller.requestId });
        return toLedgerEntry(row);
      }
      return toLedgerEntry((await findLedgerEntryOfPayment(trx, paymentId))!);
    });
  }

  /** Marks the org's card as needing attention (a payment from it failed for `reason`); a start short of money then answers 402 `card_needs_attention`. */
  async markCardNeedsAttention(orgId: string, reason: string, caller: BillingCaller): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      if (locked.card_status === 'needs_attention') return;
      await updateAccount(trx, orgId, { card_status: 'needs_attention', card_version: locked.card_version + 1 }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'billing.card_needs_attention', objectType: 'org', objectId: orgId, data: { reason }, requestId: caller.requestId });
    });
  }

  /** Saves the card the provider says was set up (`paymentMethodId`, told by its event `eventId`): the card is fine again, with a new version. */
  async saveCard(orgId: string, paymentMethodId: string, eventId: string): Promise<void> {
    await this.deps.db.transaction(async (trx) => {
      const locked = await lockAccount(trx, orgId, this.deps.defaultPlanId);
      await updateAccount(trx, orgId, { card_status: 'ok', payment_method_id: paymentMethodId, card_version: locked.card_version + 1 }, this.deps.clock.now());
      await recordAudit(trx, { orgId, actor: null, action: 'billing.card_updated', objectType: 'org', objectId: orgId, data: { payment_method_id: paymentMethodId, event_id: eventId } });
    });
  }
}
