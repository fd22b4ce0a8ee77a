import type { Knex } from 'knex';

/**
 * Each org's HTTP-tool signing secret (spec: Outgoing HTTP tool call). Made with the org
 * (`OrgService.onCreated`), or on first use for orgs made before this table existed.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('org_tool_secrets', (t) => {
    t.text('org_id').primary().references('orgs.id').onDelete('CASCADE');
    t.text('secret').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('rotated_at', { useTz: true });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('org_tool_secrets');
}
