import type { Knex } from 'knex';

/**
 * Runners (docs/runners.md): processes beside a hypervisor that connect out to the `/runners`
 * namespace with a token. `scope: org` runners belong to one org; `scope: cloud` runners are the
 * operator's (made with the CLI) and have no org. The token itself is never stored: its SHA-256
 * is what a hello is looked up by. What the runner reports in its hello and heartbeats (provider,
 * version, labels, slots, busy, images) is kept here so that any web process reads it right;
 * `status` is derived when read from `connection_id` (set while a connection holds it) and
 * `last_seen_at` (its last heartbeat).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('runners', (t) => {
    // seq orders lists (newest first); id is the public `rn_…` id.
    t.bigIncrements('seq').primary();
    t.text('id').notNullable().unique();
    t.text('org_id').references('orgs.id').onDelete('CASCADE');
    t.text('scope').notNullable();
    t.text('name').notNullable();
    t.text('token_hash').notNullable().unique();
    // The first characters of the token, shown in the audit log so that people can tell tokens apart.
    t.text('token_prefix').notNullable();
    t.text('provider');
    t.text('version');
    t.jsonb('labels').notNullable().defaultTo('[]');
    t.integer('slots').notNullable().defaultTo(0);
    t.integer('busy').notNullable().defaultTo(0);
    t.jsonb('images').notNullable().defaultTo('[]');
    // The connection that holds the runner now (a fresh id per accepted hello); null while none does.
    t.text('connection_id');
    t.timestamp('last_seen_at', { useTz: true });
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at', { useTz: true });
  });
  await knex.raw(`alter table runners add constraint runners_scope check (
    (scope = 'org' and org_id is not null) or (scope = 'cloud' and org_id is null))`);
  // The reads: an org's own runners and the cloud ones, live (not revoked), newest first. The
  // org's index has no predicate: it also serves the foreign key when an org is removed.
  await knex.raw('create index runners_org on runners (org_id, seq)');
  await knex.raw("create index runners_cloud_live on runners (seq) where scope = 'cloud' and revoked_at is null");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('runners');
}
