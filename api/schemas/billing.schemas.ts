import { Type } from '@sinclair/typebox';
import { DateTime, PageQuery } from './common.schemas';

/** Schemas of plans, usage, the billing account, its ledger and payments (docs/billing.md). */

const PLAN_EXAMPLE = {
  object: 'plan',
  plan_id: 'pay_as_you_go',
  name: 'Pay as you go',
  description: 'Free minutes each month, then each minute from the balance; a card tops it up.',
  free_minutes: 60,
  price_per_minute_cents: 10,
  concurrent_tasks: 5,
  self_serve: true,
};

export const PlanSchema = Type.Object(
  {
    object: Type.Literal('plan'),
    plan_id: Type.String({ description: 'free, pay_as_you_go, enterprise, or one the operator added.' }),
    name: Type.String(),
    description: Type.String(),
    free_minutes: Type.Integer({ minimum: 0, description: 'Task and machine minutes free each calendar month (UTC).' }),
    price_per_minute_cents: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'What a minute past the free ones costs, from the balance; null: the plan has no paid minutes (a task stops when the free minutes run out).' }),
    concurrent_tasks: Type.Integer({ minimum: 1, description: 'Tasks of the org queued or running at once on people\'s computers; a start past it answers 429 concurrency_limit.' }),
    self_serve: Type.Boolean({ description: 'An owner may choose it (PUT /v1/plan); otherwise the operator sets it up.' }),
  },
  { title: 'Plan', examples: [PLAN_EXAMPLE] },
);

export const UsageSchema = Type.Object(
  {
    object: Type.Literal('usage'),
    month: Type.String({ description: 'The calendar month (UTC) counted, `YYYY-MM`.' }),
    period_start: DateTime,
    period_end: Type.String({ format: 'date-time', description: 'When the free minutes and the auto top-up limit start again.' }),
    plan: PlanSchema,
    balance_cents: Type.Integer({ description: 'The balance in cents (may dip below 0 by the last minutes of a task that ended).' }),
    minutes_used: Type.Integer({ minimum: 0, description: 'Minutes charged this month, free ones included: task minutes plus machine minutes.' }),
    task_minutes: Type.Integer({ minimum: 0 }),
    machine_minutes: Type.Integer({ minimum: 0, description: 'Minutes of eval tries on cloud runners.' }),
    free_minutes_used: Type.Integer({ minimum: 0 }),
    free_minutes_left: Type.Integer({ minimum: 0 }),
    spent_cents: Type.Integer({ description: 'Cents the month\'s minutes cost.' }),
    running_tasks: Type.Integer({ minimum: 0, description: 'Tasks queued or running now (counted against concurrent_tasks).' }),
    by_day: Type.Array(Type.Object({ date: Type.String({ description: '`YYYY-MM-DD` (UTC)' }), minutes: Type.Integer({ minimum: 0 }) }), { description: 'Days with minutes, oldest first.' }),
    by_agent: Type.Array(Type.Object({ agent_id: Type.String(), minutes: Type.Integer({ minimum: 0 }) }), { description: 'Task minutes by agent.' }),
  },
  {
    title: 'Usage',
    examples: [
      {
        object: 'usage',
        month: '2026-03',
        period_start: '2026-03-01T00:00:00.000Z',
        period_end: '2026-04-01T00:00:00.000Z',
        plan: PLAN_EXAMPLE,
        balance_cents: 1830,
        minutes_used: 72,
        task_minutes: 72,
        machine_minutes: 0,
        free_minutes_used: 60,
        free_minutes_left: 0,
        spent_cents: 120,
        running_tasks: 1,
        by_day: [{ date: '2026-03-01', minutes: 40 }, { date: '2026-03-02', minutes: 32 }],
        by_agent: [{ agent_id: 'support', minutes: 72 }],
      },
    ],
  },
);

const ACCOUNT_EXAMPLE = {
  object: 'billing_account',
  plan_id: 'pay_as_you_go',
  balance_cents: 1830,
  payments_available: true,
  card: { status: 'ok' },
  auto_topup: { enabled: true, amount_cents: 2000, threshold_cents: 500, monthly_limit_cents: 10000, used_this_month_cents: 2000 },
};

