/** SQL for `orgs`. */
import type { Knex } from '../db/knex';

export interface OrgRow {
  id: string;
  name: string;
  created_at: Date;
}

export async function insertOrg(trx: Knex.Transaction, row: { id: string; name: string }): Promise<OrgRow> {
  const [inserted] = await trx('orgs').insert(row).returning(['id', 'name', 'created_at']);
  return inserted as OrgRow;
}

export async function orgExists(db: Knex | Knex.Transaction, orgId: string): Promise<boolean> {
  return Boolean(await db('orgs').where({ id: orgId }).first('id'));
}

/** Whether the database holds any org at all. */
export async function anyOrgExists(db: Knex): Promise<boolean> {
  return Boolean(await db('orgs').first('id'));
}

/** Every org, oldest first (the CLI's `orgs list`; an operator's view, not an API route). */
export async function listOrgs(db: Knex): Promise<OrgRow[]> {
  return db<OrgRow>('orgs').select('id', 'name', 'created_at').orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

/**
 * Locks the org's row until the caller's transaction ends: changes that count something of the
 * org (its runners) take it first, so that two of them count one after the other, as does moving
 * the default agent, so that the partial unique index never sees two defaults. True when the org
 * exists.
 */
export async function lockOrgRow(trx: Knex.Transaction, orgId: string): Promise<boolean> {
  return Boolean(await trx('orgs').where({ id: orgId }).forUpdate().first('id'));
}
