import type { Knex } from 'knex';

/**
 * Every foreign key gets an index that leads with its columns, so that removing the row it
 * points at finds the referencing rows through the index. `tasks.session_id` had none (the unique
 * index covers active tasks only; the listing index leads with `org_id`): removing an org with
 * 10,000 sessions scanned the whole `tasks` table once per session and took minutes.
 * `tool_calls.org_id` had none either. Neither column ever changes, so the loop's updates of a
 * task stay HOT.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index if not exists tasks_session_id_index on tasks (session_id)');
  await knex.raw('create index if not exists tool_calls_org_id_index on tool_calls (org_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists tool_calls_org_id_index');
  await knex.raw('drop index if exists tasks_session_id_index');
}
