import type { Knex } from 'knex';

/**
 * One webhook endpoint per org (spec: Webhook endpoint). `secret` is kept because every delivery
 * is signed with it; the API returns it only when it is first made or rotated. `url` null means
 * no endpoint: the secret is dropped with it, and the next URL gets a new one.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_endpoints', (t) => {
    t.text('org_id').primary().references('orgs.id').onDelete('CASCADE');
    t.text('url');
    // Empty means every type.
    t.specificType('events', 'text[]').notNullable().defaultTo('{}');
    t.text('secret');
    t.timestamp('secret_created_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  await knex.raw('alter table webhook_endpoints add constraint webhook_endpoints_secret_with_url check (secret is null or url is not null)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_endpoints');
}
