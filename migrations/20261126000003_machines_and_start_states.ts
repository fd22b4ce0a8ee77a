import type { Knex } from 'knex';

/**
 * Machines, the commands sent to runners about them, and start states (docs/evals.md,
 * docs/runners.md). PostgreSQL is the record: a machine's place on a runner, every command and
 * whether it was answered, and each start state's progress are here, so that a runner, a web
 * process or a worker that dies loses nothing and the maintenance sweep can pick up after it.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('machines', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    // What the machine is for: its owner is told of every change (a start state now, a try later).
    t.text('owner_kind').notNullable();
    t.text('owner_id').notNullable();
    // The disk it starts from: `{ image }` or `{ image, state, version }` (docs/runners.md).
    t.jsonb('disk').notNullable();
    t.text('image').notNullable();
    t.text('os').notNullable();
    // A state disk is kept by one runner: only that one can make the machine.
    t.text('pinned_runner_id');
    t.text('runner_id').references('runners.id');
    // waiting (for a runner with a free slot) → starting → running → stopping → destroyed; or failed.
    t.text('status').notNullable();
    // The machine session its desktop connection pairs with.
    t.text('session_code').notNullable();
    // Placements so far (a make that failed on one runner is tried on another).
    t.integer('placements').notNullable().defaultTo(0);
    t.text('error');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('ended_at', { useTz: true });
  });
  // Slot accounting counts a runner's live machines (also the runner's foreign key); the sweep
  // finds waiting ones oldest first.
  await knex.raw('create index machines_runner on machines (runner_id, status)');
  await knex.raw("create index machines_waiting on machines (seq) where status = 'waiting'");
  await knex.raw('create index machines_owner on machines (owner_kind, owner_id)');
  await knex.raw('create index machines_org on machines (org_id)');

  await knex.schema.createTable('runner_commands', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('runner_id').notNullable().references('runners.id');
    t.text('machine_id');
    t.text('type').notNullable();
    t.jsonb('args').notNullable();
    // sent (until the runner answers or the deadline passes) → done | failed.
    t.text('status').notNullable();
    t.jsonb('result');
    t.text('error_code');
    t.text('error');
    t.timestamp('sent_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deadline_at', { useTz: true }).notNullable();
    t.timestamp('finished_at', { useTz: true });
  });
  // A runner's unanswered commands (sent again at its hello); also the runner's foreign key.
  await knex.raw('create index runner_commands_runner on runner_commands (runner_id, status)');
  await knex.raw("create index runner_commands_overdue on runner_commands (deadline_at) where status = 'sent'");
  await knex.raw('create index runner_commands_machine on runner_commands (machine_id, seq)');

  await knex.schema.createTable('start_states', (t) => {
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('name').notNullable();
    t.text('description').notNullable().defaultTo('');
    t.text('from_id').notNullable();
    t.text('method').notNullable();
    t.text('script');
    t.text('instruction');
    t.text('agent_id');
    t.text('task_id');
    t.text('status').notNullable();
    t.integer('version').notNullable().defaultTo(0);
    // The image every version of it comes from (its OS), and the disk it was made from.
    t.text('image').notNullable();
    t.jsonb('from_disk').notNullable();
    t.text('os').notNullable();
    // The runner that keeps its saved disks (set by the first save), and that runner's labels.
    t.text('runner_id');
    t.jsonb('labels').notNullable().defaultTo('[]');
    t.text('error');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    // Its machine while building, open or saving, and how many machines this build has had (a
    // machine lost with its runner is replaced a few times before the build fails).
    t.text('machine_id');
    t.integer('machine_attempts').notNullable().defaultTo(0);
    // The live view's capability token (in its URLs, which the state shows while open) and when
    // the open machine closes unless saved.
    t.text('view_token').unique();
    t.timestamp('view_expires_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('deleted_at', { useTz: true });
  });
  await knex.raw('create index start_states_org on start_states (org_id, seq)');
  await knex.raw('create index start_states_task on start_states (task_id) where task_id is not null');
  await knex.raw("create index start_states_open_until on start_states (view_expires_at) where status = 'open'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('start_states');
  await knex.schema.dropTable('runner_commands');
  await knex.schema.dropTable('machines');
}
