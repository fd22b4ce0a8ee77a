import type { Knex } from 'knex';

/**
 * Screen recordings: one PNG per frame, numbered from 1. Kept apart from `tasks` and never read
 * by the loop's queries; `png` is stored EXTERNAL (out of line, not recompressed: PNG is
 * compressed already), so frames cost the hot tables nothing.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_frames', (t) => {
    t.text('task_id').notNullable().references('tasks.id').onDelete('CASCADE');
    t.integer('seq').notNullable();
    t.integer('width').notNullable();
    t.integer('height').notNullable();
    t.binary('png').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.primary(['task_id', 'seq']);
  });
  await knex.raw('alter table task_frames alter column png set storage external');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('task_frames');
}
