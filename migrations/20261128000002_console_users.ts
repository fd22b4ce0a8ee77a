import type { Knex } from 'knex';

/**
 * People of the console (docs/console.md): users sign in with an email and a password, or with a
 * one-time sign-in link; each belongs to orgs with a role. A signed-in browser holds a console
 * session (its token in an HTTP-only cookie; only the token's SHA-256 is stored, as for API keys)
 * that acts for one org. Sign-in links are kept the same way and used once.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('users', (t) => {
    t.text('id').primary();
    t.text('email').notNullable();
    // argon2id, in its own encoded form (salt and parameters included); null until the person sets one.
    t.text('password_hash');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
  });
  // One account per address, whatever its case.
  await knex.raw('create unique index users_email on users (lower(email))');

  await knex.schema.createTable('memberships', (t) => {
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('role').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.primary(['org_id', 'user_id']);
  });
  await knex.raw("alter table memberships add constraint memberships_role check (role in ('owner', 'admin', 'member'))");
  await knex.raw('create index memberships_user on memberships (user_id)');

  await knex.schema.createTable('console_sessions', (t) => {
    t.text('token_hash').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    // The synchronizer token every state-changing request of this session must carry.
    t.text('csrf_token').notNullable();
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('last_seen_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    // Absolute expiry; idle expiry is last_seen_at plus the idle limit.
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('signed_out_at', { useTz: true });
  });
  // Foreign keys indexed by their own columns: removing an org or a person never scans these.
  await knex.raw('create index console_sessions_user on console_sessions (user_id)');
  await knex.raw('create index console_sessions_org on console_sessions (org_id, user_id)');

  await knex.schema.createTable('sign_in_links', (t) => {
    t.text('token_hash').primary();
    t.text('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('used_at', { useTz: true });
  });
  await knex.raw('create index sign_in_links_user on sign_in_links (user_id)');
  await knex.raw('create index sign_in_links_org on sign_in_links (org_id)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sign_in_links');
  await knex.schema.dropTable('console_sessions');
  await knex.schema.dropTable('memberships');
  await knex.schema.dropTable('users');
}
