import Stripe from 'stripe';
import type { PaymentsConfig } from '../config';
import { ApiError } from '../errors';

/**
 * The payment provider, as billing uses it: Stripe through its own SDK (customers, SetupIntents
 * to save a card, off-session PaymentIntents to charge it, signed webhooks). `STRIPE_API_BASE`
 * points the SDK at a local stand-in in tests.
 */

/** A provider's webhook event as billing reads it (the fields it uses of Stripe's Event). */
export interface ProviderEvent {
  id: string;
  type: string;
  object: Record<string, unknown>;
}

/** How a charge of the saved card went. */
export type ChargeOutcome = { ok: true; paymentId: string } | { ok: false; paymentId: string | null; reason: string };

export interface PaymentProvider {
  createCustomer(orgId: string): Promise<string>;
  /** A SetupIntent for saving a card off-session; the browser confirms it with `client_secret`. */
  createSetupIntent(customerId: string, orgId: string): Promise<{ id: string; clientSecret: string }>;
  /** Charges the saved card now, off-session; `idempotencyKey` makes a retry the same payment. */
  charge(input: { customerId: string; paymentMethodId: string; amountCents: number; orgId: string; auto: boolean; idempotencyKey: string }): Promise<ChargeOutcome>;
  /** The event of a webhook request, verified with the provider's signature scheme on the raw body; throws when it does not verify. */
  verifyWebhook(rawBody: Buffer, signature: string | undefined): ProviderEvent;
}

/** 503 for a paid feature on an installation without a payment provider. */
export function paymentsNotConfigured(): ApiError {
  return new ApiError('server_error', 'Payments are not set up on this server (STRIPE_SECRET_KEY is unset); the free plan works without them', { status: 503, code: 'payments_unavailable' });
}

export function stripeProvider(config: PaymentsConfig): PaymentProvider {
  const stripe = new Stripe(config.secretKey, {
    maxNetworkRetries: 1,
    timeout: 20_000,
    telemetry: false,
    ...(config.apiBase ? { host: config.apiBase.host, port: config.apiBase.port, protocol: config.apiBase.protocol } : {}),
  });
  return {
    async createCustomer(orgId) {
      const customer = await stripe.customers.create({ metadata: { org_id: orgId } }, { idempotencyKey: `customer-${orgId}` });
      return customer.id;
    },
    async createSetupIntent(customerId, orgId) {
      const intent = await stripe.setupIntents.create({ customer: customerId, usage: 'off_session', metadata: { org_id: orgId } });
      if (!intent.client_secret) throw new Error(`the payment provider returned SetupIntent ${intent.id} without a client secret`);
      return { id: intent.id, clientSecret: intent.client_secret };
    },
    async charge(input) {
      try {
        const intent = await stripe.paymentIntents.create(
          {
            amount: input.amountCents,
            currency: 'usd',
            customer: input.customerId,
            payment_method: input.paymentMethodId,
            off_session: true,
            confirm: true,
            description: input.auto ? 'Deskhand auto top-up' : 'Deskhand top-up',
            metadata: { org_id: input.orgId, kind: input.auto ? 'auto_top_up' : 'top_up' },
          },
          { idempotencyKey: input.idempotencyKey },
        );
        if (intent.status === 'succeeded') return { ok: true, paymentId: intent.id };
        return { ok: false, paymentId: intent.id, reason: `the payment is ${intent.status.replace(/_/g, ' ')}` };
      } catch (error) {
        if (error instanceof Stripe.errors.StripeCardError) {
          const intent = (error.raw as { payment_intent?: { id?: string } } | undefined)?.payment_intent;
          return { ok: false, paymentId: intent?.id ?? null, reason: error.message };
        }
        throw error;
      }
    },
    verifyWebhook(rawBody, signature) {
      if (!config.webhookSecret) throw new Error('STRIPE_WEBHOOK_SECRET is unset: provider webhooks cannot be verified');
      if (!signature) throw new Error('No Stripe-Signature header');
      const event = stripe.webhooks.constructEvent(rawBody, signature, config.webhookSecret);
      return { id: event.id, type: event.type, object: event.data.object as unknown as Record<string, unknown> };
    },
  };
}
