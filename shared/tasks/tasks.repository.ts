import type { Knex } from '../db/knex';
import { paginate, type Page, type PageRequest } from '../pagination';
import type { DesktopAction, Observation } from '../desktop/protocol';
import type { AgentConfig } from '../agents/agent-config';
import type { TurnOutcome, ActionOutcome } from '../models/model.types';
import type { TaskPending } from './task-object';

type Db = Knex | Knex.Transaction;

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stopped';
/** What the loop waits for: a step job, the computer, a person, a tool call, a sleep; null once ended. */
export type TaskPhase = 'model' | 'computer' | 'person' | 'tool' | 'sleep' | 'scope' | null;

export interface TaskRow extends Record<string, unknown> {
  seq: number;
  id: string;
  org_id: string;
  session_id: string;
  agent_id: string;
  agent_version: number;
  agent_draft: boolean;
  agent_config: AgentConfig;
  model: string;
  effort: 'low' | 'medium' | 'high';
  prompt: string;
  request_id: string | null;
  metadata: Record<string, string>;
  status: TaskStatus;
  result: string | null;
  error: string | null;
  pending: TaskPending | null;
  cursor: number;
  steps: number;
  phase: TaskPhase;
  current_job_id: string | null;
  awaiting_act_id: string | null;
  phase_since: Date | null;
  queued_actions: DesktopAction[];
  turn_results: ActionOutcome[];
  last_outcome: TurnOutcome | null;
  model_state: unknown;
  observation: Observation | null;
  guard_state: Record<string, unknown>;
  frames: number;
  actions: number;
  active_ms: number;
  running_since: Date | null;
  billed_minutes: number | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
}

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

/** By id alone: workers and the desktop gateway do not act for an org. */
export async function findTaskById(db: Db, id: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ id }).first();
}

export async function lockTask(trx: Knex.Transaction, id: string): Promise<TaskRow | undefined> {
  return trx<TaskRow>('tasks').where({ id }).first().forUpdate();
}

export async function updateTask(db: Db, id: string, changes: Partial<TaskRow>): Promise<TaskRow> {
  const [row] = await db('tasks').where({ id }).update(toDbValues(changes)).returning('*');
  return row as TaskRow;
}

export async function findTaskByRequestId(db: Db, orgId: string, requestId: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ org_id: orgId, request_id: requestId }).first();
}

export async function findActiveTask(db: Db, sessionId: string): Promise<TaskRow | undefined> {
  return db<TaskRow>('tasks').where({ session_id: sessionId }).whereIn('status', ['queued', 'running']).first();
}

export interface TaskFilter {
  sessionId?: string;
  agentId?: string;
  status?: TaskStatus;
}

export function listTasks<T>(db: Knex, orgId: string, filter: TaskFilter, page: PageRequest, toObject: (row: TaskRow) => T): Promise<Page<T>> {
  const query = db('tasks').where({ org_id: orgId });
  if (filter.sessionId) query.where({ session_id: filter.sessionId });
  if (filter.agentId) query.where({ agent_id: filter.agentId });
  if (filter.status) query.where({ status: filter.status });
  return paginate<TaskRow, T>(query, page, toObject);
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

export interface TaskEventRow {
  task_id: string;
  cursor: number;
  type: string;
  message: string;
  data: Record<string, unknown>;
  ts: Date;
}

/**
 * Writes a task's changes and its new events in one statement (one round trip): the events go
 * in through a data-modifying CTE beside the UPDATE. Returns the updated row.
 */
export async function updateTaskWithEvents(trx: Knex.Transaction, id: string, changes: Partial<TaskRow>, events: TaskEventRow[]): Promise<TaskRow> {
  if (events.length === 0) return updateTask(trx, id, changes);
  const update = trx('tasks').where({ id }).update(toDbValues(changes)).returning('*').toSQL();
  const rows = events.map((event) => ({ ...event, ts: event.ts.toISOString() }));
  const result = await trx.raw(
    `with inserted as (insert into task_events (task_id, cursor, type, message, data, ts)
       select task_id, cursor, type, message, data, ts from jsonb_to_recordset(?::jsonb)
         as e(task_id text, cursor int, type text, message text, data jsonb, ts timestamptz))
     ${update.sql}`,
    [JSON.stringify(rows), ...update.bindings],
  );
  return result.rows[0] as TaskRow;
}

export async function readEvents(db: Db, taskId: string, after: number, limit: number): Promise<TaskEventRow[]> {
  return db<TaskEventRow>('task_events').where({ task_id: taskId }).andWhere('cursor', '>', after).orderBy('cursor').limit(limit);
}

// ---- questions and approvals -----------------------------------------------------------------

export type TaskItemKind = 'question' | 'approval';

export interface TaskItemRow {
  id: string;
  task_id: string;
  kind: TaskItemKind;
  state: 'open' | 'answered' | 'closed';
  detail: Record<string, unknown>;
  answered_by: 'customer' | 'operator' | 'timeout' | null;
  answer: string | null;
  decision: 'approve' | 'deny' | null;
  note: string | null;
  created_at: Date;
  answered_at: Date | null;
}

export async function insertItem(db: Db, row: Omit<TaskItemRow, 'state' | 'answered_by' | 'answer' | 'decision' | 'note' | 'answered_at'>): Promise<void> {
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

export async function insertFrame(db: Db, frame: { task_id: string; seq: number; width: number; height: number; png: Buffer; created_at: Date }): Promise<void> {
  await db('task_frames').insert(frame);
}

export async function readFrame(db: Db, taskId: string, seq: number): Promise<{ png: Buffer } | undefined> {
  return db('task_frames').where({ task_id: taskId, seq }).first('png');
}