export const BillingAccountSchema = Type.Object(
  {
    object: Type.Literal('billing_account'),
    plan_id: Type.String(),
    balance_cents: Type.Integer(),
    payments_available: Type.Boolean({ description: 'False when this server has no payment provider set up: cards, top-ups and auto top-ups answer 503 payments_unavailable.' }),
    card: Type.Object({
      status: Type.Union([Type.Literal('none'), Type.Literal('ok'), Type.Literal('needs_attention')], { description: 'none: no card saved; needs_attention: a payment failed, starts answer 402 card_needs_attention while the balance is short, until the card is updated.' }),
    }),
    auto_topup: Type.Object({
      enabled: Type.Boolean(),
      amount_cents: Type.Integer({ minimum: 0, description: 'What one auto top-up charges.' }),
      threshold_cents: Type.Integer({ minimum: 0, description: 'An auto top-up is made when the balance falls below this (or below a minute\'s price).' }),
      monthly_limit_cents: Type.Integer({ minimum: 0, description: 'At most this much in auto top-ups per calendar month; past it starts answer 402 auto_topup_limit_reached.' }),
      used_this_month_cents: Type.Integer({ minimum: 0 }),
    }),
  },
  { title: 'BillingAccount', examples: [ACCOUNT_EXAMPLE] },
);

export const BillingSettingsBody = Type.Object(
  {
    auto_topup: Type.Object(
      {
        enabled: Type.Optional(Type.Boolean({ description: 'Needs a saved card.' })),
        amount_cents: Type.Optional(Type.Integer({ minimum: 500, maximum: 100_000, description: 'From $5 to $1,000.' })),
        threshold_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: 100_000 })),
        monthly_limit_cents: Type.Optional(Type.Integer({ minimum: 0, maximum: 10_000_000 })),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false, examples: [{ auto_topup: { enabled: true, amount_cents: 2000, threshold_cents: 500, monthly_limit_cents: 10000 } }] },
);

export const PlanChangeBody = Type.Object(
  { plan_id: Type.String({ minLength: 1, maxLength: 40, description: 'A self-serve plan of GET /v1/plans.' }) },
  { additionalProperties: false, examples: [{ plan_id: 'pay_as_you_go' }] },
);

export const TopUpBody = Type.Object(
  { amount_cents: Type.Integer({ minimum: 500, maximum: 100_000, description: 'From $5 to $1,000, charged to the saved card now.' }) },
  { additionalProperties: false, examples: [{ amount_cents: 2000 }] },
);

export const CardSetupSchema = Type.Object(
  {
    object: Type.Literal('card_setup'),
    setup_intent_id: Type.String({ description: 'The payment provider\'s SetupIntent (`seti_…`).' }),
    client_secret: Type.String({ description: 'Hand it to the provider\'s card form in the browser (Stripe.js `confirmCardSetup`); the card is saved when the provider tells us (its webhook).' }),
  },
  { title: 'CardSetup', examples: [{ object: 'card_setup', setup_intent_id: 'seti_1Qx2y3z4', client_secret: 'seti_1Qx2y3z4_secret_AbCdEf' }] },
);

const LEDGER_KINDS = ['credit', 'top_up', 'auto_top_up', 'task_minute', 'machine_minute'] as const;

export const LedgerEntrySchema = Type.Object(
  {
    object: Type.Literal('ledger_entry'),
    id: Type.String({ description: '`led_<id>`' }),
    kind: Type.Union(LEDGER_KINDS.map((kind) => Type.Literal(kind)), { description: 'credit (the operator), top_up, auto_top_up (the card), task_minute, machine_minute (charges).' }),
    amount_cents: Type.Integer({ description: 'Positive: money in; negative: a charge; 0: a free minute.' }),
    balance_after_cents: Type.Integer({ description: 'The balance once this entry was written.' }),
    task_id: Type.Union([Type.String(), Type.Null()]),
    try_id: Type.Union([Type.String(), Type.Null()]),
    minute: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Which minute of the task or try (from 1).' }),
    free: Type.Boolean({ description: 'A free minute of the plan.' }),
    payment_id: Type.Union([Type.String(), Type.Null()], { description: 'The provider\'s payment (`pi_…`) of a top-up.' }),
    description: Type.String(),
    created_at: DateTime,
  },
  {
    title: 'LedgerEntry',
    examples: [
      { object: 'ledger_entry', id: 'led_4k9x2m7q1w8c3n5v6b0e', kind: 'top_up', amount_cents: 2000, balance_after_cents: 2030, task_id: null, try_id: null, minute: null, free: false, payment_id: 'pi_3Qx2y3z4', description: 'Top-up of $20.00', created_at: '2026-03-02T09:14:05.000Z' },
    ],
  },
);

export const LedgerQuery = Type.Object(
  {
    ...PageQuery,
    kind: Type.Optional(Type.Union([Type.Literal('payments'), Type.Literal('minutes'), ...LEDGER_KINDS.map((kind) => Type.Literal(kind))], { description: 'payments: credits and top-ups (the console\'s top-ups list); minutes: charges; or one kind.' })),
  },
  { additionalProperties: false },
);

export const WebhookReceiptSchema = Type.Object(
  { received: Type.Literal(true), handled: Type.Boolean({ description: 'False for an event already handled (a redelivery): nothing changed.' }) },
  { title: 'ProviderWebhookReceipt', examples: [{ received: true, handled: true }] },
);
