import type { Knex } from '../db/knex';

type Db = Knex | Knex.Transaction;

export type RunnerScope = 'org' | 'cloud';

export interface RunnerRow {
  seq: number;
  id: string;
  /** Null exactly for cloud runners (the `runners_scope` check). */
  org_id: string | null;
  scope: RunnerScope;
  name: string;
  token_hash: string;
  token_prefix: string;
  provider: string | null;
  version: string | null;
  labels: string[];
  slots: number;
  busy: number;
  images: string[];
  connection_id: string | null;
  last_seen_at: Date | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** A row as the API reads it: with `online` worked out by PostgreSQL, whose clock every process shares. */
export interface RunnerReadRow extends RunnerRow {
  online: boolean;
  /** The machines the service placed on it that take a slot now (its `busy`; the service is the authority). */
  machines_busy: number;
}

/** What a runner reports of itself in its hello. */
export interface RunnerReport {
  provider: string;
  version: string;
  labels: string[];
  slots: number;
  busy: number;
  images: string[];
}

/**
 * Online: a connection holds the runner and its last heartbeat is younger than `offlineAfterMs`.
 * Worked out at read time, so a runner whose web process died (no `gone` ran) still turns
 * offline on every process within that time.
 */
const withOnline = (db: Db, offlineAfterMs: number) =>
  db.raw("(connection_id is not null and last_seen_at > now() - (? * interval '1 millisecond')) as online", [offlineAfterMs]);

/** Machines that take one of the runner's slots now (see `LIVE_MACHINE_STATUSES`). */
const machinesBusy = (db: Db) =>
  db.raw("(select count(*)::int from machines m where m.runner_id = runners.id and m.status in ('starting', 'running', 'stopping')) as machines_busy");

/** Runners an org may read: its own and the cloud ones, not revoked. */
function visibleTo(db: Db, orgId: string, offlineAfterMs: number) {
  return db<RunnerReadRow>('runners')
    .select('*', withOnline(db, offlineAfterMs), machinesBusy(db))
    .whereNull('revoked_at')
    .andWhere((q) => q.where({ org_id: orgId }).orWhere({ scope: 'cloud' }));
}

/** Inserts a new runner (never connected yet). */
export async function insertRunner(db: Db, row: Pick<RunnerRow, 'id' | 'org_id' | 'scope' | 'name' | 'token_hash' | 'token_prefix'>): Promise<RunnerRow> {
  const [inserted] = await db<RunnerRow>('runners').insert(row).returning('*');
  return inserted!;
}

/** The org's runners and the cloud runners, newest first. */
export async function listRunnersVisibleTo(db: Db, orgId: string, offlineAfterMs: number): Promise<RunnerReadRow[]> {
  return visibleTo(db, orgId, offlineAfterMs).orderBy('seq', 'desc');
}

/** One runner the org may read (its own or a cloud one, not revoked); undefined otherwise. */
export async function readRunnerVisibleTo(db: Db, orgId: string, runnerId: string, offlineAfterMs: number): Promise<RunnerReadRow | undefined> {
  return visibleTo(db, orgId, offlineAfterMs).andWhere({ id: runnerId }).first();
}

/** Marks a live runner revoked and lets go of its connection; undefined when there is no such live runner. */
export async function revokeRunner(db: Db, where: { id: string; org_id: string | null; scope: RunnerScope }): Promise<RunnerRow | undefined> {
  const [row] = await db<RunnerRow>('runners')
    .where(where)
    .whereNull('revoked_at')
    .update({ revoked_at: db.fn.now() as unknown as Date, connection_id: null })
    .returning('*');
  return row;
}

/** The runner with this token, revoked or not (to tell a revoked token from an unknown one). */
export async function findRunnerByTokenHash(db: Db, tokenHash: string): Promise<RunnerRow | undefined> {
  return db<RunnerRow>('runners').where({ token_hash: tokenHash }).first();
}

/**
 * Takes a hello: the live runner with this token is held by `connectionId` from now on, with
 * what it reported. Undefined when no live runner has the token (unknown or revoked): one
 * conditional statement, so that a revocation committing meanwhile is never overwritten.
 */
export async function connectRunner(db: Db, tokenHash: string, connectionId: string, report: RunnerReport): Promise<RunnerRow | undefined> {
  const [row] = await db<RunnerRow>('runners')
    .where({ token_hash: tokenHash })
    .whereNull('revoked_at')
    .update({
      connection_id: connectionId,
      provider: report.provider,
      version: report.version,
      labels: JSON.stringify(report.labels) as unknown as string[],
      slots: report.slots,
      busy: report.busy,
      images: JSON.stringify(report.images) as unknown as string[],
      last_seen_at: db.fn.now() as unknown as Date,
    })
    .returning('*');
  return row;
}

/** A heartbeat of the connection holding the runner; false when it no longer holds it (revoked, or a newer connection). */
export async function recordHeartbeat(db: Db, runnerId: string, connectionId: string, busy: number | undefined): Promise<boolean> {
  const changes: Record<string, unknown> = { last_seen_at: db.fn.now() };
  if (busy !== undefined) changes.busy = busy;
  const updated = await db('runners').where({ id: runnerId, connection_id: connectionId }).whereNull('revoked_at').update(changes);
  return updated > 0;
}

/** Whether `connectionId` still holds the live runner. */
export async function holdsRunner(db: Db, runnerId: string, connectionId: string): Promise<boolean> {
  const row = await db('runners').where({ id: runnerId, connection_id: connectionId }).whereNull('revoked_at').first('id');
  return row !== undefined;
}

/** Whether the runner has been revoked. */
export async function isRevoked(db: Db, runnerId: string): Promise<boolean> {
  const row = await db('runners').where({ id: runnerId }).whereNotNull('revoked_at').first('id');
  return row !== undefined;
}

/** The connection closed: the runner is offline at once, unless a newer connection holds it already. */
export async function releaseRunner(db: Db, runnerId: string, connectionId: string): Promise<void> {
  await db('runners').where({ id: runnerId, connection_id: connectionId }).update({ connection_id: null });
}

/** How many runners of its own the org has (not revoked). */
export async function countLiveRunnersOfOrg(db: Db, orgId: string): Promise<number> {
  const [{ count }] = await db('runners').where({ org_id: orgId }).whereNull('revoked_at').count<{ count: string }[]>({ count: '*' });
  return Number(count);
}

/** A runner's labels (revoked or not); none for an unknown runner. */
export async function findRunnerLabels(db: Db, runnerId: string): Promise<string[]> {
  const row = await db<RunnerRow>('runners').where({ id: runnerId }).first('labels');
  return row?.labels ?? [];
}
