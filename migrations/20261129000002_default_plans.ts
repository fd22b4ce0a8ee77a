import type { Knex } from 'knex';

/** The plans a fresh installation offers (docs/billing.md, "Plans"); a data change of its own. */
const PLANS = [
  { id: 'free', name: 'Free', description: 'Free minutes each month, two tasks at a time; no paid minutes.', free_minutes: 60, price_per_minute_cents: null, concurrent_tasks: 2, self_serve: true, listed: true, position: 1 },
  { id: 'pay_as_you_go', name: 'Pay as you go', description: 'Every minute from the balance; a saved card tops it up.', free_minutes: 0, price_per_minute_cents: 10, concurrent_tasks: 10, self_serve: true, listed: true, position: 2 },
  { id: 'enterprise', name: 'Enterprise', description: 'Free minutes each month, a lower price and many tasks at once; set up by us.', free_minutes: 1000, price_per_minute_cents: 6, concurrent_tasks: 50, self_serve: false, listed: true, position: 3 },
  { id: 'internal', name: 'Internal', description: "The operator's own use (development, tests, benchmarks): no charge and no limit worth the name.", free_minutes: 100_000_000, price_per_minute_cents: null, concurrent_tasks: 100_000, self_serve: false, listed: false, position: 99 },
];
export async function up(knex: Knex): Promise<void> {
  await knex('plans').insert(PLANS).onConflict('id').ignore();
}

export async function down(knex: Knex): Promise<void> {
  await knex('plans').whereIn('id', PLANS.map((plan) => plan.id)).delete();
}
