import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import { appendOrgEvent, type OrgEventType } from '../events/org-events';
import { notFound } from '../errors';
import { lockTask, reviveTaskDates, TASK_OBJECT_COLUMNS, updateTaskIfUnchanged, updateTaskWithEvents, type TaskEventRow, type TaskFrameRow, type TaskObjectRow, type TaskRow } from './tasks.repository';
import { toTask, toTaskEvent, type TaskEvent } from './task-object';

/** The Redis channel long-pollers of a task listen on. */
export const taskChannel = (taskId: string) => `task:${taskId}`;

/**
 * What a committed change tells the task's followers: the new cursor and, when it is small, what
 * the change wrote (its events, and the task as the change left it), so that a follower whose
 * cursor is where the change began answers without reading PostgreSQL. It is a copy of
 * committed rows, never more: a follower it does not fit reads them as before.
 */
export interface TaskNote {
  cursor: number;
  /** The cursor before the change: `events` are all the events after it. */
  from?: number;
  events?: TaskEvent[];
  task?: TaskObjectRow;
}

/** Past this, a note carries the cursor only (followers read the rest). */
const NOTE_MAX_CHARS = 16 * 1024;

export function encodeTaskNote(row: TaskRow, events: readonly TaskEventRow[]): string {
  const task = Object.fromEntries(TASK_OBJECT_COLUMNS.map((column) => [column, row[column]]));
  const full = JSON.stringify({ cursor: row.cursor, from: row.cursor - events.length, events: events.map(toTaskEvent), task });
  return full.length <= NOTE_MAX_CHARS ? full : JSON.stringify({ cursor: row.cursor });
}

export function decodeTaskNote(message: string): TaskNote | null {
  try {
    const note = JSON.parse(message) as TaskNote;
    if (typeof note.cursor !== 'number') return null;
    if (note.task) reviveTaskDates(note.task as unknown as Record<string, unknown>);
    return note;
  } catch {
    return null;
  }
}

/** Thrown inside an unlocked change whose work asks for the transaction or an org event: it writes nothing. */
const NEEDS_LOCK = Symbol('needs the row lock');

/**
 * One change to a task: field updates, task events (numbered on from the task's cursor, so the
 * log stays gapless), a recording frame, org events for webhooks (carrying the task as it is
 * after the change), and work to do once the change is written (enqueue a job, send to the
 * computer). Nothing leaves the process before the write.
 *
 * A change runs either under the task's row lock in a transaction (`changeTaskLocked`, which
 * gives `trx` and org events), or on a row read without the lock (`changeTaskIfUnchanged`),
 * written as one statement that applies only if the row is unchanged; such a change has no
 * `trx` and no org events, and asking for either makes it write nothing.
 */
export class TaskChange {
  private readonly changes: Partial<TaskRow> = {};
  private readonly events: TaskEventRow[] = [];
  private readonly orgEvents: Array<{ type: OrgEventType; extra: Record<string, unknown> }> = [];
  private newFrame: TaskFrameRow | null = null;
  readonly afterCommit: Array<() => Promise<unknown> | unknown> = [];

  constructor(
    private readonly transaction: Knex.Transaction | null,
    public row: TaskRow,
    readonly now: Date,
    private readonly baseUrl: string,
  ) {}

  /** The transaction holding the row lock (an unlocked change that asks for it writes nothing). */
  get trx(): Knex.Transaction {
    if (!this.transaction) throw NEEDS_LOCK;
    return this.transaction;
  }

  set(changes: Partial<TaskRow>): void {
    Object.assign(this.changes, changes);
    this.row = { ...this.row, ...changes };
  }

  /** Appends a task event with the next cursor. */
  event(type: string, message: string, data: Record<string, unknown> = {}): void {
    const cursor = this.row.cursor + 1;
    this.set({ cursor });
    this.events.push({ task_id: this.row.id, cursor, type, message, data, ts: this.now });
  }

  /** Stores a frame of the recording with this change. */
  frame(frame: TaskFrameRow): void {
    this.newFrame = frame;
  }

  /** Records a webhook event; `data.task` is the task after this change. */
  orgEvent(type: OrgEventType, extra: Record<string, unknown> = {}): void {
    if (!this.transaction) throw NEEDS_LOCK;
    this.orgEvents.push({ type, extra });
  }

  after(work: () => Promise<unknown> | unknown): void {
    this.afterCommit.push(work);
  }

  /** Whether the work changed nothing (a late result, a stale step): such a change writes nothing. */
  get empty(): boolean {
    return Object.keys(this.changes).length === 0 && this.events.length === 0 && !this.newFrame && this.orgEvents.length === 0;
  }

  /** Writes everything in the transaction; returns the ids of the org events written. */
  async flush(): Promise<string[]> {
    if (this.empty) return [];
    this.set({ updated_at: this.now });
    this.row = await updateTaskWithEvents(this.trx, this.row.id, this.changes, this.events, this.newFrame);
    const ids: string[] = [];
    if (this.orgEvents.length) {
      const task = toTask(this.row, this.baseUrl, this.now);
      for (const { type, extra } of this.orgEvents) {
        ids.push(await appendOrgEvent(this.trx, { orgId: this.row.org_id, type, taskId: this.row.id, sessionId: this.row.session_id, data: { task, ...extra } }));
      }
    }
    return ids;
  }

