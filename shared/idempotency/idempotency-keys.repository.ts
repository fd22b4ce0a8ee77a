import type { Knex } from '../db/knex';

/** A row of `idempotency_keys` (migrations/20261128000001_idempotency_keys.ts). */
export interface IdempotencyKeyRow {
  org_id: string;
  operation: string;
  key_hash: string;
  request_hash: string;
  claim_id: string;
  locked_until: Date | null;
  /** The first answer, encrypted; null while the first request is in progress. */
  response: Buffer | null;
  created_at: Date;
  expires_at: Date;
}

export interface IdempotencyClaim {
  orgId: string;
  operation: string;
  keyHash: string;
  requestHash: string;
  claimId: string;
  leaseMs: number;
  keepMs: number;
}

/** SQL of `idempotency_keys`. Times are PostgreSQL's, which every process shares. */
export class IdempotencyKeysRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Takes the key for one request: inserts its row, or takes over one that expired or whose
   * claim was abandoned (its lease passed with no answer). Returns whether this request holds it;
   * the primary key makes two concurrent claims of one key yield one holder.
   */
  async claim(claim: IdempotencyClaim): Promise<boolean> {
    const result = await this.db.raw<{ rows: unknown[] }>(
      `insert into idempotency_keys (org_id, operation, key_hash, request_hash, claim_id, locked_until, response, created_at, expires_at)
       values (?, ?, ?, ?, ?, now() + (? * interval '1 millisecond'), null, now(), now() + (? * interval '1 millisecond'))
       on conflict (org_id, operation, key_hash) do update
         set request_hash = excluded.request_hash, claim_id = excluded.claim_id, locked_until = excluded.locked_until,
             response = null, created_at = excluded.created_at, expires_at = excluded.expires_at
         where idempotency_keys.expires_at <= now()
            or (idempotency_keys.response is null and idempotency_keys.locked_until <= now())
       returning 1`,
      [claim.orgId, claim.operation, claim.keyHash, claim.requestHash, claim.claimId, claim.leaseMs, claim.keepMs],
    );
    return result.rows.length === 1;
  }

  /** The live row of a key (not expired), or null. */
  async find(orgId: string, operation: string, keyHash: string): Promise<IdempotencyKeyRow | null> {
    const row = await this.db<IdempotencyKeyRow>('idempotency_keys')
      .where({ org_id: orgId, operation, key_hash: keyHash })
      .andWhereRaw('expires_at > now()')
      .first();
    return row ?? null;
  }

  /** Records the answer of the request holding the claim. */
  async complete(orgId: string, operation: string, keyHash: string, claimId: string, response: Buffer): Promise<void> {
    await this.db('idempotency_keys').where({ org_id: orgId, operation, key_hash: keyHash, claim_id: claimId }).update({ response, locked_until: null });
  }

  /** Gives the key up after the request holding it failed: a retry runs again. */
  async release(orgId: string, operation: string, keyHash: string, claimId: string): Promise<void> {
    await this.db('idempotency_keys').where({ org_id: orgId, operation, key_hash: keyHash, claim_id: claimId }).whereNull('response').delete();
  }

  /** Deletes expired rows, a batch at a time; returns how many. */
  async deleteExpired(limit = 1000): Promise<number> {
    const result = await this.db.raw<{ rowCount: number }>(
      `delete from idempotency_keys where ctid in (select ctid from idempotency_keys where expires_at <= now() limit ?)`,
      [limit],
    );
    return result.rowCount;
  }
}
