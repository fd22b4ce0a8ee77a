import type { Knex } from '../db/knex';
import type { Logger } from '../logger';
import { invalidRequest } from '../errors';
import { findAccountByCustomer, forgetProviderEvent, recordProviderEvent } from './billing.repository';
import { paymentsNotConfigured, type PaymentProvider, type ProviderEvent } from './payment-provider';
import type { PaymentsService } from './payments.service';

export interface ProviderWebhookDeps {
  db: Knex;
  /** Null without STRIPE_SECRET_KEY: every webhook answers 503 `payments_unavailable`. */
  provider: PaymentProvider | null;
  logger: Logger;
  /** What an event changes: a payment credited, a card marked or saved. */
  payments: Pick<PaymentsService, 'creditPayment' | 'markCardNeedsAttention' | 'saveCard'>;
}

/**
 * The payment provider's webhooks (Stripe, docs/billing.md): each request verified on its raw
 * body, each event handled once per id, and what it says handed to the payments service.
 */
export class ProviderWebhookService {
  constructor(private readonly deps: ProviderWebhookDeps) {}

  /** A webhook request from the provider: verified on its raw body, handled once per event id. 400 when it does not verify. */
  async receive(rawBody: Buffer, signature: string | undefined): Promise<{ received: true; handled: boolean }> {
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
      await this.handle(event);
    } catch (error) {
      // Not handled after all: the provider sends it again (it retries what is not answered 2xx).
      await forgetProviderEvent(this.deps.db, event.id);
      throw error;
    }
    return { received: true, handled: true };
  }

  private async handle(event: ProviderEvent): Promise<void> {
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
        await this.deps.payments.creditPayment(account.org_id, String(object.id), cents, metadata.kind === 'auto_top_up' ? 'auto_top_up' : 'top_up', caller);
        return;
      }
      case 'payment_intent.payment_failed': {
        const error = object.last_payment_error as { message?: string } | null | undefined;
        await this.deps.payments.markCardNeedsAttention(account.org_id, error?.message ?? 'the payment failed', caller);
        return;
      }
      case 'setup_intent.succeeded':
      case 'payment_method.attached': {
        const paymentMethod = event.type === 'payment_method.attached' ? object.id : object.payment_method;
        if (typeof paymentMethod !== 'string') return;
        await this.deps.payments.saveCard(account.org_id, paymentMethod, event.id);
        return;
      }
      default:
        return;
    }
  }
}
