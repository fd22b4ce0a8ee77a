import type { Knex } from '../db/knex';
import type { DeskhandEnv } from '../config';
import type { Logger } from '../logger';
import type { Notifier } from '../notifier';
import type { Actor } from '../audit/actor';
import type { AuthContext } from '../auth/roles';
import { recordAudit } from '../audit/audit.repository';
import { newId } from '../ids';
import { notFound, unauthenticated } from '../errors';
import { displayPrefix, generateApiKey, hashSecret, isWellFormedApiKey, RUNNER_TOKEN_PREFIX, SESSION_TOKEN_PREFIX } from './key-format';
import { findApiKey, findApiKeyByHash, insertApiKey, listApiKeys, revokeApiKey, touchApiKey, type ApiKeyRow } from './api-keys.repository';

export type { AuthContext } from '../auth/roles';

/** An API key as shown to its owner; `key` (the secret) only in the create response. */
export interface ApiKeyObject {
  object: 'api_key';
  key_id: string;
  org_id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

const REVOKED_CHANNEL = 'api-key-revoked';
/** How long a verified key is trusted without asking PostgreSQL again; revocation clears it at once. */
const CACHE_TTL_MS = 30_000;
const CACHE_MAX = 10_000;

export class ApiKeyService {
  /** Verified keys by the key itself (this process has seen them in requests anyway). */
  private readonly cache = new Map<string, { auth: AuthContext; hash: string; expires: number }>();
  private listening: Promise<unknown> | null = null;

  constructor(
    private readonly deps: { db: Knex; env: DeskhandEnv; notifier: Notifier; logger: Logger },
  ) {}

  /**
   * Creates a key for an org inside `trx`, with its audit row; returns the object and the
   * secret, shown once. A transaction, not any connection: the key and its audit row commit together.
   */
  async create(
    trx: Knex.Transaction,
    orgId: string,
    name: string,
    actor: Actor,
    requestId?: string,
  ): Promise<{ apiKey: ApiKeyObject; secret: string }> {
    const secret = generateApiKey(this.deps.env);
    const row = { id: newId('key'), org_id: orgId, name, prefix: displayPrefix(secret), hash: hashSecret(secret) };
    await insertApiKey(trx, row);
    await recordAudit(trx, { orgId, actor, action: 'api_key.created', objectType: 'api_key', objectId: row.id, data: { name, prefix: row.prefix }, requestId });
    const now = new Date().toISOString();
    return {
      apiKey: { object: 'api_key', key_id: row.id, org_id: orgId, name, prefix: row.prefix, created_at: now, last_used_at: null, revoked_at: null },
      secret,
    };
  }

  /** Creates a key for an org in a transaction of its own (`POST /v1/api_keys`); the secret is shown once. */
  async createForOrg(orgId: string, name: string, caller: { actor: Actor; requestId?: string }): Promise<{ apiKey: ApiKeyObject; secret: string }> {
    return this.deps.db.transaction((trx) => this.create(trx, orgId, name, caller.actor, caller.requestId));
  }

  /**
   * Revokes a key; every process stops accepting it at once. With `orgId` (the API), a key of
   * another org is not found, as if it did not exist. Revoking a revoked key changes nothing and
   * records nothing.
   */
  async revoke(keyId: string, actor: Actor, options: { orgId?: string; requestId?: string } = {}): Promise<ApiKeyObject> {
    const row = await this.deps.db.transaction(async (trx) => {
      const existing = await findApiKey(trx, keyId);
      if (!existing || (options.orgId !== undefined && existing.org_id !== options.orgId)) throw notFound(`No API key ${keyId}`);
      if (existing.revoked_at) return existing;
      const revoked = (await revokeApiKey(trx, keyId))!;
      await recordAudit(trx, { orgId: revoked.org_id, actor, action: 'api_key.revoked', objectType: 'api_key', objectId: keyId, data: { name: revoked.name, prefix: revoked.prefix }, requestId: options.requestId });
      return revoked;
    });
    this.forget(row.hash);
    await this.deps.notifier.publish(REVOKED_CHANNEL, row.hash);
    return toApiKeyObject(row);
  }

  /** An org's keys, revoked ones included, without their secrets (for the CLI's `keys list`). */
  async list(orgId: string): Promise<ApiKeyObject[]> {
    return (await listApiKeys(this.deps.db, orgId)).map(toApiKeyObject);
  }

  /** Starts listening for revocations made by other processes. */
  async listenForRevocations(): Promise<void> {
    this.listening ??= this.deps.notifier.subscribe(REVOKED_CHANNEL, (hash) => this.forget(hash));
    await this.listening;
  }

  private forget(hash: string): void {
    for (const [key, entry] of this.cache) if (entry.hash === hash) this.cache.delete(key);
  }

  /** The org a `Bearer <key>` header acts for when the key was verified recently, else null. */
  known(header: string | undefined): AuthContext | null {
    return header?.startsWith('Bearer ') ? this.verifiedRecently(header.slice(7)) : null;
  }

  private verifiedRecently(key: string): AuthContext | null {
    const cached = this.cache.get(key);
    return cached && cached.expires > Date.now() ? cached.auth : null;
  }

  /**
   * Resolves an `Authorization` header value to the org it acts for, or throws 401. Malformed
   * keys are refused by their checksum before any query.
   */
  async authenticate(header: string | undefined): Promise<AuthContext> {
    if (!header) throw unauthenticated('Missing API key: send Authorization: Bearer <API_KEY>');
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
    if (!match) throw unauthenticated('Authorization header must be "Bearer <API_KEY>"');
    const key = match[1]!;
    if (key.startsWith(SESSION_TOKEN_PREFIX)) {
      throw unauthenticated('Session tokens only work with the older session-token API; use an org API key for /v1');
    }
    if (key.startsWith(RUNNER_TOKEN_PREFIX)) {
      throw unauthenticated('Runner tokens only work for a runner connecting to the /runners namespace; use an org API key for /v1');
    }
    // A key seen in the last half minute skips the checksum, the hash and the query.
    const recent = this.verifiedRecently(key);
    if (recent) return recent;
    if (!isWellFormedApiKey(key, this.deps.env)) throw unauthenticated('Invalid API key');
    const hash = hashSecret(key);
    const row = await findApiKeyByHash(this.deps.db, hash);
    if (!row) throw unauthenticated('Invalid API key');
    if (row.revoked_at) throw unauthenticated('This API key has been revoked');
    const auth: AuthContext = {
      orgId: row.org_id,
      keyId: row.id,
      userId: null,
      role: 'admin',
      actor: { type: 'api_key', key_id: row.id, name: row.name, prefix: row.prefix },
    };
    if (this.cache.size >= CACHE_MAX) this.cache.clear();
    this.cache.set(key, { auth, hash, expires: Date.now() + CACHE_TTL_MS });
    touchApiKey(this.deps.db, row.id).catch((error) => this.deps.logger.warn({ err: error }, 'could not touch api key'));
    return auth;
  }
}

function toApiKeyObject(row: ApiKeyRow): ApiKeyObject {
  return {
    object: 'api_key',
    key_id: row.id,
    org_id: row.org_id,
    name: row.name,
    prefix: row.prefix,
    created_at: row.created_at.toISOString(),
    last_used_at: row.last_used_at?.toISOString() ?? null,
    revoked_at: row.revoked_at?.toISOString() ?? null,
  };
}
