import type { Knex } from 'knex';

/** The append-only task event log; (task_id, cursor) is gapless per task. */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_events', (t) => {
    t.text('task_id').notNullable().references('tasks.id').onDelete('CASCADE');
    t.integer('cursor').notNullable();
    t.text('type').notNullable();
    t.text('message').notNullable();
    t.jsonb('data').notNullable().defaultTo('{}');
    t.timestamp('ts', { useTz: true }).notNullable();
    t.primary(['task_id', 'cursor']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('task_events');
}
