import type { Knex } from 'knex';

/**
 * Changes the operator makes outside any org (a cloud runner registered or revoked with the
 * CLI) are audited too: their rows have no org. No org's `GET /v1/audit_log` shows them (every
 * read is scoped to an org); they are the operator's record, in the database.
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table audit_log alter column org_id drop not null');
}

/** The operator's entries have no org to belong to, so going down deletes them. */
export async function down(knex: Knex): Promise<void> {
  await knex('audit_log').whereNull('org_id').delete();
  await knex.raw('alter table audit_log alter column org_id set not null');
}
