import type { Knex } from 'knex';

/**
 * Plans (docs/billing.md): what an org may run and what a minute costs. Data, not code, so that
 * an operator adjusts the numbers with SQL or a later migration and every process reads the same.
 * `price_per_minute_cents` null: the plan has no paid minutes (the free plan stops at its free
 * minutes). `self_serve` false: only an operator puts an org on it (`orgs set-plan`). `listed`
 * false: GET /v1/plans shows it only to orgs on it (the operator's own plans).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plans', (t) => {
    t.text('id').primary();
    t.text('name').notNullable();
    t.text('description').notNullable();
    t.integer('free_minutes').notNullable();
    t.integer('price_per_minute_cents');
    t.integer('concurrent_tasks').notNullable();
    t.boolean('self_serve').notNullable();
    t.boolean('listed').notNullable().defaultTo(true);
    // Lists show plans in this order.
    t.integer('position').notNullable();
  });
  await knex.raw('alter table plans add constraint plans_numbers check (free_minutes >= 0 and concurrent_tasks >= 1 and (price_per_minute_cents is null or price_per_minute_cents >= 0))');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('plans');
}
