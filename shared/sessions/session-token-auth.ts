import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Actor, Caller } from '../audit/actor';
import type { ApiKeyService } from '../api-keys/api-keys.service';
import { hashSecret, SESSION_TOKEN_PREFIX } from '../api-keys/key-format';
import { invalidRequest, notFound, unauthenticated } from '../errors';
import { normalizePairingCode } from './pairing-code';
import { findSession, findSessionByTokenHash, type SessionRow } from './sessions.repository';

/**
 * Authentication of the older session-token API: `Authorization: Bearer dh_sess_…` acts on the
 * session that token was made with; an org API key acts on the session named by `code`.
 */

/** Who an older-API request acts for, and on which session. */
export interface LegacyCaller {
  orgId: string;
  /** The session the request acts on: the token's own, or the one `code` names. */
  session: SessionRow;
  via: 'session_token' | 'api_key';
  /** Recorded in the audit log: null for a session token (the spec's "made with a session token"). */
  actor: Actor;
  /** The caller as `TasksService` takes it: the org, and the actor to record. */
  tasksAuth: Caller;
}

/** `dh_sess_`, 32 random base62 characters and a 6-character checksum (see key-format.ts). */
const SESSION_TOKEN_SHAPE = /^dh_sess_[0-9A-Za-z]{38}$/;
const BEARER = /^Bearer\s+(\S+)\s*$/i;

/**
 * True when the session's code and token no longer work: expired by the team or the sweep, or
 * past its `expires_at` while not connected (the sweep may not have run yet).
 */
export function isSessionExpired(row: Pick<SessionRow, 'status' | 'expires_at'>, now: Date): boolean {
  if (row.status === 'expired') return true;
  return row.status !== 'connected' && row.expires_at !== null && row.expires_at.getTime() <= now.getTime();
}

export interface SessionTokenAuthDeps {
  db: Knex;
  clock: Clock;
  apiKeys: Pick<ApiKeyService, 'authenticate'>;
}

export class SessionTokenAuth {
  constructor(private readonly deps: SessionTokenAuthDeps) {}

  /**
   * Resolves the `Authorization` header (and `code`, needed with an API key) to its caller, or
   * throws: 401 for a missing, unknown or expired session token or a bad API key; 400 for an API
   * key without `code`, or a `code` other than the session token's own; 404 for a code the API
   * key's org does not have, or that belongs to a machine session.
   */
  async authenticate(header: string | undefined, code: string | undefined): Promise<LegacyCaller> {
    if (!header) {
      throw unauthenticated('Missing session token: send Authorization: Bearer <SESSION_TOKEN> (or an org API key with code in the body)');
    }
    const token = BEARER.exec(header)?.[1];
    if (token?.startsWith(SESSION_TOKEN_PREFIX)) return this.bySessionToken(token, code);
    // Anything else is an org API key (its service refuses malformed, unknown and revoked keys).
    const auth = await this.deps.apiKeys.authenticate(header);
    if (code === undefined) throw invalidRequest('code is required with an org API key: it names the session to act on');
    const normalized = normalizePairingCode(code);
    const session = normalized ? await findSession(this.deps.db, auth.orgId, normalized) : undefined;
    // A machine session is the service's own: the older API does not know it (it has no token either).
    if (!session || session.kind !== 'person') throw notFound(`No session ${code}`);
    return { orgId: auth.orgId, session, via: 'api_key', actor: auth.actor, tasksAuth: auth };
  }

  /** As `authenticate`, but a request without `Authorization` is anonymous (null). */
  async authenticateOptional(header: string | undefined, code: string | undefined): Promise<LegacyCaller | null> {
    return header ? this.authenticate(header, code) : null;
  }

  private async bySessionToken(token: string, code: string | undefined): Promise<LegacyCaller> {
    // A token of the wrong shape cannot match: refused without a query.
    const session = SESSION_TOKEN_SHAPE.test(token) ? await findSessionByTokenHash(this.deps.db, hashSecret(token)) : undefined;
    if (!session) throw unauthenticated('Invalid session token');
    if (isSessionExpired(session, this.deps.clock.now())) {
      throw unauthenticated('This session has expired: its code and token no longer work');
    }
    if (code !== undefined && normalizePairingCode(code) !== session.code) {
      throw invalidRequest(`code ${code} is not this session token's session; a session token acts on its own session (leave code out)`);
    }
    const tasksAuth: Caller = { orgId: session.org_id, actor: null };
    return { orgId: session.org_id, session, via: 'session_token', actor: null, tasksAuth };
  }
}
