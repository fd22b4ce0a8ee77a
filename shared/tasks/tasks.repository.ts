import { runPrepared, type Knex, type PreparedStatement } from '../db/knex';
import { keyedReader, listReader, type ListParameter } from '../db/batched-reads';
import { selectColumns } from '../db/timestamps';
import { preparedPage, type Page, type PageRequest } from '../pagination';
import { TASK_OBJECT_COLUMNS, TASK_OBJECT_TIMESTAMPS, type TaskEventRow, type TaskFrameRow, type NewTaskItem, type TaskItemRow, type TaskObjectRow, type TaskRow, type TaskStatus } from './task-rows';

// The row types live in ./task-rows.ts (no import cycle with the task object); their importers may keep reading them here.
export { TASK_OBJECT_COLUMNS };
export type { NewTaskItem, TaskEventRow, TaskFrameRow, TaskItemKind, TaskItemRow, TaskObjectRow, TaskPhase, TaskRow, TaskStatus } from './task-rows';

type Db = Knex | Knex.Transaction;

const JSON_COLUMNS = new Set(['agent_config', 'metadata', 'pending', 'queued_actions', 'turn_results', 'last_outcome', 'model_state', 'observation', 'guard_state']);

function toDbValues(values: Partial<TaskRow>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    out[key] = JSON_COLUMNS.has(key) && value !== null && value !== undefined ? JSON.stringify(value) : value;
  }
  return out;
}

export async function insertTask(db: Db, row: Partial<TaskRow>): Promise<TaskRow> {
  const [inserted] = await db('tasks').insert(toDbValues(row)).returning('*');
  return inserted as TaskRow;
}

export async function findTask(db: Db, orgId: string, id: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ org_id: orgId, id }).first();
}

/**
 * The org's task as its API object needs it: those columns only, with the other reads of tasks
 * of the same turn in one prepared statement (shared/db/batched-reads.ts). A running task's row
 * carries several kilobytes of the loop's JSON state (model state, the last observation, guard
 * state) that a read would otherwise fetch and parse for nothing.
 */
export function readTaskObject(db: Knex, orgId: string, id: string): Promise<TaskObjectRow | undefined> {
  return keyedReader<TaskObjectRow>(db, { name: 'task-objects', table: 'tasks', columns: TASK_OBJECT_COLUMNS, timestamps: TASK_OBJECT_TIMESTAMPS, idColumn: 'id' }).read(orgId, id);
}

/** By id alone: workers and the desktop gateway do not act for an org. */
export async function findTaskById(db: Db, id: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ id }).first();
}

/** The task with its row version, for a change that writes only if nobody changed it since. */
export async function readTaskForChange(db: Db, id: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ id }).first('*', db.raw('xmin::text as row_version'));
}

export async function lockTask(trx: Knex.Transaction, id: string): Promise<TaskRow | undefined> {
  return trx<TaskRow>('tasks').where({ id }).first().forUpdate();
}

const DATE_COLUMNS = ['phase_since', 'running_since', 'created_at', 'updated_at', 'started_at', 'ended_at'] as const;
/** Turns back into dates the date columns a task row (or part of one) has after a trip through JSON. */
export function reviveTaskDates(row: Record<string, unknown>): void {
  for (const column of DATE_COLUMNS) {
    if (column in row) row[column] = typeof row[column] === 'string' ? new Date(row[column] as string) : null;
  }
}

/** The org's task made by the request with this idempotency key (the API's `request_id`, kept in the column of that name). */
export async function findTaskByIdempotencyKey(db: Db, orgId: string, idempotencyKey: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ org_id: orgId, request_id: idempotencyKey }).first();
}

export async function findActiveTask(db: Db, sessionId: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ session_id: sessionId }).whereIn('status', ['queued', 'running']).first();
}

export interface TaskFilter {
  sessionId?: string;
  agentId?: string;
  status?: TaskStatus;
}

/** A page of the org's tasks, newest first: their object's columns only (not the loop's working state). */
export function listTasks<T>(db: Knex, orgId: string, filter: TaskFilter, page: PageRequest, toObject: (row: TaskObjectRow) => T): Promise<Page<T>> {
  return preparedPage<TaskObjectRow & { seq: number }, T>(
    db,
    { table: 'tasks', columns: [...TASK_OBJECT_COLUMNS, 'seq'], timestamps: TASK_OBJECT_TIMESTAMPS },
    orgId,
    { session_id: filter.sessionId || undefined, agent_id: filter.agentId || undefined, status: filter.status || undefined },
    page,
    toObject,
  );
}

/** Tasks that are queued or running and have not changed since `before`. */
export async function findQuietActiveTasks(db: Db, before: Date, limit = 200): Promise<TaskRow[]> {
  return db<TaskRow>('tasks').whereIn('status', ['queued', 'running']).andWhere('updated_at', '<', before).orderBy('updated_at').limit(limit);
}

