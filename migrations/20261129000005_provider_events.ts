import type { Knex } from 'knex';

/** The payment provider's webhook events handled, by their id: a redelivered event changes nothing. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('billing_provider_events', (t) => {
    t.text('id').primary();
    t.text('type').notNullable();
    t.timestamp('received_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('billing_provider_events');
}
