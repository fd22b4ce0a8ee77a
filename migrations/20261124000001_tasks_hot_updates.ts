import type { Knex } from 'knex';

/**
 * A running task's row is updated twice per agent step, and `updated_at` changes each time. With
 * `updated_at` in an index, no such update could be HOT (heap-only: written on the same page
 * without touching any index), so each one added an entry to every index of the table. The
 * reconcile sweep, the only reader of that index, finds active tasks through
 * `tasks_one_active_per_session` (same predicate; there are at most as many as connected
 * computers) and filters them by time. Room is left on each page for the next version of a row.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists tasks_active');
  await knex.raw('alter table tasks set (fillfactor = 70)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table tasks reset (fillfactor)');
  await knex.raw("create index tasks_active on tasks (updated_at) where status in ('queued', 'running')");
}
