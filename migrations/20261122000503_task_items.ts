import type { Knex } from 'knex';

/**
 * Questions and approvals of tasks. The first answer wins through a conditional update on
 * `answered_by`; `state` says whether the item is still open.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('task_items', (t) => {
    t.text('id').primary();
    t.text('task_id').notNullable().references('tasks.id').onDelete('CASCADE');
    t.text('kind').notNullable();
    t.text('state').notNullable().defaultTo('open');
    // What was asked or is to be approved, and what to do once decided.
    t.jsonb('detail').notNullable();
    t.text('answered_by');
    t.text('answer');
    t.text('decision');
    t.text('note');
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('answered_at', { useTz: true });
    t.index(['task_id']);
  });
  await knex.raw("alter table task_items add constraint task_items_kind check (kind in ('question', 'approval'))");
  await knex.raw("alter table task_items add constraint task_items_state check (state in ('open', 'answered', 'closed'))");
  await knex.raw("create index task_items_open on task_items (created_at) where state = 'open'");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('task_items');
}
