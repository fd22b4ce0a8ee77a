import type { Knex } from 'knex';

/**
 * Tasks: one row per task holding everything the next step needs, so that any worker can take
 * it. The agent config is copied in when the task starts: later edits do not change a running task.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('tasks', (t) => {
    t.bigIncrements('seq').unique();
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('session_id').notNullable().references('sessions.code').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.integer('agent_version').notNullable();
    t.boolean('agent_draft').notNullable().defaultTo(false);
    t.jsonb('agent_config').notNullable();
    t.text('model').notNullable();
    t.text('effort').notNullable();
    t.text('prompt').notNullable();
    t.text('request_id');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.text('status').notNullable();
    t.text('result');
    t.text('error');
    t.jsonb('pending');
    // Last event cursor; events are numbered 1, 2, 3… per task with no gaps.
    t.integer('cursor').notNullable().defaultTo(0);
    // Model turns taken.
    t.integer('steps').notNullable().defaultTo(0);
    // What the loop is doing now: 'model' (a step job), 'computer' (an action out), 'person'
    // (a question or approval), 'tool' (an HTTP tool call), 'sleep', or null when ended.
    t.text('phase');
    t.text('current_job_id');
    t.text('awaiting_act_id');
    t.timestamp('phase_since', { useTz: true });
    // Actions of the current turn still to be judged and sent, and what to tell the model next.
    t.jsonb('queued_actions').notNullable().defaultTo('[]');
    t.jsonb('turn_results').notNullable().defaultTo('[]');
    t.jsonb('last_outcome');
    t.jsonb('model_state');
    t.jsonb('observation');
    t.jsonb('guard_state').notNullable().defaultTo('{}');
    t.integer('frames').notNullable().defaultTo(0);
    t.integer('actions').notNullable().defaultTo(0);
    // Running time: seconds banked so far plus, while running, the time since running_since.
    t.integer('active_ms').notNullable().defaultTo(0);
    t.timestamp('running_since', { useTz: true });
    t.integer('billed_minutes');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('updated_at', { useTz: true }).notNullable();
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
    t.index(['org_id', 'seq']);
    t.index(['org_id', 'session_id', 'seq']);
    t.index(['org_id', 'agent_id', 'seq']);
    t.index(['org_id', 'status', 'seq']);
  });
  await knex.raw("alter table tasks add constraint tasks_status check (status in ('queued', 'running', 'completed', 'failed', 'stopped'))");
  // One task at a time per computer, settled by the database.
  await knex.raw("create unique index tasks_one_active_per_session on tasks (session_id) where status in ('queued', 'running')");
  // The same request_id returns the same task.
  await knex.raw('create unique index tasks_request_id on tasks (org_id, request_id) where request_id is not null');
  await knex.raw("create index tasks_active on tasks (updated_at) where status in ('queued', 'running')");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tasks');
}
