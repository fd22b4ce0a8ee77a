import type { Knex } from '../db/knex';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { generateSecret } from '../http';
import { findToolSecret, insertToolSecretIfMissing, replaceToolSecret, type ToolSecretRow } from './tool-secrets.repository';

/**
 * The org's HTTP-tool signing secret (spec: Outgoing HTTP tool call). Every call is signed with
 * it, the same way webhooks are signed with the webhook secret. It has the `whsec_` prefix, as
 * the spec's signing rule names, and is always readable by the org (`GET /v1/tool_secret`).
 */

/** The tool secret as the API returns it (`object: tool_secret`; the spec leaves its shape open). */
export interface ToolSecretObject {
  object: 'tool_secret';
  secret: string;
  created_at: string;
  rotated_at: string | null;
}

function toObject(row: ToolSecretRow): ToolSecretObject {
  return { object: 'tool_secret', secret: row.secret, created_at: row.created_at.toISOString(), rotated_at: row.rotated_at?.toISOString() ?? null };
}

/** Makes the org's tool secret if it has none (inside the org-creation transaction, or lazily). */
export async function ensureToolSecret(db: Knex | Knex.Transaction, orgId: string): Promise<void> {
  await insertToolSecretIfMissing(db, orgId, generateSecret());
}

/** The secret tool calls of `orgId` are signed with, made on first use for orgs older than the table. */
export async function currentToolSecret(db: Knex, orgId: string): Promise<string> {
  return (await readToolSecret(db, orgId)).secret;
}

async function readToolSecret(db: Knex | Knex.Transaction, orgId: string): Promise<ToolSecretRow> {
  const row = await findToolSecret(db, orgId);
  if (row) return row;
  await ensureToolSecret(db, orgId);
  return (await findToolSecret(db, orgId))!;
}

export class ToolSecretService {
  constructor(private readonly deps: { db: Knex }) {}

  async get(orgId: string): Promise<ToolSecretObject> {
    return toObject(await readToolSecret(this.deps.db, orgId));
  }

  /** Replaces the secret; the next call is signed with the new one, the old one stops at once. */
  async rotate(orgId: string, context: { actor: Actor; requestId?: string | null }): Promise<ToolSecretObject> {
    return this.deps.db.transaction(async (trx) => {
      await ensureToolSecret(trx, orgId);
      const row = await replaceToolSecret(trx, orgId, generateSecret());
      await recordAudit(trx, {
        orgId,
        actor: context.actor,
        action: 'tool_secret.rotated',
        objectType: 'tool_secret',
        objectId: orgId,
        requestId: context.requestId,
      });
      return toObject(row);
    });
  }
}
