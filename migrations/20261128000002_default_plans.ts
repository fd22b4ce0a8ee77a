import type { Knex } from 'knex';

/** The plans a fresh installation offers (docs/billing.md, "Plans"); a data change of its own. */
const PLANS = [
  { id: 'free', name: 'Free', description: 'Free minutes each month, one task at a time; no paid minutes.', free_minutes: 60, price_per_minute_cents: null, concurrent_tasks: 1, self_serve: true, position: 1 },
  { id: 'pay_as_you_go', name: 'Pay as you go', description: 'Free minutes each month, then each minute from the balance; a card tops it up.', free_minutes: 60, price_per_minute_cents: 10, concurrent_tasks: 5, self_serve: true, position: 2 },
  { id: 'enterprise', name: 'Enterprise', description: 'More free minutes, a lower price and many tasks at once; set up by us.', free_minutes: 1000, price_per_minute_cents: 6, concurrent_tasks: 50, self_serve: false, position: 3 },
];

export async function up(knex: Knex): Promise<void> {
  await knex('plans').insert(PLANS).onConflict('id').ignore();
}

export async function down(knex: Knex): Promise<void> {
  await knex('plans').whereIn('id', PLANS.map((plan) => plan.id)).delete();
}
