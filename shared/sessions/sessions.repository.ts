import { runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import { keyedReader } from '../db/batched-reads';
import { preparedPage, type Page, type PageRequest } from '../pagination';
import { rowFromJson, type WithIsoTimestamps } from '../db/timestamps';
import type { Capabilities, DeviceInfo } from '../desktop/protocol';
import { newPairingCode } from './pairing-code';
import { auditRow, changeAudited, INSERT_AUDIT_ROW, type AuditEntryInput } from '../audit/audit.repository';
import { defaultAgentIdOf } from '../agents/agents.repository';

export type SessionStatus = 'waiting' | 'connected' | 'disconnected' | 'expired';
/**
 * `person`: made through the API for a person's desktop app (invite link, older-API token).
 * `machine`: minted by the service for a computer a runner makes (neither); see docs/desktop-protocol.md.
 */
export type SessionKind = 'person' | 'machine';

export interface SessionRow extends Record<string, unknown> {
  seq: number;
  code: string;
  org_id: string;
  agent_id: string;
  kind: SessionKind;
  /** What a machine session's maker calls it; null for person sessions. */
  label: string | null;
  /** Null exactly for machine sessions (the `sessions_kind` check). */
  token_hash: string | null;
  /** Null exactly for machine sessions (the `sessions_kind` check). */
  invite_url: string | null;
  status: SessionStatus;
  device: DeviceInfo | null;
  capabilities: Capabilities | null;
  metadata: Record<string, string>;
  connection_epoch: number;
  created_at: Date;
  paired_at: Date | null;
  last_active_at: Date | null;
  expires_at: Date | null;
  task_count: number;
  latest_task_id: string | null;
}

type Db = Knex | Knex.Transaction;

export type NewSessionRow = Omit<SessionRow, 'seq' | 'connection_epoch' | 'task_count' | 'latest_task_id' | 'paired_at' | 'last_active_at' | 'device' | 'capabilities' | 'status' | 'kind' | 'label'> &
  Partial<Pick<SessionRow, 'kind' | 'label'>>;

/**
 * Inserts the session `rowFor` makes for a new pairing code, with the audit row `auditFor` makes
 * for it, in one statement (`withNewCode`).
 */
export async function insertSessionWithNewCode(db: Db, rowFor: (code: string) => NewSessionRow, auditFor: (code: string) => AuditEntryInput): Promise<SessionRow> {
  return withNewCode(async (code) => {
    const row = rowFor(code);
    const session = db<SessionRow>('sessions')
      .insert({ ...row, metadata: JSON.stringify(row.metadata) as unknown as Record<string, string> })
      .onConflict('code')
      .ignore()
      .returning('*');
    const [inserted] = await changeAudited<SessionRow>(db, session, auditFor(code));
    return inserted;
  });
}

/**
 * A machine's session (`kind` machine: no token, no invite), in one prepared statement
 * (`withNewCode`). Without `agentId` its agent is the org's default, read by the same statement;
 * with no default agent the insert fails on `agent_id` (`isNoDefaultAgent`). No audit row: the
 * org's audit log records what people and keys change, and a machine's session belongs to the
 * try (or start state build) that made it, which records it (docs/desktop-protocol.md, "Session kinds").
 */
export async function insertMachineSession(
  db: Db,
  row: { orgId: string; agentId: string | null; label: string | null; metadata: Record<string, string>; createdAt: Date },
): Promise<SessionRow> {
  return withNewCode(async (code) => {
    const [inserted] = await runPrepared<{ session: SessionJson }>(db, INSERT_MACHINE_SESSION, [code, row.orgId, row.agentId, row.label, JSON.stringify(row.metadata), row.createdAt]);
    return inserted && sessionFromJson(inserted.session);
  });
}

const INSERT_MACHINE_SESSION: PreparedStatement = {
  name: 'sessions:insert-machine',
  text: `insert into sessions as s (code, org_id, agent_id, kind, label, token_hash, invite_url, metadata, created_at, expires_at)
       select $1, $2, coalesce($3, (${defaultAgentIdOf('$2')})), 'machine', $4, null, null, $5::jsonb, $6, null
       on conflict (code) do nothing
       returning row_to_json(s) as session`,
};

/** What PostgreSQL answers when a machine session finds no default agent to take: a null `agent_id`. */
export function isNoDefaultAgent(error: unknown): boolean {
  const { code, column } = error as { code?: string; column?: string };
  return code === '23502' && column === 'agent_id';
}

/**
 * Draws a pairing code and runs `insert` with it. A taken code (a collision, very rare) inserts
 * nothing (`ON CONFLICT DO NOTHING`, and so no audit row), so a collision neither aborts the
 * caller's transaction nor costs a savepoint: another code is drawn.
 */
async function withNewCode(insert: (code: string) => Promise<SessionRow | undefined>): Promise<SessionRow> {
  for (let attempt = 0; ; attempt++) {
    const inserted = await insert(newPairingCode());
    if (inserted) return inserted;
    if (attempt >= 5) throw new Error('could not draw an unused pairing code in 6 attempts');
  }
}

export async function findSession(db: Db, orgId: string, code: string): Promise<SessionRow | undefined> {
  return db<SessionRow>('sessions').where({ org_id: orgId, code }).first();
}

/** By code alone: the desktop app knows only the code. */
export async function findSessionByCode(db: Db, code: string, lock = false): Promise<SessionRow | undefined> {
  const query = db<SessionRow>('sessions').where({ code }).first();
  return lock ? query.forUpdate() : query;
}

export async function findSessionByTokenHash(db: Db, tokenHash: string): Promise<SessionRow | undefined> {
  return db<SessionRow>('sessions').where({ token_hash: tokenHash }).first();
}

export async function updateSession(db: Db, code: string, changes: Partial<SessionRow>): Promise<SessionRow> {
  const values: Record<string, unknown> = { ...changes };
  for (const key of ['device', 'capabilities', 'metadata'] as const) {
    if (values[key] !== undefined && values[key] !== null) values[key] = JSON.stringify(values[key]);
  }
  const [row] = await db<SessionRow>('sessions').where({ code }).update(values).returning('*');
  return row!;
}

/**
 * Connects the computer that presents `code` (a reconnect included) to a session of `kind`, in one
 * statement: the next connection epoch, its device and capabilities, no idle expiry while
 * connected. Undefined when no session of that kind has the code, or it expired, or it is past its
 * expiry while not connected (`findSessionByCode` tells which).
 */
export async function connectSession(db: Db, code: string, now: Date, computer: { device: DeviceInfo; capabilities: Capabilities }, kind: SessionKind): Promise<SessionRow | undefined> {
  const [row] = await runPrepared<{ session: SessionJson }>(db, CONNECT_SESSION, [code, kind, JSON.stringify(computer.device), JSON.stringify(computer.capabilities), now]);
  return row && sessionFromJson(row.session);
}

const CONNECT_SESSION: PreparedStatement = {
  name: 'sessions:connect',
  text: `update sessions s set status = 'connected', connection_epoch = s.connection_epoch + 1, device = $3::jsonb, capabilities = $4::jsonb,
            paired_at = coalesce(s.paired_at, $5), last_active_at = $5, expires_at = null
      where s.code = $1 and s.kind = $2 and s.status <> 'expired' and (s.expires_at is null or s.status = 'connected' or s.expires_at > $5)
      returning row_to_json(s) as session`,
};

/**
 * The computer of connection `epoch` went offline: the session is disconnected, in one statement,
 * unless it is no longer connected or a newer connection holds it (undefined then). A person's
 * session expires at `idleExpiresAt` unless the computer comes back; a machine's does not idle out.
 */
export async function disconnectSession(db: Db, code: string, epoch: number, now: Date, idleExpiresAt: Date): Promise<SessionRow | undefined> {
  const [row] = await runPrepared<{ session: SessionJson }>(db, DISCONNECT_SESSION, [code, epoch, now, idleExpiresAt]);
  return row && sessionFromJson(row.session);
}

const DISCONNECT_SESSION: PreparedStatement = {
  name: 'sessions:disconnect',
  text: `update sessions s set status = 'disconnected', last_active_at = $3, expires_at = case when s.kind = 'person' then $4::timestamptz end
      where s.code = $1 and s.status = 'connected' and s.connection_epoch = $2
      returning row_to_json(s) as session`,
};

/**
 * Ends the session with `code` of the org and kind given, in one statement: expired now, its
 * connection's epoch moved on, and for a person's session its audit row (`session.expired`)
 * written with it (a machine's session is its try's, which records it: no audit row). Undefined
 * when the org has no such session; `changed` false when it had expired already. The row lock
 * taken first makes a second end, at the same time, find it expired.
 */
export async function expireSession(
  db: Db,
  code: string,
  owner: { orgId: string; kind: SessionKind },
  now: Date,
  audit: Pick<AuditEntryInput, 'actor' | 'data' | 'requestId'>,
): Promise<{ row: SessionRow; changed: boolean; wasConnected: boolean } | undefined> {
  const entry = auditRow({ ...audit, orgId: owner.orgId, action: 'session.expired', objectType: 'session', objectId: code });
  const [found] = await runPrepared<{ ended: SessionJson | null; current: SessionJson; was: SessionRow['status'] }>(db, EXPIRE_SESSION, [
    code,
    owner.orgId,
    owner.kind,
    now,
    entry.id,
    entry.actor,
    entry.action,
    entry.object_type,
    entry.data,
    entry.request_id,
  ]);
  if (!found) return undefined;
  return { row: sessionFromJson(found.ended ?? found.current), changed: found.ended !== null, wasConnected: found.ended !== null && found.was === 'connected' };
}

const EXPIRE_SESSION: PreparedStatement = {
  name: 'sessions:expire',
  text: `with target as (select * from sessions where code = $1 and org_id = $2 and kind = $3 for update),
     ended as (
       update sessions s set status = 'expired', expires_at = $4, connection_epoch = s.connection_epoch + 1
       from target t where s.code = t.code and t.status <> 'expired'
       returning s.*),
     audited as (
       ${INSERT_AUDIT_ROW}
       select $5, org_id, $6::jsonb, $7, $8, code, $9::jsonb, $10 from ended where kind = 'person')
     select (select row_to_json(e) from ended e) as ended, row_to_json(t) as current, t.status as was from target t`,
};

/** A session row as PostgreSQL's `row_to_json` writes it: the prepared statements above return their rows so, which a migration adding a column does not change. */
type SessionJson = Record<string, unknown> & { created_at: string; paired_at: string | null; last_active_at: string | null; expires_at: string | null };

function sessionFromJson(json: SessionJson): SessionRow {
  return rowFromJson<SessionRow>(json, ['created_at', 'paired_at', 'last_active_at', 'expires_at']);
}

/** A task was created on the session: it counts, and is the session's latest. */
export async function recordSessionTask(db: Db, code: string, taskId: string): Promise<void> {
  await db('sessions').where({ code }).update({ task_count: db.raw('task_count + 1'), latest_task_id: taskId });
}

/** Records activity of a connected computer. */
export async function touchSession(db: Db, code: string, now: Date): Promise<void> {
  await db('sessions').where({ code, status: 'connected' }).update({ last_active_at: now });
}

export interface SessionFilter {
  status?: SessionStatus;
  agentId?: string;
}

/**
 * The columns the API's Session object is made of (not the token's hash, the capabilities, the
 * epoch), and the kind: the API shows person sessions only.
 */
export const SESSION_OBJECT_COLUMNS = [
  'seq', 'code', 'org_id', 'agent_id', 'kind', 'invite_url', 'status', 'device', 'metadata', 'created_at', 'paired_at', 'last_active_at', 'expires_at', 'task_count', 'latest_task_id',
] as const;
/** Of those, the timestamps: the API's reads have them as its text (shared/db/timestamps.ts). */
const SESSION_OBJECT_TIMESTAMPS = ['created_at', 'paired_at', 'last_active_at', 'expires_at'] as const;
export type SessionObjectRow = WithIsoTimestamps<Pick<SessionRow, (typeof SESSION_OBJECT_COLUMNS)[number]>, (typeof SESSION_OBJECT_TIMESTAMPS)[number]>;

/** The org's session as its API object needs it, with the other reads of sessions of the same turn in one prepared statement. */
export function readSessionObject(db: Knex, orgId: string, code: string): Promise<SessionObjectRow | undefined> {
  return keyedReader<SessionObjectRow>(db, { name: 'session-objects', table: 'sessions', columns: SESSION_OBJECT_COLUMNS, timestamps: SESSION_OBJECT_TIMESTAMPS, idColumn: 'code' }).read(orgId, code);
}

export function listSessions<T>(db: Knex, orgId: string, filter: SessionFilter, page: PageRequest, toObject: (row: SessionObjectRow) => T): Promise<Page<T>> {
  return preparedPage<SessionObjectRow, T>(
    db,
    { table: 'sessions', columns: SESSION_OBJECT_COLUMNS, timestamps: SESSION_OBJECT_TIMESTAMPS },
    orgId,
    // Machine sessions are the service's own (docs/desktop-protocol.md, "Session kinds").
    { kind: 'person', status: filter.status || undefined, agent_id: filter.agentId || undefined },
    page,
    toObject,
  );
}

/**
 * Sessions whose computer went offline at or before `before` (and has not said hello since) that
 * still have a queued or running task; driven by the tasks' partial index of active tasks.
 */
export async function findSessionsAwayWithTask(db: Db, before: Date, limit = 200): Promise<SessionRow[]> {
  return db<SessionRow>('sessions')
    .join('tasks', 'tasks.session_id', 'sessions.code')
    .whereIn('tasks.status', ['queued', 'running'])
    .andWhere('sessions.status', 'disconnected')
    .andWhere('sessions.last_active_at', '<=', before)
    .orderBy('sessions.last_active_at')
    .limit(limit)
    .select('sessions.*');
}

/** Sessions due to expire at `now` (unused codes and computers gone for 72 hours), locked. */
export async function expireDueSessions(db: Db, now: Date, limit = 500): Promise<SessionRow[]> {
  return db<SessionRow>('sessions')
    .whereIn('code', function () {
      this.select('code').from('sessions').whereIn('status', ['waiting', 'disconnected']).andWhere('expires_at', '<=', now).limit(limit).forUpdate().skipLocked();
    })
    .update({ status: 'expired' })
    .returning('*');
}

/** What a task's first step needs of its session's computer: whether it is there, and what it is. */
export type SessionComputer = Pick<SessionRow, 'status' | 'device' | 'capabilities' | 'last_active_at'>;

/** The computer of the session a task is about to begin on (read in the task's transaction). */
export async function findSessionComputer(db: Db, code: string): Promise<SessionComputer | undefined> {
  return db<SessionRow>('sessions').where({ code }).first('status', 'device', 'capabilities', 'last_active_at');
}

/**
 * Whether the session's computer is connected, and when it was last heard from, read under a
 * share lock: a hello (which takes the row FOR UPDATE) either came before this read or waits
 * for the reader's transaction.
 */
export async function findSessionPresenceForShare(db: Knex.Transaction, code: string): Promise<Pick<SessionRow, 'status' | 'last_active_at'> | undefined> {
  return db<SessionRow>('sessions').where({ code }).forShare().first('status', 'last_active_at');
}
