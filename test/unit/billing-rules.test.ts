import { expect } from 'chai';
import fc from 'fast-check';
import type { AccountRow, PlanRow } from '../../shared/billing/billing.repository';
import { concurrencyRefusal, covers, nextMinuteCost, startRefusal } from '../../shared/billing/billing-rules';

const plan = (changes: Partial<PlanRow> = {}): PlanRow => ({ id: 'p', name: 'Paid', description: '', free_minutes: 60, price_per_minute_cents: 10, concurrent_tasks: 2, self_serve: true, listed: true, position: 1, ...changes });
const account = (changes: Partial<AccountRow> = {}): AccountRow => ({
  org_id: 'org_1',
  plan_id: 'p',
  balance_cents: 0,
  provider_customer_id: 'cus_1',
  card_status: 'ok',
  payment_method_id: 'pm_1',
  card_version: 0,
  auto_topup_enabled: false,
  auto_topup_amount_cents: 1000,
  auto_topup_threshold_cents: 500,
  auto_topup_monthly_limit_cents: 5000,
  updated_at: new Date(),
  ...changes,
});
const now = new Date('2026-03-10T12:00:00Z');

describe('billing rules', () => {
  it('free minutes first, then the price from the balance; a plan without a price has no paid minutes', () => {
    expect(nextMinuteCost(plan(), 59)).to.deep.equal({ free: true, cents: 0 });
    expect(nextMinuteCost(plan(), 60)).to.deep.equal({ free: false, cents: 10 });
    expect(nextMinuteCost(plan({ price_per_minute_cents: null }), 60)).to.deep.equal({ free: false, cents: null });
    expect(covers(10, { free: false, cents: 10 })).to.equal(true);
    expect(covers(9, { free: false, cents: 10 })).to.equal(false);
    expect(covers(1_000_000, { free: false, cents: null })).to.equal(false);
  });

  it('a start is refused exactly when the next minute is not covered (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 100 }), fc.option(fc.integer({ min: 1, max: 50 })), fc.integer({ min: -100, max: 200 }), (free, used, price, balance) => {
        const refusal = startRefusal({ plan: plan({ free_minutes: free, price_per_minute_cents: price }), account: account({ balance_cents: balance }), freeMinutesUsed: used, autoTopUpsThisMonthCents: 0, now });
        const covered = used < free || (price !== null && balance >= price);
        expect(refusal === null).to.equal(covered);
        if (refusal) expect(refusal).to.include({ status: 402, type: 'payment_required' });
      }),
    );
  });

  it('names what to do: the card first, then the auto top-up limit, else the balance', () => {
    const state = { plan: plan(), freeMinutesUsed: 60, autoTopUpsThisMonthCents: 5000, now };
    expect(startRefusal({ ...state, account: account({ card_status: 'needs_attention', auto_topup_enabled: true }) })?.code).to.equal('card_needs_attention');
    expect(startRefusal({ ...state, account: account({ auto_topup_enabled: true }) })?.code).to.equal('auto_topup_limit_reached');
    expect(startRefusal({ ...state, account: account() })?.code).to.equal('insufficient_balance');
    expect(startRefusal({ ...state, plan: plan({ price_per_minute_cents: null }), account: account() })?.message).to.match(/free minutes .* used up .* until 2026-04-01/);
  });

  it('429 concurrency_limit once the plan\'s tasks at once are taken', () => {
    expect(concurrencyRefusal(plan(), 1)).to.equal(null);
    expect(concurrencyRefusal(plan(), 2)).to.include({ status: 429, type: 'rate_limit', code: 'concurrency_limit' });
  });
});
