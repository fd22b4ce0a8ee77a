/** The spec-style objects billing answers with (api/schemas/billing.schemas.ts), and their mappers. */
import type { Caller } from '../audit/actor';
import type { AccountRow, LedgerKind, LedgerRow, PlanRow } from './billing.repository';

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

export interface CardSetup {
  object: 'card_setup';
  setup_intent_id: string;
  client_secret: string;
}

/** The auto top-up settings an owner may change (PUT /v1/billing/settings); only sent fields change. */
export interface AutoTopUpSettings {
  enabled?: boolean;
  amount_cents?: number;
  threshold_cents?: number;
  monthly_limit_cents?: number;
}

/** Who a billing change is made for and by, with the HTTP request's id for its audit row. */
export type BillingCaller = Caller & { requestId?: string | null };

/** A plan row as the API shows it. */
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

/** A ledger row as the API shows it. */
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

/** An account row as the API shows it, with whether payments are set up and the auto top-ups' cents this month. */
export function toBillingAccount(row: AccountRow, paymentsAvailable: boolean, autoTopUpsThisMonthCents: number): BillingAccount {
  return {
    object: 'billing_account',
    plan_id: row.plan_id,
    balance_cents: row.balance_cents,
    payments_available: paymentsAvailable,
    card: { status: row.card_status },
    auto_topup: {
      enabled: row.auto_topup_enabled,
      amount_cents: row.auto_topup_amount_cents,
      threshold_cents: row.auto_topup_threshold_cents,
      monthly_limit_cents: row.auto_topup_monthly_limit_cents,
      used_this_month_cents: autoTopUpsThisMonthCents,
    },
  };
}
