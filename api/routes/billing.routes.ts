import type { Container } from '../../shared/container';
import type { LedgerKind } from '../../shared/billing/billing.repository';
import { invalidRequest } from '../../shared/errors';
import { conflict, ERRORS, invalidInput, notFound, paymentRequired, permission } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { rawBodyOf } from '../middleware/json-body';
import { ListOf } from '../schemas/common.schemas';
import {
  BillingAccountSchema,
  BillingSettingsBody,
  CardSetupSchema,
  LedgerEntrySchema,
  LedgerQuery,
  PlanChangeBody,
  PlanSchema,
  TopUpBody,
  UsageSchema,
  WebhookReceiptSchema,
} from '../schemas/billing.schemas';

const TAG = 'Billing';

/** Where the payment provider (Stripe) sends its webhooks; its body is kept as it came, for the signature. */
export const PROVIDER_WEBHOOK_PATH = '/billing/stripe/webhook';

const LEDGER_FILTERS: Record<string, LedgerKind[]> = {
  payments: ['credit', 'top_up', 'auto_top_up'],
  minutes: ['task_minute', 'machine_minute'],
};

/** Plans, usage, the billing account and its ledger, payments, and the provider's webhooks (docs/billing.md). */
export function billingRoutes(container: Container): RouteSpec[] {
  const { reads, levers, payments, providerWebhook } = container.billing;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/plans',
      operationId: 'listPlans',
      summary: 'The plans, with their free minutes, price per minute and tasks at once',
      description: 'The plans offered, and the org\'s own plan should it be one set up for it alone, in the order offered. `self_serve` plans an owner may choose with PUT /v1/plan; the others the operator sets up. Any member of the org may call it.',
      tag: TAG,
      auth: 'api_key',
      response: ListOf(PlanSchema),
      errors: [],
      handler: async ({ auth }) => ({ data: await reads.plans(auth.orgId), has_more: false, next_cursor: null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/usage',
      operationId: 'getUsage',
      summary: 'This month\'s minutes by day and by agent, free minutes left, the balance and the plan',
      description:
        'Minutes charged this calendar month (UTC): task minutes (tasks on people\'s computers, each minute from when it begins, as `billed_minutes`) and machine minutes (eval tries on cloud runners), by day and by agent; the free minutes left, cents spent, the balance and the plan. Any member of the org may call it.',
      tag: TAG,
      auth: 'api_key',
      response: UsageSchema,
      errors: [],
      handler: async ({ auth }) => reads.usage(auth.orgId),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/plan',
      operationId: 'changePlan',
      summary: 'Choose the org\'s plan (owner)',
      description:
        'Puts the org on a self-serve plan of GET /v1/plans at once; tasks already running keep running. Needs the owner role: API keys act as admin and get 403 permission, as do plans only the operator sets up. 404 not_found for an unknown plan.',
      tag: TAG,
      auth: 'api_key',
      role: 'owner',
      body: PlanChangeBody,
      response: PlanSchema,
      errors: [permission(undefined, 'The Enterprise plan is set up by us on request, not chosen here'), notFound('No plan team-plus; GET /v1/plans lists them')],
      handler: async ({ auth, body, requestId }) => levers.setPlan(auth.orgId, body.plan_id, { orgId: auth.orgId, actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/billing',
      operationId: 'getBillingAccount',
      summary: 'The billing account: plan, balance, card and auto top-up',
      description: 'The org\'s plan, balance, whether a card is saved or needs attention, and the auto top-up settings with what they used this month. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: BillingAccountSchema,
      errors: [],
      handler: async ({ auth }) => reads.account(auth.orgId),
    }),
    defineRoute({
      method: 'put',
      path: '/v1/billing/settings',
      operationId: 'updateBillingSettings',
      summary: 'Turn auto top-up on or off; set its amount, threshold and monthly limit',
      description:
        'Only sent fields change. With auto top-up on, the saved card is charged `amount_cents` off-session whenever the balance falls below `threshold_cents` (or cannot cover a minute), at most `monthly_limit_cents` a month. Turning it on needs a saved card (409 no_card); 400 when the amount is over the limit; 503 payments_unavailable without a payment provider. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: BillingSettingsBody,
      response: BillingAccountSchema,
      errors: [invalidInput('amount_cents (20000) must not be more than monthly_limit_cents (10000)'), conflict('no_card', 'Save a card first (POST /v1/billing/card): auto top-ups charge it'), ERRORS.paymentsOff],
      handler: async ({ auth, body, requestId }) => levers.updateSettings(auth.orgId, body.auto_topup, { orgId: auth.orgId, actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/billing/card',
      operationId: 'startCardSetup',
      summary: 'Save or replace the card: a SetupIntent\'s client secret for the browser',
      description:
        'Makes a SetupIntent at the payment provider for charging the card later off-session, and returns its client secret for the provider\'s card form in the browser. The card counts as saved (and a card that needed attention as fine again) when the provider\'s webhook says so. 503 payments_unavailable without a payment provider. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: CardSetupSchema,
      errors: [ERRORS.paymentsOff],
      handler: async ({ auth, requestId }) => payments.startCardSetup(auth.orgId, { orgId: auth.orgId, actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/billing/top_ups',
      operationId: 'topUp',
      summary: 'Add funds now from the saved card',
      description:
        'Charges the saved card `amount_cents` off-session and credits the balance; returns the ledger entry. The same X-Request-Id is the same payment (a retry does not charge twice). 402 card_needs_attention when the card is declined (it is marked so); 409 no_card without a saved card; 503 payments_unavailable without a payment provider. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: TopUpBody,
      response: LedgerEntrySchema,
      errors: [paymentRequired('card_needs_attention', 'The card was declined (insufficient funds); update the card (POST /v1/billing/card) and try again'), ERRORS.noCard, ERRORS.paymentsOff],
      handler: async ({ auth, body, requestId }) => payments.topUp(auth.orgId, body.amount_cents, { orgId: auth.orgId, actor: auth.actor, requestId }, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/billing/ledger',
      operationId: 'listLedger',
      summary: 'The ledger: credits, top-ups and charged minutes, newest first',
      description:
        'Every entry that moved the balance or used a minute, newest first, a page at a time; `kind=payments` lists credits and top-ups (the console\'s top-ups list), `kind=minutes` the charges. Each entry carries the balance after it. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      query: LedgerQuery,
      response: ListOf(LedgerEntrySchema),
      errors: [],
      handler: async ({ auth, query }) => {
        const kinds = query.kind ? (LEDGER_FILTERS[query.kind] ?? [query.kind as LedgerKind]) : null;
        return reads.ledger(auth.orgId, kinds, { limit: query.limit ?? 20, cursor: query.cursor ?? null });
      },
    }),
    defineRoute({
      method: 'post',
      path: PROVIDER_WEBHOOK_PATH,
      operationId: 'receivePaymentProviderWebhook',
      summary: 'The payment provider\'s webhooks (Stripe), verified by their signature',
      description:
        'Where Stripe sends events (configure this URL and put its signing secret in STRIPE_WEBHOOK_SECRET). The `Stripe-Signature` header is verified on the raw body with Stripe\'s own scheme; a bad or missing one is a 400. On a server without a payment provider (STRIPE_SECRET_KEY unset) every webhook with a body is 503 `payments_unavailable`. Handled once per event id: `payment_intent.succeeded` credits a top-up, `payment_intent.payment_failed` marks the card as needing attention, `setup_intent.succeeded` and `payment_method.attached` save the card (fine again). No API key.',
      tag: TAG,
      auth: 'none',
      response: WebhookReceiptSchema,
      errors: [invalidInput('The webhook has no JSON body'), invalidInput("The webhook's signature does not verify: No signatures found matching the expected signature for payload"), ERRORS.paymentsOff],
      handler: async ({ ctx }) => {
        const raw = rawBodyOf(ctx);
        if (!raw) throw invalidRequest('The webhook has no JSON body');
        return providerWebhook.receive(raw, ctx.get('stripe-signature') || undefined);
      },
    }),
  ];
}

