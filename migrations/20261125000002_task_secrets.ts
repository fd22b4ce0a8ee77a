import type { Knex } from 'knex';

/**
 * Values a task must treat as secrets (given when the task is created, e.g. an eval's
 * `{ secret }` facts): the guardrails refuse the agent typing any of them and hand it to the
 * person. Null for a task without any. Never part of the Task object or its events.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.specificType('secrets', 'text[]');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tasks', (t) => {
    t.dropColumn('secrets');
  });
}
