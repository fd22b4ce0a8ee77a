import { isoTimestamp } from '../db/timestamps';
import type { TaskEventRow, TaskObjectRow, TaskPending, TaskRow } from './task-rows';

export type { TaskPending };

/** The spec's Task object. */
export interface Task {
  object: 'task';
  task_id: string;
  session_id: string;
  agent_id: string;
  /** The published version the task runs (for a draft run, the version the draft is based on). */
  agent_version: number;
  /** True when the task runs the agent's unpublished draft. */
  agent_draft: boolean;
  request_id: string | null;
  status: TaskRow['status'];
  done: boolean;
  prompt: string;
  result: string | null;
  error: string | null;
  pending: TaskPending | null;
  cursor: number;
  metadata: Record<string, string>;
  created_at: string;
  updated_at: string;
  active_seconds: number;
  billed_minutes: number | null;
  replay_url: string;
  recording: { frames: number };
}

/** One entry of a task's event log, as the API shows it. */
export interface TaskEvent {
  cursor: number;
  type: string;
  message: string;
  ts: string;
  data: Record<string, unknown>;
}

export const toTaskEvent = (row: TaskEventRow): TaskEvent => ({ cursor: row.cursor, type: row.type, message: row.message, ts: row.ts.toISOString(), data: row.data });

export const isDone = (status: TaskRow['status']) => status === 'completed' || status === 'failed' || status === 'stopped';

/** Running time in milliseconds at `now`: banked time plus the current running stretch. */
export function activeMs(row: Pick<TaskRow, 'active_ms' | 'running_since'>, now: Date): number {
  return row.active_ms + (row.running_since ? Math.max(0, now.getTime() - row.running_since.getTime()) : 0);
}

export function toTask(row: TaskObjectRow, baseUrl: string, now: Date): Task {
  return {
    object: 'task',
    task_id: row.id,
    session_id: row.session_id,
    agent_id: row.agent_id,
    agent_version: row.agent_version,
    agent_draft: row.agent_draft,
    request_id: row.request_id,
    status: row.status,
    done: isDone(row.status),
    prompt: row.prompt,
    result: row.result,
    error: row.error,
    pending: row.pending,
    cursor: row.cursor,
    metadata: row.metadata,
    created_at: isoTimestamp(row.created_at),
    updated_at: isoTimestamp(row.updated_at),
    active_seconds: Math.floor(activeMs(row, now) / 1000),
    billed_minutes: row.billed_minutes,
    replay_url: `${baseUrl}/console/tasks/${row.id}`,
    recording: { frames: row.frames },
  };
}
