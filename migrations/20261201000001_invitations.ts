import type { Knex } from 'knex';

/**
 * Invitations to join an org (docs/console.md, "Joining an org"). An invitation is not a
 * membership: the person it names accepts it from its one-time link, by proving they own the
 * account (its password, or being signed in as it), or by setting up a new account when the
 * address has none. Only the token's SHA-256 is stored, as for sign-in links.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('invitations', (t) => {
    t.text('id').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('email').notNullable();
    t.text('role').notNullable();
    t.text('token_hash').notNullable().unique();
    // Who invited, as the audit log records actors (a person or an API key; null: the operator's CLI).
    t.jsonb('invited_by');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.timestamp('accepted_at', { useTz: true });
    t.text('accepted_by').references('users.id').onDelete('SET NULL');
    t.timestamp('revoked_at', { useTz: true });
  });
  await knex.raw("alter table invitations add constraint invitations_role check (role in ('owner', 'admin', 'member'))");
  // At most one open invitation per address and org: inviting again replaces it.
  await knex.raw('create unique index invitations_open on invitations (org_id, lower(email)) where accepted_at is null and revoked_at is null');
  // Foreign keys indexed by their own columns: removing an org or a person never scans this table.
  await knex.raw('create index invitations_org on invitations (org_id)');
  await knex.raw('create index invitations_accepted_by on invitations (accepted_by)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('invitations');
}
