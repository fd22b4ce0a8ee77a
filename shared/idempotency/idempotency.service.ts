import { createCipheriv, createDecipheriv, createHash, hkdfSync, randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { conflict, invalidRequest } from '../errors';
import type { Knex } from '../db/knex';
import { IdempotencyKeysRepository } from './idempotency-keys.repository';

/**
 * `Idempotency-Key` on the /v1 POSTs that create, as Stripe treats its idempotency keys: the same
 * key with the same request returns the first answer (also when both arrive at once: one object
 * is made); the same key with another request is a mistake the caller must hear about, 409
 * `idempotency_conflict`. Keys are per org and operation and live `KEEP_MS` (24 hours). A request
 * that fails keeps nothing: its retry runs again.
 */

/** How long a key is kept after its first use (documented in docs/api.md). */
export const KEEP_MS = 24 * 60 * 60 * 1000;
/** How long a request may hold a key before a retry may take it over (its process died). */
const LEASE_MS = 30_000;
export const MAX_KEY_LENGTH = 200;

export interface IdempotentRequest {
  orgId: string;
  /** The route's operationId: one key may be used once per operation. */
  operation: string;
  key: string;
  /** What makes two requests the same: path parameters and body. */
  request: unknown;
}

export interface IdempotentAnswer<T> {
  body: T;
  /** True when `body` is the first request's answer, given again. */
  replayed: boolean;
}

/** The `Idempotency-Key` header's value, checked: absent (undefined) or 1 to 200 characters. */
export function idempotencyKeyHeader(header: string | undefined): string | undefined {
  const key = header?.trim() || undefined;
  if (key !== undefined && key.length > MAX_KEY_LENGTH) throw invalidRequest(`Idempotency-Key must be at most ${MAX_KEY_LENGTH} characters`, { param: 'Idempotency-Key' });
  return key;
}

export class IdempotencyService {
  private readonly keys: IdempotencyKeysRepository;

  constructor(db: Knex) {
    this.keys = new IdempotencyKeysRepository(db);
  }

  /**
   * Runs `create` once per org, operation and key: a request with a key already answered gets
   * that answer back; one whose key is held by a request in progress waits for its answer.
   */
  async run<T>(request: IdempotentRequest, create: () => Promise<T>): Promise<IdempotentAnswer<T>> {
    const keyHash = sha256(`${request.orgId}\u0000${request.operation}\u0000${request.key}`);
    const requestHash = sha256(canonicalJson(request.request));
    const claimId = randomUUID();
    for (let wait = 20; ; wait = Math.min(wait * 2, 500)) {
      if (await this.keys.claim({ orgId: request.orgId, operation: request.operation, keyHash, requestHash, claimId, leaseMs: LEASE_MS, keepMs: KEEP_MS })) break;
      const held = await this.keys.find(request.orgId, request.operation, keyHash);
      if (!held) continue; // expired or released between the two statements: claim again
      if (held.request_hash !== requestHash) {
        throw conflict(
          `Idempotency-Key ${request.key} was already used with another request to ${request.operation}; use a new key for a new request`,
          'idempotency_conflict',
        );
      }
      if (held.response) return { body: open(held.response, request) as T, replayed: true };
      await sleep(wait);
    }
    let body: T;
    try {
      body = await create();
    } catch (error) {
      await this.keys.release(request.orgId, request.operation, keyHash, claimId);
      throw error;
    }
    await this.keys.complete(request.orgId, request.operation, keyHash, claimId, seal(body, request));
    return { body, replayed: false };
  }

  /** Deletes keys past their 24 hours (the maintenance sweep); returns how many. */
  deleteExpired(): Promise<number> {
    return this.keys.deleteExpired();
  }
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** JSON with every object's keys in order: the same body however its fields were ordered. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value ?? null, (_key, node: unknown) =>
    node && typeof node === 'object' && !Array.isArray(node) ? Object.fromEntries(Object.entries(node).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : node,
  );
}

/**
 * The stored answer may carry a secret shown once (a runner's token, a session's token), so it is
 * encrypted (AES-256-GCM) with a key derived from the Idempotency-Key, which the table keeps only
 * as a hash: the database alone cannot read it.
 */
function cipherKey(request: IdempotentRequest): Buffer {
  return Buffer.from(hkdfSync('sha256', request.key, `${request.orgId}\u0000${request.operation}`, 'deskhand idempotent answer', 32));
}

function seal(body: unknown, request: IdempotentRequest): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', cipherKey(request), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(body), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

function open(stored: Buffer, request: IdempotentRequest): unknown {
  const decipher = createDecipheriv('aes-256-gcm', cipherKey(request), stored.subarray(0, 12));
  decipher.setAuthTag(stored.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(stored.subarray(28)), decipher.final()]).toString('utf8'));
}
