import type { Knex } from 'knex';

/** Every HTTP attempt of a delivery, numbered from 1 per delivery: when, where, how long, what came back. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_attempts', (t) => {
    t.bigIncrements('id').primary();
    t.text('delivery_id').notNullable().references('webhook_deliveries.id').onDelete('CASCADE');
    t.integer('n').notNullable();
    t.text('url').notNullable();
    t.timestamp('started_at', { useTz: true }).notNullable();
    t.integer('duration_ms').notNullable();
    t.integer('status_code');
    t.boolean('ok').notNullable();
    t.text('error');
    t.text('error_code');
    // The start of the reply body (up to 1 KB), for the integrator debugging a refusal.
    t.text('response_body');
    t.unique(['delivery_id', 'n']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_attempts');
}
