import type { Knex } from 'knex';

/**
 * Agents: one row per agent with its published version number and its draft. The config of
 * each published version lives in `agent_versions`; the draft's config sits here until it is
 * published or discarded.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agents', (t) => {
    // seq orders the list (newest first); (org_id, agent_id) is the identity.
    t.bigIncrements('seq').unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.primary(['org_id', 'agent_id']);
    // The published version; its config is agent_versions (org_id, agent_id, version).
    t.integer('version').notNullable();
    t.boolean('is_default').notNullable().defaultTo(false);
    // The draft: a whole config, or null when there are no unpublished changes.
    t.jsonb('draft');
    t.integer('draft_based_on_version');
    t.integer('draft_restored_from_version');
    t.timestamp('draft_saved_at', { useTz: true });
    t.jsonb('draft_saved_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('created_by');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('updated_by');
  });
  // Exactly one default agent per org: at most one here, at least one kept by the service.
  await knex.raw('create unique index agents_one_default_per_org on agents (org_id) where is_default');
  await knex.raw("alter table agents add constraint agents_agent_id_shape check (agent_id ~ '^[a-z0-9-]{2,40}$')");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agents');
}
