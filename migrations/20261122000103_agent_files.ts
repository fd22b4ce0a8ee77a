import type { Knex } from 'knex';

/** The agent's own text files (AgentTools `files`): kept per agent, shared by all its versions. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('agent_files', (t) => {
    t.text('org_id').notNullable();
    t.text('agent_id').notNullable();
    t.text('path').notNullable();
    t.primary(['org_id', 'agent_id', 'path']);
    t.foreign(['org_id', 'agent_id']).references(['org_id', 'agent_id']).inTable('agents').onDelete('CASCADE');
    t.text('content').notNullable();
    // UTF-8 bytes of content, summed for the per-agent limit without reading every file.
    t.integer('size_bytes').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('created_by');
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.jsonb('updated_by');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('agent_files');
}