/** Open approvals of running tasks whose `pending.expires_at` is at or before `now`, oldest first. */
export async function findOverdueApprovals(db: Db, now: Date, limit = 200): Promise<Array<{ task_id: string; approval_id: string }>> {
  const rows = await db('tasks')
    .where({ status: 'running' })
    .whereRaw("pending->>'type' = 'approval'")
    .whereRaw("(pending->>'expires_at')::timestamptz <= ?", [now])
    .orderByRaw("(pending->>'expires_at')::timestamptz")
    .limit(limit)
    .select('id', db.raw("pending->>'approval_id' as approval_id"));
  return rows.map((row: { id: string; approval_id: string }) => ({ task_id: row.id, approval_id: row.approval_id }));
}

// ---- events ----------------------------------------------------------------------------------

const EVENTS_FROM_JSON = `select task_id, cursor, type, message, data, ts from jsonb_to_recordset(?::jsonb)
  as e(task_id text, cursor int, type text, message text, data jsonb, ts timestamptz)`;
const eventsJson = (events: TaskEventRow[]) => JSON.stringify(events.map((event) => ({ ...event, ts: event.ts.toISOString() })));

/**
 * Writes a task's changes, its new events and a new frame in one statement (one round trip): the
 * events and the frame go in through data-modifying CTEs beside the UPDATE. Returns the updated row.
 */
export async function updateTaskWithEvents(trx: Knex.Transaction, id: string, changes: Partial<TaskRow>, events: TaskEventRow[], frame: TaskFrameRow | null = null): Promise<TaskRow> {
  // The new row comes back with its version (this transaction's id, valid once it commits).
  const update = trx('tasks').where({ id }).update(toDbValues(changes)).toSQL();
  const returning = 'returning *, xmin::text as row_version';
  if (events.length === 0 && !frame) return (await trx.raw(`${update.sql} ${returning}`, update.bindings)).rows[0] as TaskRow;
  const result = await trx.raw(
    `with inserted as (insert into task_events (task_id, cursor, type, message, data, ts) ${EVENTS_FROM_JSON}),
          framed as (insert into task_frames (task_id, seq, width, height, png, created_at) select ?, ?, ?, ?, ?, ? where ?)
     ${update.sql} ${returning}`,
    [eventsJson(events), ...frameBindings(frame), ...update.bindings],
  );
  return result.rows[0] as TaskRow;
}

function frameBindings(frame: TaskFrameRow | null): Knex.RawBinding[] {
  return frame ? [frame.task_id, frame.seq, frame.width, frame.height, frame.png, frame.created_at, true] : [null, null, null, null, null, null, false];
}

/** The unlocked write's statement for each list of changed columns (the loop has a few dozen). */
const unlockedWrites = new Map<string, PreparedStatement>();

function unlockedWrite(columns: string[]): PreparedStatement {
  const key = columns.join(',');
  let statement = unlockedWrites.get(key);
  if (!statement) {
    for (const column of columns) if (!/^[a-z_]+$/.test(column)) throw new Error(`not a task column: ${column}`);
    const n = columns.length;
    const $ = (i: number) => `$${n + i}`;
    statement = {
      name: `task-write-${unlockedWrites.size + 1}`,
      text: `with updated as (update tasks set ${columns.map((column, i) => `"${column}" = $${i + 1}`).join(', ')}
                              where id = ${$(1)} and xmin = ${$(2)}::xid returning xmin::text as row_version),
          inserted as (insert into task_events (task_id, cursor, type, message, data, ts) ${EVENTS_FROM_JSON.replace('?', $(3))} where exists (select from updated)),
          framed as (insert into task_frames (task_id, seq, width, height, png, created_at)
                     select ${$(4)}, ${$(5)}::int, ${$(6)}::int, ${$(7)}::int, ${$(8)}::bytea, ${$(9)}::timestamptz where ${$(10)}::boolean and exists (select from updated))
     select row_version from updated`,
    };
    unlockedWrites.set(key, statement);
  }
  return statement;
}

/**
 * The same writes as `updateTaskWithEvents`, as one statement outside any transaction, made only
 * if the row is still at `version` (nobody changed it since it was read). Returns the row's new
 * version, or undefined when the row had changed and nothing was written. The caller knows the
 * row it wrote, so nothing else comes back (a running task's row is several kilobytes of JSON).
 * Two of these per agent step: a prepared statement run straight through pg (`runPrepared`).
 */
export async function updateTaskIfUnchanged(db: Knex, id: string, version: string, changes: Partial<TaskRow>, events: TaskEventRow[], frame: TaskFrameRow | null): Promise<string | undefined> {
  // As Knex's update does, a column set to undefined is left as it is.
  const values = Object.entries(toDbValues(changes)).filter(([, value]) => value !== undefined);
  const statement = unlockedWrite(values.map(([column]) => column));
  const rows = await runPrepared<{ row_version: string }>(db, statement, [...values.map(([, value]) => value), id, version, eventsJson(events), ...frameBindings(frame)]);
  return rows[0]?.row_version;
}


