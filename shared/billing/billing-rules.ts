import { ApiError } from '../errors';
import type { AccountRow, PlanRow } from './billing.repository';

/**
 * Billing's rules as pure functions (docs/billing.md): what the next minute of a task costs, and
 * whether a task may start. Their order:
 *
 * 1. A minute is free while the month's free minutes of the plan last.
 * 2. Then it costs the plan's price from the balance; a plan without a price (free) has no paid minutes.
 * 3. A start is refused (402) when the next minute is not covered; the code says what to do:
 *    a card that needs attention first, then an auto top-up held back by its monthly limit,
 *    else the balance.
 */

export type MinuteCost = { free: true; cents: 0 } | { free: false; cents: number } | { free: false; cents: null };

/** What the next minute costs: free, `cents` from the balance, or `cents: null` (no paid minutes on this plan). */
export function nextMinuteCost(plan: Pick<PlanRow, 'free_minutes' | 'price_per_minute_cents'>, freeMinutesUsed: number): MinuteCost {
  if (freeMinutesUsed < plan.free_minutes) return { free: true, cents: 0 };
  return { free: false, cents: plan.price_per_minute_cents };
}

/** Whether the balance covers a minute of `cost`. */
export function covers(balanceCents: number, cost: MinuteCost): boolean {
  return cost.free || (cost.cents !== null && balanceCents >= cost.cents);
}

export const dollars = (cents: number) => `${cents < 0 ? '-' : ''}$${(Math.abs(cents) / 100).toFixed(2)}`;

/** The first day of the month after `now` (UTC), when free minutes and the auto top-up limit start again. */
export function nextMonthStart(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
}

export interface StartState {
  plan: PlanRow;
  account: AccountRow;
  freeMinutesUsed: number;
  /** Cents of auto top-ups credited this month. */
  autoTopUpsThisMonthCents: number;
  now: Date;
}

/** The 402 that refuses a start, or null when the next minute is covered. */
export function startRefusal(state: StartState): ApiError | null {
  const { plan, account } = state;
  const cost = nextMinuteCost(plan, state.freeMinutesUsed);
  if (covers(account.balance_cents, cost)) return null;
  const renews = nextMonthStart(state.now).toISOString().slice(0, 10);
  if (cost.cents === null) {
    return paymentRequired(
      'insufficient_balance',
      `The ${plan.free_minutes} free minutes of this month are used up and the ${plan.name} plan has no paid minutes; an owner can choose a paid plan (PUT /v1/plan) and add funds, or wait until ${renews}`,
    );
  }
  if (account.card_status === 'needs_attention') {
    return paymentRequired('card_needs_attention', `The last payment from the saved card failed and the balance (${dollars(account.balance_cents)}) cannot cover a minute (${dollars(cost.cents)}); update the card (POST /v1/billing/card) and try again`);
  }
  if (account.auto_topup_enabled && account.card_status === 'ok' && state.autoTopUpsThisMonthCents + account.auto_topup_amount_cents > account.auto_topup_monthly_limit_cents) {
    return paymentRequired(
      'auto_topup_limit_reached',
      `Auto top-ups reached this month's limit of ${dollars(account.auto_topup_monthly_limit_cents)} and the balance (${dollars(account.balance_cents)}) cannot cover a minute (${dollars(cost.cents)}); raise the limit (PUT /v1/billing/settings) or top up (POST /v1/billing/top_ups)`,
    );
  }
  return paymentRequired('insufficient_balance', `The balance (${dollars(account.balance_cents)}) cannot cover a minute (${dollars(cost.cents)}); add funds (POST /v1/billing/top_ups) or turn on auto top-up (PUT /v1/billing/settings)`);
}

/** Why a running task was stopped when its next minute was not covered (its stopped event says so). */
export function outOfMinutesReason(plan: PlanRow, cost: MinuteCost): string {
  if (cost.cents === null) return `Stopped: the ${plan.free_minutes} free minutes of this month ran out (${plan.name} plan)`;
  return `Stopped: the balance cannot cover another minute (${dollars(cost.cents)}); add funds or turn on auto top-up`;
}

function paymentRequired(code: 'insufficient_balance' | 'auto_topup_limit_reached' | 'card_needs_attention', message: string): ApiError {
  return new ApiError('payment_required', message, { code });
}

/** 429 when the plan's tasks at once are all taken. */
export function concurrencyRefusal(plan: PlanRow, active: number): ApiError | null {
  if (active < plan.concurrent_tasks) return null;
  return new ApiError('rate_limit', `The ${plan.name} plan runs ${plan.concurrent_tasks} task${plan.concurrent_tasks === 1 ? '' : 's'} at once and ${active} ${active === 1 ? 'is' : 'are'} running; wait for one to end or stop one, or an owner can choose a larger plan`, {
    code: 'concurrency_limit',
    extra: { concurrent_tasks: plan.concurrent_tasks },
  });
}
