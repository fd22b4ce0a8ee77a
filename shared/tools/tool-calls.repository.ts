/** SQL for `tool_calls`: one row per call of an agent's HTTP tool, from pending to its outcome. */
import type { Knex } from '../db/knex';

type Db = Knex | Knex.Transaction;

export type ToolCallStatus = 'pending' | 'succeeded' | 'failed';

/** A stored call. */
export interface ToolCall {
  id: string;
  org_id: string;
  task_id: string;
  session_id: string;
  agent_id: string;
  agent_version: number;
  step: number;
  tool_name: string;
  url: string;
  arguments: Record<string, unknown>;
  status: ToolCallStatus;
  http_status: number | null;
  reply_text: string | null;
  truncated: boolean;
  error: string | null;
  error_code: string | null;
  duration_ms: number | null;
  created_at: Date;
  started_at: Date | null;
  finished_at: Date | null;
}

/** The columns a new call is written with; the rest start at their defaults (`pending`). */
export type NewToolCallRow = Pick<ToolCall, 'id' | 'org_id' | 'task_id' | 'session_id' | 'agent_id' | 'agent_version' | 'step' | 'tool_name' | 'url'> & {
  /** JSON text. */
  arguments: string;
};

/** How a finished call ended; `finished_at` is set with it. */
export type ToolCallOutcomeRow = Pick<ToolCall, 'status' | 'error' | 'error_code'> &
  Partial<Pick<ToolCall, 'http_status' | 'reply_text' | 'truncated' | 'duration_ms'>>;

export async function insertToolCall(db: Db, row: NewToolCallRow): Promise<void> {
  await db('tool_calls').insert(row);
}

export async function getToolCall(db: Db, id: string): Promise<ToolCall | null> {
  return ((await db('tool_calls').where({ id }).first()) as ToolCall | undefined) ?? null;
}

/** The id of the task's latest call, or null when it made none. */
export async function latestToolCallIdOf(db: Knex, taskId: string): Promise<string | null> {
  const latest = (await db('tool_calls').where({ task_id: taskId }).orderBy('created_at', 'desc').first('id')) as { id: string } | undefined;
  return latest?.id ?? null;
}

/** Marks a pending call as started; false when it is not pending or another worker started it. */
export async function claimToolCall(db: Knex, id: string): Promise<boolean> {
  const claimed = await db('tool_calls').where({ id, status: 'pending' }).whereNull('started_at').update({ started_at: db.fn.now() });
  return claimed === 1;
}

/** Stores a pending call's outcome; the row as it now is, or null when it was no longer pending. */
export async function finishToolCall(db: Knex, id: string, outcome: ToolCallOutcomeRow): Promise<ToolCall | null> {
  const [row] = (await db('tool_calls')
    .where({ id, status: 'pending' })
    .update({ ...outcome, finished_at: db.fn.now() })
    .returning('*')) as ToolCall[];
  return row ?? null;
}
