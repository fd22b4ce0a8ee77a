import type { Knex } from 'knex';

/**
 * Every call of an agent's HTTP tool: what was sent where, and what came back. `started_at` is
 * set just before the one POST is made, so a call whose worker died mid-flight is recognised
 * and failed instead of being sent a second time.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tool_calls', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('task_id').notNullable();
    t.text('session_id').notNullable();
    t.text('agent_id').notNullable();
    t.integer('agent_version').notNullable();
    t.integer('step').notNullable();
    t.text('tool_name').notNullable();
    t.text('url').notNullable();
    t.jsonb('arguments').notNullable();
    t.text('status').notNullable().defaultTo('pending');
    t.integer('http_status');
    t.text('reply_text');
    t.boolean('truncated').notNullable().defaultTo(false);
    t.text('error');
    t.text('error_code');
    t.integer('duration_ms');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('finished_at', { useTz: true });
    t.index(['task_id', 'step']);
  });
  await knex.raw("alter table tool_calls add constraint tool_calls_status check (status in ('pending', 'succeeded', 'failed'))");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tool_calls');
}
