import type { Knex } from '../db/knex';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { newId } from '../ids';
import type { ApiKeyObject, ApiKeyService } from '../api-keys/api-keys.service';
import { anyOrgExists, insertOrg, listOrgs, orgExists } from './orgs.repository';

export interface Org {
  object: 'org';
  org_id: string;
  name: string;
  created_at: string;
}

/** Work other domains do when an org is born (its default agent, its tool secret), in the same transaction. */
export type OrgCreatedHook = (trx: Knex.Transaction, orgId: string, actor: Actor) => Promise<void>;

export class OrgService {
  private readonly hooks: OrgCreatedHook[] = [];

  constructor(private readonly deps: { db: Knex; apiKeys: ApiKeyService }) {}

  onCreated(hook: OrgCreatedHook): void {
    this.hooks.push(hook);
  }

  /** Creates an org with its first API key; the key's secret is returned once. */
  async create(name: string, actor: Actor = null): Promise<{ org: Org; apiKey: ApiKeyObject; secret: string }> {
    const trimmed = name.trim();
    if (!trimmed || trimmed.length > 200) throw new Error('org name must be 1 to 200 characters');
    return this.deps.db.transaction(async (trx) => {
      const id = newId('org');
      const row = await insertOrg(trx, { id, name: trimmed });
      await recordAudit(trx, { orgId: id, actor, action: 'org.created', objectType: 'org', objectId: id, data: { name: trimmed } });
      for (const hook of this.hooks) await hook(trx, id, actor);
      const { apiKey, secret } = await this.deps.apiKeys.create(trx, id, 'Default key', actor);
      return { org: { object: 'org', org_id: row.id, name: row.name, created_at: row.created_at.toISOString() }, apiKey, secret };
    });
  }

  async exists(orgId: string): Promise<boolean> {
    return orgExists(this.deps.db, orgId);
  }

  /** Whether any org exists (the first development start creates one). */
  async any(): Promise<boolean> {
    return anyOrgExists(this.deps.db);
  }

  /** Every org, oldest first. */
  async list(): Promise<Org[]> {
    return (await listOrgs(this.deps.db)).map((row) => ({ object: 'org', org_id: row.id, name: row.name, created_at: row.created_at.toISOString() }));
  }
}
