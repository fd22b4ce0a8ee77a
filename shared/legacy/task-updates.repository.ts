import type { Knex } from '../db/knex';

/** Event types that make a line for people (the older API's `update`); the rest are mechanics. */
export const UPDATE_EVENT_TYPES = ['started', 'step', 'question', 'answer', 'approval', 'decision', 'tool_call', 'sleep', 'safety_check', 'completed', 'failed', 'stopped'] as const;

export interface UpdateEvent {
  type: string;
  message: string;
}

/**
 * For each task, its latest event of an `UPDATE_EVENT_TYPES` type at or before `upto` (the
 * cursor the response covers), in one query: a backward walk of each task's (task_id, cursor)
 * primary key that stops at the first such event.
 */
export async function latestUpdateEvents(db: Knex, tasks: Array<{ taskId: string; upto: number }>): Promise<Map<string, UpdateEvent>> {
  const found = new Map<string, UpdateEvent>();
  if (tasks.length === 0) return found;
  const { rows } = await db.raw<{ rows: Array<UpdateEvent & { task_id: string }> }>(
    `select t.task_id, e.type, e.message
       from unnest(?::text[], ?::int[]) as t(task_id, upto)
       cross join lateral (
         select type, message from task_events
          where task_id = t.task_id and cursor <= t.upto and type = any(?::text[])
          order by cursor desc
          limit 1
       ) e`,
    [tasks.map((task) => task.taskId), tasks.map((task) => task.upto), [...UPDATE_EVENT_TYPES]],
  );
  for (const row of rows) found.set(row.task_id, { type: row.type, message: row.message });
  return found;
}
