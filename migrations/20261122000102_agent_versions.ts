import type { Knex } from 'knex';

/**
 * Every published version of every agent, kept whole: the config as JSONB and how it came to
 * be. The primary key (org_id, agent_id, version) is what makes two versions with one number
 * impossible, whatever the callers race.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_versions', (t) => {
    t.text('org_id').notNullable();
    t.text('agent_id').notNullable();
    t.integer('version').notNullable();
    t.primary(['org_id', 'agent_id', 'version']);
    t.foreign(['org_id', 'agent_id']).references(['org_id', 'agent_id']).inTable('agents').onDelete('CASCADE');
    t.jsonb('config').notNullable();
    // created (POST /v1/agents or the org's default), patched (PATCH /v1/agents/{id}), draft (draft published).
    t.text('origin').notNullable();
    t.integer('based_on_version');
    t.integer('restored_from_version');
    // Versions published after the draft's base whose changes this version replaced.
    t.specificType('undone_versions', 'integer[]').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('created_by');
  });
  await knex.raw('alter table agent_versions add constraint agent_versions_version_positive check (version >= 1)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_versions');
}
