import type { Knex } from 'knex';

/**
 * Whether a machine's owner is told once the machine runs (its make answered). An open start
 * state's owner is not: a person uses the machine through its live view, and nothing of the
 * state changes when it starts. A failed make is told either way.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.boolean('tell_owner_when_running').notNullable().defaultTo(true);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('machines', (t) => {
    t.dropColumn('tell_owner_when_running');
  });
}
