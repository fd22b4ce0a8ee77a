import type { Knex } from '../db/knex';

export interface ApiKeyRow {
  id: string;
  org_id: string;
  name: string;
  prefix: string;
  hash: string;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

export function insertApiKey(db: Knex | Knex.Transaction, row: Omit<ApiKeyRow, 'created_at' | 'last_used_at' | 'revoked_at'>) {
  return db('api_keys').insert(row);
}

export async function findApiKeyByHash(db: Knex, hash: string): Promise<ApiKeyRow | undefined> {
  return db<ApiKeyRow>('api_keys').where({ hash }).first();
}

export async function findApiKey(db: Knex | Knex.Transaction, id: string): Promise<ApiKeyRow | undefined> {
  return db<ApiKeyRow>('api_keys').where({ id }).first();
}

/** An org's keys, oldest first (revoked ones too: the CLI's `keys list` shows what exists). */
export async function listApiKeys(db: Knex, orgId: string): Promise<ApiKeyRow[]> {
  return db<ApiKeyRow>('api_keys').where({ org_id: orgId }).orderBy([{ column: 'created_at' }, { column: 'id' }]);
}

/** Marks a key revoked; returns the row, or undefined when it does not exist. */
export async function revokeApiKey(db: Knex | Knex.Transaction, id: string): Promise<ApiKeyRow | undefined> {
  const [row] = await db<ApiKeyRow>('api_keys')
    .where({ id })
    .update({ revoked_at: db.raw('coalesce(revoked_at, now())') as unknown as Date })
    .returning('*');
  return row;
}

/** Touches `last_used_at` unless it was set within the last minute (keeps writes rare). */
export async function touchApiKey(db: Knex, id: string): Promise<void> {
  await db('api_keys')
    .where({ id })
    .andWhere((q) => q.whereNull('last_used_at').orWhere('last_used_at', '<', db.raw("now() - interval '60 seconds'")))
    .update({ last_used_at: db.fn.now() });
}
