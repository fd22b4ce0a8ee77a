import type { Knex } from 'knex';

/**
 * Evals' cases, sets, runs and tries (spec: Test case, Test set; docs/evals.md). A run copies
 * what it needs of each case when it is created (its start state version included), so that
 * editing a case or saving its start state later changes nothing in a run already queued.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('test_cases', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    // The caller's own key: a batch upserts by it.
    t.text('key');
    t.text('name').notNullable();
    t.text('prompt').notNullable();
    // An image id or an `ss_` start state of the org.
    t.text('start_state').notNullable();
    t.text('setup_script');
    // { check_script?, rubric? }
    t.jsonb('success').notNullable().defaultTo('{}');
    // The simulated customer, or null (the test set's, if any).
    t.jsonb('customer');
    // { approvals: 'approve' | 'deny' | 'none' }
    t.jsonb('operator').notNullable().defaultTo('{}');
    // { minutes, steps }
    t.jsonb('limits').notNullable().defaultTo('{}');
    t.text('runs_on').notNullable().defaultTo('vm');
    t.text('category');
    t.jsonb('tags').notNullable().defaultTo('[]');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw('create unique index test_cases_key on test_cases (org_id, key) where key is not null and deleted_at is null');
  await knex.raw('create index test_cases_org on test_cases (org_id, seq)');
  // Deleting a start state asks which live cases use it (409 in_use).
  await knex.raw('create index test_cases_start_state on test_cases (org_id, start_state) where deleted_at is null');

  await knex.schema.createTable('test_sets', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.integer('repeat').notNullable().defaultTo(1);
    t.jsonb('customer');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw('create index test_sets_org on test_sets (org_id, seq)');

  // A set's cases, in order; `repeat` null: the set's.
  await knex.schema.createTable('test_set_cases', (t) => {
    t.text('test_set_id').notNullable().references('test_sets.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('test_case_id').notNullable().references('test_cases.id');
    t.integer('repeat');
    t.primary(['test_set_id', 'position']);
  });
  await knex.raw('create index test_set_cases_case on test_set_cases (test_case_id)');

  await knex.schema.createTable('test_runs', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('test_set_id');
    t.text('agent_id').notNullable();
    // The published version, or the version a draft run's draft is based on (with `draft`).
    t.integer('agent_version').notNullable();
    t.boolean('draft').notNullable().defaultTo(false);
    // The agent as it was when the run was created (`AgentForTask`): every try runs exactly it.
    t.jsonb('agent').notNullable();
    t.integer('repeat');
    // queued → running → completed | cancelled
    t.text('status').notNullable();
    t.jsonb('metadata').notNullable().defaultTo('{}');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
  });
  await knex.raw('create index test_runs_org on test_runs (org_id, seq)');
  await knex.raw("create index test_runs_active on test_runs (seq) where status in ('queued', 'running')");

  // A run's cases, in order, each as it was when the run was created (`snapshot`: prompt, scripts,
  // customer, operator, limits, and the start state's disk at its version then).
  await knex.schema.createTable('test_run_cases', (t) => {
    t.text('run_id').notNullable().references('test_runs.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('test_case_id').notNullable();
    t.text('key');
    t.integer('repeat').notNullable();
    t.jsonb('snapshot').notNullable();
    t.primary(['run_id', 'position']);
  });

  await knex.schema.createTable('tries', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable();
    t.text('run_id').notNullable().references('test_runs.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.text('test_case_id').notNullable();
    // 1..repeat
    t.integer('attempt').notNullable();
    // queued → running → passed | failed | error | cancelled
    t.text('status').notNullable();
    // Where a running try is: machine, setup, task, scoring.
    t.text('phase');
    // Infrastructure retries so far (a runner died, a machine did not start, setup failed): at most 2.
    t.integer('infra_retries').notNullable().defaultTo(0);
    t.text('machine_id');
    t.text('task_id');
    t.text('runner_id');
    t.integer('start_state_version');
    t.jsonb('check');
    t.jsonb('rubric');
    t.integer('steps');
    t.integer('duration_ms');
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('started_at', { useTz: true });
    t.timestamp('ended_at', { useTz: true });
  });
  await knex.raw('create index tries_run on tries (run_id, position, attempt)');
  await knex.raw("create index tries_queued on tries (seq) where status = 'queued'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('tries');
  await knex.schema.dropTable('test_run_cases');
  await knex.schema.dropTable('test_runs');
  await knex.schema.dropTable('test_set_cases');
  await knex.schema.dropTable('test_sets');
  await knex.schema.dropTable('test_cases');
}
