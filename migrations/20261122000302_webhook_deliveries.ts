import type { Knex } from 'knex';

/**
 * One row per org event sent (or being sent) to the org's endpoint, as an explicit state:
 * `pending` (an attempt is due at `next_attempt_at`, or one is in flight and `next_attempt_at`
 * is the end of its lease), `succeeded` (a 2xx came back), `failed` (given up).
 * `schedule_base` is the number of attempts made before the current round of the retry schedule:
 * 0 at first, and the attempt count at the time of a redelivery, which starts a new round.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_deliveries', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('event_id').notNullable().unique().references('org_events.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('event_type').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('attempts').notNullable().defaultTo(0);
    t.integer('schedule_base').notNullable().defaultTo(0);
    t.timestamp('next_attempt_at', { useTz: true });
    t.text('last_error');
    t.integer('last_status_code');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.index(['org_id', 'seq']);
  });
  await knex.raw("alter table webhook_deliveries add constraint webhook_deliveries_status check (status in ('pending', 'succeeded', 'failed'))");
  // The sweep looks for pending deliveries whose attempt is long overdue (a lost job).
  await knex.raw("create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_deliveries');
}