  /** Writes an unlocked change if the row is still as read; false when it changed meanwhile. */
  async flushIfUnchanged(db: Knex): Promise<boolean> {
    this.set({ updated_at: this.now });
    const version = await updateTaskIfUnchanged(db, this.row.id, this.row.row_version!, this.changes, this.events, this.newFrame);
    if (!version) return false;
    this.row = { ...this.row, row_version: version };
    return true;
  }

  /** The events this change wrote. */
  get writtenEvents(): readonly TaskEventRow[] {
    return this.events;
  }
}

/** A task change as committed: what observers are told once it cannot be undone. */
export interface CommittedTaskChange {
  /** The task row as written. */
  readonly row: TaskRow;
  /** The task events the change wrote, in cursor order (none for a change of fields only). */
  readonly events: readonly TaskEventRow[];
  /** The org events (webhooks) the change wrote. */
  readonly orgEventIds: readonly string[];
}

/**
 * Something that happens after any task change commits (followers woken, webhooks dispatched,
 * later evals told that a try's task advanced), registered in the composition root. Each is
 * told of every committed change, never of one rolled back; it decides for itself whether the
 * change concerns it, and must not make a change that wrote nothing it cares about wait.
 */
export interface TaskChangeObserver {
  /** Names the observer in the log when it fails. */
  readonly name: string;
  taskChanged(committed: CommittedTaskChange): Promise<void> | void;
}

export interface TaskChangeDeps {
  db: Knex;
  clock: Clock;
  logger: Logger;
  baseUrl: string;
  /** Told of every committed change, in parallel with each other and with the change's own after-commit work. */
  observers: readonly TaskChangeObserver[];
}

/**
 * Runs `work` once on the locked task in one transaction, then, after the commit: tells the
 * observers (the root registers the followers' notes and the webhooks' dispatch) and runs the
 * change's own after-commit work.
 */
export async function changeTaskLocked<T>(deps: TaskChangeDeps, taskId: string, work: (change: TaskChange) => Promise<T> | T): Promise<{ value: T; row: TaskRow }> {
  const { value, change, orgEventIds } = await deps.db.transaction(async (trx) => {
    const row = await lockTask(trx, taskId);
    if (!row) throw notFound(`No task ${taskId}`);
    const change = new TaskChange(trx, row, deps.clock.now(), deps.baseUrl);
    const value = await work(change);
    const orgEventIds = await change.flush();
    return { value, change, orgEventIds };
  });
  await afterWrite(deps, change, orgEventIds);
  return { value, row: change.row };
}

/**
 * Runs `work` once on `seen`, the task as read with its version (`readTaskForChange`), without
 * the lock or a transaction, and writes what it changed in one statement if the row is still at
 * that version (two round trips with the read instead of five, on the agent loop's busiest
 * paths); then, as `changeTaskLocked`, the observers and the after-commit work.
 *
 * Null when it wrote nothing: the row changed since it was read, the work found nothing to
 * change on the row as read, or it asked for the transaction or an org event. The caller then
 * makes the change with `changeTaskLocked` if it still means to, where the work decides again
 * on the newest row; so work given here must have no effect outside the change.
 */
export async function changeTaskIfUnchanged<T>(deps: TaskChangeDeps, seen: TaskRow, work: (change: TaskChange) => Promise<T> | T): Promise<{ value: T; row: TaskRow } | null> {
  if (!seen.row_version) throw new Error('changeTaskIfUnchanged needs the row as readTaskForChange reads it (with its version)');
  const change = new TaskChange(null, seen, deps.clock.now(), deps.baseUrl);
  const value = await runUnlessLockNeeded(work, change);
  if (value === NEEDS_LOCK || change.empty || !(await change.flushIfUnchanged(deps.db))) return null;
  await afterWrite(deps, change, []);
  return { value, row: change.row };
}

async function runUnlessLockNeeded<T>(work: (change: TaskChange) => Promise<T> | T, change: TaskChange): Promise<T | typeof NEEDS_LOCK> {
  try {
    return await work(change);
  } catch (error) {
    if (error === NEEDS_LOCK) return NEEDS_LOCK;
    throw error;
  }
}

/**
 * After the write, independent work goes out together (one round trip's wait, not several): each
 * observer, and the change's own work, which keeps its order (e.g. a question is shown before its
 * timeout is set).
 */
async function afterWrite(deps: TaskChangeDeps, change: TaskChange, orgEventIds: string[]): Promise<void> {
  // The change is committed whatever happens here: a failure (Redis not answering) is logged,
  // not thrown at a caller who would take the change for undone. Jobs left out are queued by
  // the maintenance sweep from the task row; a lost message to the computer ends in its timeout.
  const committed: CommittedTaskChange = { row: change.row, events: change.writtenEvents, orgEventIds };
  const told = deps.observers.map((observer) => tellObserver(deps.logger, observer, committed));
  const ordered = (async () => {
    for (const work of change.afterCommit) {
      try {
        await work();
      } catch (error) {
        deps.logger.warn({ err: error, task_id: change.row.id }, 'after-commit work failed');
      }
    }
  })();
  await Promise.all([...told, ordered]);
}

/** One observer's turn: whether it throws or rejects, the others and the caller go on. */
async function tellObserver(logger: Logger, observer: TaskChangeObserver, committed: CommittedTaskChange): Promise<void> {
  try {
    await observer.taskChanged(committed);
  } catch (error) {
    logger.warn({ err: error, task_id: committed.row.id, observer: observer.name }, 'after-commit observer failed');
  }
}
