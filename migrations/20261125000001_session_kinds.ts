import type { Knex } from 'knex';

/**
 * Sessions of a second kind. A `person` session (every session so far) is made through the API
 * for a person's desktop app: it has an invite link and a token for the older API. A `machine`
 * session is minted by the service for a computer a runner makes: it pairs through the same
 * `/desktop` protocol with its code, and has neither link nor token, so both become nullable,
 * required of person sessions only. `label` names the machine for the people who read the
 * audit log and the console (e.g. "try 3 of run X").
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('sessions', (t) => {
    t.text('kind').notNullable().defaultTo('person');
    t.text('label');
  });
  await knex.raw('alter table sessions alter column token_hash drop not null, alter column invite_url drop not null');
  await knex.raw(`alter table sessions add constraint sessions_kind check (
    (kind = 'person' and token_hash is not null and invite_url is not null)
    or (kind = 'machine' and token_hash is null and invite_url is null))`);
}

/**
 * Machine sessions cannot be expressed without the kind (they have no token or link), so going
 * down deletes them, and with them (by the tasks' foreign key) the tasks that ran on them.
 */
export async function down(knex: Knex): Promise<void> {
  await knex('sessions').where({ kind: 'machine' }).delete();
  await knex.raw('alter table sessions drop constraint sessions_kind');
  await knex.raw('alter table sessions alter column token_hash set not null, alter column invite_url set not null');
  await knex.schema.alterTable('sessions', (t) => {
    t.dropColumn('label');
    t.dropColumn('kind');
  });
}
