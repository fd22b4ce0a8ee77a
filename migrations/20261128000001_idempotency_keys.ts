import type { Knex } from 'knex';

/**
 * `Idempotency-Key` on the /v1 POSTs that create (docs/api.md, "Retrying safely"): one row per
 * org, operation and key. The key itself is not stored, only its SHA-256 (`key_hash`); the first
 * answer is kept encrypted with a key derived from it (`response`), because it may carry a secret
 * shown once (a runner's token, a session's token). `claim_id` and `locked_until` mark a request
 * in progress: a concurrent one with the same key waits for it, and a claim left by a process
 * that died is taken over once `locked_until` has passed. A row lives 24 hours (`expires_at`);
 * the maintenance sweep deletes expired rows, and an expired key may be used again.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', (t) => {
    t.text('org_id').notNullable().references('orgs.id').onDelete('CASCADE');
    t.text('operation').notNullable();
    t.text('key_hash').notNullable();
    // SHA-256 of the request's path parameters and body, canonically serialised.
    t.text('request_hash').notNullable();
    t.text('claim_id').notNullable();
    t.timestamp('locked_until', { useTz: true });
    // Null until the first request has answered.
    t.binary('response');
    t.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now());
    t.timestamp('expires_at', { useTz: true }).notNullable();
    t.primary(['org_id', 'operation', 'key_hash']);
    t.index(['expires_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys');
}
