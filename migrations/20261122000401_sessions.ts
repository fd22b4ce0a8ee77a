import type { Knex } from 'knex';

/**
 * Sessions: a pairing code (which is also the session id) that a person's desktop app connects
 * with, plus a session token for the older session-token API. Codes are unique for good, so a
 * session id never means two sessions.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('sessions', (t) => {
    t.bigIncrements('seq').unique();
    t.text('code').primary();
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('agent_id').notNullable();
    t.text('token_hash').notNullable().unique();
    // The link given to the person, fixed when the session is made.
    t.text('invite_url').notNullable();
    t.text('status').notNullable().defaultTo('waiting');
    t.jsonb('device');
    t.jsonb('capabilities');
    t.jsonb('metadata').notNullable().defaultTo('{}');
    // Each connection gets the next epoch; a late "offline" of an older connection is ignored.
    t.integer('connection_epoch').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('paired_at', { useTz: true });
    t.timestamp('last_active_at', { useTz: true });
    t.timestamp('expires_at', { useTz: true });
    t.integer('task_count').notNullable().defaultTo(0);
    t.text('latest_task_id');
    t.index(['org_id', 'seq']);
    t.index(['org_id', 'agent_id', 'seq']);
    t.index(['org_id', 'status', 'seq']);
  });
  await knex.raw("alter table sessions add constraint sessions_status check (status in ('waiting', 'connected', 'disconnected', 'expired'))");
  // The sweep looks for sessions due to expire.
  await knex.raw("create index sessions_expiring on sessions (expires_at) where status in ('waiting', 'disconnected')");
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('sessions');
}
