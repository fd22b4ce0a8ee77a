import type { Knex } from 'knex';

/**
 * The org event outbox: every event of the spec's webhook types (session.connected, task.started,
 * …), written in the transaction of the change it reports, with the `data` the webhook carries.
 * The webhooks queue delivers from it; `dispatched_at` lets the sweep find events whose dispatch
 * job was lost.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('org_events', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('type').notNullable();
    t.text('session_id');
    t.text('task_id');
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('dispatched_at', { useTz: true });
    t.index(['org_id', 'seq']);
  });
  await knex.raw('create index org_events_undispatched on org_events (created_at) where dispatched_at is null');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('org_events');
}