const TASK_AND_EVENTS_AFTER = {
  parameters: [
    { name: 'after', type: 'bigint' },
    { name: 'lim', type: 'integer' },
    { name: 'task_id', type: 'text' },
    { name: 'org_id', type: 'text' },
  ] as ListParameter[],
  query: `select ${selectColumns(TASK_OBJECT_COLUMNS, TASK_OBJECT_TIMESTAMPS, 't')}, coalesce(e.events, '[]'::json) as events
       from tasks t
       left join lateral (
         select json_agg(x order by x.cursor) as events
           from (select cursor, type, message, data, ts from task_events where task_id = t.id and cursor > k.after order by cursor limit k.lim) x
       ) e on t.cursor > k.after
      where t.id = k.task_id and t.org_id = k.org_id`,
};

/**
 * What a follower reads, in one statement: the org's task (its object's columns) and up to
 * `limit` events after `after`. Undefined when the org has no such task. Every poll of every
 * follower runs it: prepared, and shared with the other followers' reads of the same turn
 * (shared/db/batched-reads.ts).
 */
export async function readTaskAndEventsAfter(db: Knex, orgId: string, taskId: string, after: number, limit: number): Promise<{ row: TaskObjectRow; events: TaskEventRow[] } | undefined> {
  const reader = listReader<TaskObjectRow & { events: Array<Omit<TaskEventRow, 'ts' | 'task_id'> & { ts: string }> }>(db, 'task-and-events-after', TASK_AND_EVENTS_AFTER.parameters, TASK_AND_EVENTS_AFTER.query);
  const rows = await reader.read([after, limit, taskId, orgId]);
  const found = rows[0];
  if (!found) return undefined;
  const { events, ...row } = found;
  return { row, events: events.map((event) => ({ ...event, task_id: taskId, ts: new Date(event.ts) })) };
}

// ---- questions and approvals -----------------------------------------------------------------

export async function insertItem(db: Db, row: NewTaskItem): Promise<void> {
  await db('task_items').insert({ ...row, detail: JSON.stringify(row.detail) });
}

export async function findItem(db: Db, taskId: string, id: string): Promise<TaskItemRow | undefined> {
  return db<TaskItemRow>('task_items').where({ task_id: taskId, id }).first();
}

/**
 * The first answer wins: sets the answer only while the item is open. Returns the item when
 * this call won, undefined when another answer (or the end of the task) came first.
 */
export async function answerItem(
  db: Db,
  id: string,
  answer: { answered_by: 'customer' | 'operator' | 'timeout'; answer?: string; decision?: 'approve' | 'deny'; note?: string | null; at: Date },
): Promise<TaskItemRow | undefined> {
  const [row] = await db<TaskItemRow>('task_items')
    .where({ id, state: 'open' })
    .update({
      state: 'answered',
      answered_by: answer.answered_by,
      answer: answer.answer ?? null,
      decision: answer.decision ?? null,
      note: answer.note ?? null,
      answered_at: answer.at,
    })
    .returning('*');
  return row as TaskItemRow | undefined;
}

/** Closes every open item of a task (it ended); answers after this get 409 not_pending. */
export async function closeOpenItems(db: Db, taskId: string): Promise<void> {
  await db('task_items').where({ task_id: taskId, state: 'open' }).update({ state: 'closed' });
}

// ---- recordings ------------------------------------------------------------------------------

export async function readFrame(db: Db, taskId: string, seq: number): Promise<{ png: Buffer } | undefined> {
  return db('task_frames').where({ task_id: taskId, seq }).first('png');
}

// ---- trace -----------------------------------------------------------------------------------

/** The events a task's trace shows (`include=trace`): its steps, decisions, results and ending. */
const TRACE_EVENT_TYPES = ['started', 'step', 'guardrail', 'approval', 'decision', 'action_result', 'tool_result', 'safety_check', 'completed', 'failed', 'stopped'];
const TRACE_MAX_EVENTS = 1000;

/** A task's trace events, oldest first, at most `TRACE_MAX_EVENTS` of them. */
export function readTraceEvents(db: Db, taskId: string): Promise<TaskEventRow[]> {
  return db<TaskEventRow>('task_events').where({ task_id: taskId }).whereIn('type', TRACE_EVENT_TYPES).orderBy('cursor').limit(TRACE_MAX_EVENTS);
}

// ---- the latest events (a try's rubric judge, shared/test-runs/try-flow.ts) -------------------

/** A task's last `limit` events (their type and message), oldest first. */
export async function readLatestEvents(db: Db, taskId: string, limit: number): Promise<Array<Pick<TaskEventRow, 'type' | 'message'>>> {
  const newestFirst = await db<TaskEventRow>('task_events').where({ task_id: taskId }).orderBy('cursor', 'desc').limit(limit).select('type', 'message');
  return newestFirst.reverse();
}
