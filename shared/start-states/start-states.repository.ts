import { runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import { rowFromJson } from '../db/timestamps';
import { auditRow, changeAudited, INSERT_AUDIT_ROW, type AuditEntryInput } from '../audit/audit.repository';
import { CASES_USING_START_STATE } from '../test-cases/test-cases.repository';
import { paginate, type Page, type PageRequest } from '../pagination';
import type { StartStateRow } from './start-state-rows';

type Db = Knex | Knex.Transaction;

const json = (value: unknown) => JSON.stringify(value) as never;

/** A new state and its audit row, in one statement. Prepared: every start state's create writes one. */
export async function insertStartState(
  db: Db,
  row: Omit<StartStateRow, 'seq' | 'created_at' | 'updated_at' | 'deleted_at' | 'version' | 'runner_id' | 'labels' | 'error' | 'task_id' | 'machine_attempts'> & Partial<Pick<StartStateRow, 'runner_id' | 'labels'>>,
  audit: AuditEntryInput,
): Promise<StartStateRow> {
  const entry = auditRow(audit);
  const [inserted] = await runPrepared<{ state: object }>(db, INSERT_START_STATE, [
    row.id,
    row.org_id,
    row.name,
    row.description,
    row.from_id,
    row.method,
    row.script,
    row.instruction,
    row.agent_id,
    row.status,
    row.image,
    json(row.from_disk),
    row.os,
    row.runner_id ?? null,
    json(row.labels ?? []),
    json(row.metadata),
    row.machine_id,
    row.machine_id ? 1 : 0,
    row.view_token,
    row.view_expires_at,
    entry.id,
    entry.org_id,
    entry.actor,
    entry.action,
    entry.object_type,
    entry.object_id,
    entry.data,
    entry.request_id,
  ]);
  return rowFromJson<StartStateRow>(inserted!.state, START_STATE_TIMESTAMPS);
}

const INSERT_START_STATE: PreparedStatement = {
  name: 'start-states:insert',
  text: `with inserted as (
       insert into start_states as s (id, org_id, name, description, from_id, method, script, instruction, agent_id, status, image, from_disk,
                                      os, runner_id, labels, metadata, machine_id, machine_attempts, view_token, view_expires_at)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12::jsonb, $13, $14, $15::jsonb, $16::jsonb, $17, $18, $19, $20)
       returning s.*),
     audited as (
       ${INSERT_AUDIT_ROW}
       select $21, $22, $23::jsonb, $24, $25, $26, $27::jsonb, $28 from inserted)
     select row_to_json(i) as state from inserted i`,
};

/** One of the org's start states (not deleted); `lock` takes its row FOR UPDATE. Prepared: every open, save, change and delete reads one. */
export async function findStartState(db: Db, orgId: string, id: string, lock = false): Promise<StartStateRow | undefined> {
  const [found] = await runPrepared<{ state: object }>(db, lock ? FIND_START_STATE_LOCKED : FIND_START_STATE, [orgId, id]);
  return found && rowFromJson<StartStateRow>(found.state, START_STATE_TIMESTAMPS);
}

const START_STATE_TIMESTAMPS = ['view_expires_at', 'created_at', 'updated_at', 'deleted_at'] as const;

/** The row as JSON, so that a column added by a migration under a running process changes nothing of the result. */
const FIND_START_STATE: PreparedStatement = {
  name: 'start-states:find',
  text: 'select row_to_json(s) as state from start_states s where s.org_id = $1 and s.id = $2 and s.deleted_at is null',
};

const FIND_START_STATE_LOCKED: PreparedStatement = {
  name: 'start-states:find-locked',
  text: `${FIND_START_STATE.text} for update of s`,
};

/** A start state by id, deleted or not (the flow's jobs carry ids only). */
export async function findStartStateById(db: Db, id: string, lock = false): Promise<StartStateRow | undefined> {
  const query = db<StartStateRow>('start_states').where({ id }).first();
  return lock ? query.forUpdate() : query;
}

export async function findStartStateByViewToken(db: Db, token: string): Promise<StartStateRow | undefined> {
  return db<StartStateRow>('start_states').where({ view_token: token, status: 'open' }).whereNull('deleted_at').first();
}

export async function findStartStateByTask(db: Db, taskId: string): Promise<StartStateRow | undefined> {
  return db<StartStateRow>('start_states').where({ task_id: taskId }).first();
}

/** Changes a state; with `audit`, its audit row is written by the same statement. */
export async function updateStartState(db: Db, id: string, changes: Partial<StartStateRow>, audit?: AuditEntryInput): Promise<StartStateRow> {
  const fields: Record<string, unknown> = { ...changes, updated_at: db.fn.now() };
  for (const key of ['metadata', 'labels', 'from_disk'] as const) if (key in changes) fields[key] = json(changes[key]);
  const update = db<StartStateRow>('start_states').where({ id }).update(fields).returning('*');
  const [row] = audit ? await changeAudited<StartStateRow>(db, update, audit) : await update;
  return row!;
}

/**
 * Deletes the org's state `id` unless live test cases start from it, with its audit row, in one
 * statement; returns the ids of those cases (at most 100; none when it was deleted). Call it with
 * the state's row locked by an earlier statement of the transaction (`findStartState`, `lock`): a
 * request that adds a case share-locks that row first, so every case it adds is committed by the
 * time this statement starts, and seen by it.
 */
export async function deleteStartStateUnlessUsed(db: Db, orgId: string, id: string, audit: Pick<AuditEntryInput, 'actor' | 'action' | 'data' | 'requestId'>): Promise<string[]> {
  const entry = auditRow({ ...audit, orgId, objectType: 'start_state', objectId: id });
  const [row] = await runPrepared<{ used_by: string[] }>(db, DELETE_START_STATE_UNLESS_USED, [orgId, id, entry.id, entry.actor, entry.action, entry.data, entry.request_id]);
  return row!.used_by;
}

const DELETE_START_STATE_UNLESS_USED: PreparedStatement = {
  name: 'start-states:delete-unless-used',
  text: `with used as (${CASES_USING_START_STATE}),
     deleted as (
       update start_states set deleted_at = now(), view_token = null, view_expires_at = null, updated_at = now()
        where org_id = $1 and id = $2 and deleted_at is null and not exists (select 1 from used)
        returning id),
     audited as (
       ${INSERT_AUDIT_ROW}
       select $3, $1, $4::jsonb, $5, 'start_state', id, $6::jsonb, $7 from deleted)
     select array(select id from used order by seq) as used_by`,
};

export function listStartStates<T>(db: Knex, orgId: string, page: PageRequest, toObject: (row: StartStateRow) => T): Promise<Page<T>> {
  return paginate<StartStateRow & Record<string, unknown>, T>(db('start_states').where({ org_id: orgId }).whereNull('deleted_at'), page, toObject);
}

/**
 * States the sweep moves along, in case the job that should have was lost (Redis emptied): open
 * ones past their view's time, ones whose machine or task ended, and building or saving ones
 * quiet for `quietMs` (an answer whose `advance` was lost; advancing one that waits does nothing).
 */
export async function startStatesNeedingAttention(db: Db, quietMs: number, limit: number): Promise<string[]> {
  const { rows } = await db.raw<{ rows: Array<{ id: string }> }>(
    `select s.id from start_states s
      where s.deleted_at is null and (
        (s.status = 'open' and s.view_expires_at <= now())
        or (s.status in ('building', 'open', 'saving') and exists (
              select 1 from machines m where m.id = s.machine_id and m.status in ('failed', 'destroyed')))
        or (s.status = 'building' and s.task_id is not null and exists (
              select 1 from tasks t where t.id = s.task_id and t.status in ('completed', 'failed', 'stopped')))
        or (s.status in ('building', 'saving') and s.updated_at < now() - (? * interval '1 millisecond')))
      limit ?`,
    [quietMs, limit],
  );
  return rows.map((row) => row.id);
}

/** Open states whose `view_expires_at` has passed, the earliest first (index `start_states_open_until`). Prepared: worker-evals asks every second. */
export async function openStatesPastTheirTime(db: Db, limit: number): Promise<string[]> {
  const rows = await runPrepared<{ id: string }>(db, OPEN_STATES_PAST_THEIR_TIME, [limit]);
  return rows.map((row) => row.id);
}

const OPEN_STATES_PAST_THEIR_TIME: PreparedStatement = {
  name: 'start-states:open-past-their-time',
  text: "select id from start_states where status = 'open' and view_expires_at <= now() and deleted_at is null order by view_expires_at limit $1",
};

/**
 * The images the org's runners (its own and the cloud ones, not revoked) report, each with the
 * labels of the runners that have it and when the first of them was registered.
 */
export async function visibleImages(db: Db, orgId: string): Promise<Array<{ image: string; labels: string[]; created_at: Date; updated_at: Date | null }>> {
  const { rows } = await db.raw(
    `select i.image,
            coalesce(jsonb_agg(distinct l.label) filter (where l.label is not null), '[]') as labels,
            min(r.created_at) as created_at, max(r.last_seen_at) as updated_at
       from runners r
       cross join lateral jsonb_array_elements_text(r.images) as i(image)
       left join lateral jsonb_array_elements_text(r.labels) as l(label) on true
      where r.revoked_at is null and (r.org_id = ? or r.scope = 'cloud')
      group by i.image order by i.image`,
    [orgId],
  );
  return rows;
}

/**
 * Whether a runner the org may use (its own or a cloud one, not revoked) has the image, and
 * whether one that has it is online now: one read for a new machine's checks.
 */
export async function imageAvailability(db: Db, orgId: string, image: string, offlineAfterMs: number): Promise<{ known: boolean; online: boolean }> {
  const [row] = await runPrepared<{ known: boolean; online: boolean }>(db, IMAGE_AVAILABILITY, [offlineAfterMs, orgId, image]);
  return { known: row!.known, online: row!.online };
}

/** Prepared: every new machine asks it. */
const IMAGE_AVAILABILITY: PreparedStatement = {
  name: 'start-states:image-availability',
  text: `select count(*) > 0 as known,
            coalesce(bool_or(connection_id is not null and last_seen_at > now() - ($1 * interval '1 millisecond')), false) as online
       from runners
      where revoked_at is null and (org_id = $2 or scope = 'cloud') and images ? $3`,
};
