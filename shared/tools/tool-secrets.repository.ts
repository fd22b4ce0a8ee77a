/** SQL for `org_tool_secrets`: each org's HTTP-tool signing secret. */
import type { Knex } from '../db/knex';

type Db = Knex | Knex.Transaction;

export interface ToolSecretRow {
  org_id: string;
  secret: string;
  created_at: Date;
  rotated_at: Date | null;
}

/** Stores `secret` as the org's unless it already has one. */
export async function insertToolSecretIfMissing(db: Db, orgId: string, secret: string): Promise<void> {
  await db.raw('insert into org_tool_secrets (org_id, secret) values (?, ?) on conflict (org_id) do nothing', [orgId, secret]);
}

export async function findToolSecret(db: Db, orgId: string): Promise<ToolSecretRow | undefined> {
  return (await db('org_tool_secrets').where({ org_id: orgId }).first()) as ToolSecretRow | undefined;
}

/** Replaces the org's secret (which must exist) and stamps `rotated_at`. */
export async function replaceToolSecret(trx: Knex.Transaction, orgId: string, secret: string): Promise<ToolSecretRow> {
  const [row] = (await trx('org_tool_secrets').where({ org_id: orgId }).update({ secret, rotated_at: trx.fn.now() }).returning('*')) as ToolSecretRow[];
  return row!;
}
