import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Notifier } from '../notifier';
import type { JobQueues } from '../queues/job-queues';
import { appendOrgEvent, dispatchOrgEvents, type OrgEventType } from '../events/org-events';
import { notFound } from '../errors';
import { lockTask, updateTaskWithEvents, type TaskEventRow, type TaskRow } from './tasks.repository';
import { toTask } from './task-object';

/** The Redis channel long-pollers of a task listen on. */
export const taskChannel = (taskId: string) => `task:${taskId}`;

/**
 * One change to a task, made under its row lock: field updates, task events (numbered on from
 * the task's cursor, so the log stays gapless), org events for webhooks (carrying the task as it
 * is after the change), and work to do once the transaction has committed (enqueue a job, send
 * to the computer). Nothing leaves the process before the commit.
 */
export class TaskChange {
  private readonly changes: Partial<TaskRow> = {};
  private readonly events: TaskEventRow[] = [];
  private readonly orgEvents: Array<{ type: OrgEventType; extra: Record<string, unknown> }> = [];
  readonly afterCommit: Array<() => Promise<unknown> | unknown> = [];

  constructor(
    readonly trx: Knex.Transaction,
    public row: TaskRow,
    readonly now: Date,
    private readonly baseUrl: string,
  ) {}

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

  /** Records a webhook event; `data.task` is the task after this change. */
  orgEvent(type: OrgEventType, extra: Record<string, unknown> = {}): void {
    this.orgEvents.push({ type, extra });
  }

  after(work: () => Promise<unknown> | unknown): void {
    this.afterCommit.push(work);
  }

  /** Writes everything; returns the ids of the org events written. */
  async flush(): Promise<string[]> {
    this.set({ updated_at: this.now });
    this.row = await updateTaskWithEvents(this.trx, this.row.id, this.changes, this.events);
    const ids: string[] = [];
    if (this.orgEvents.length) {
      const task = toTask(this.row, this.baseUrl, this.now);
      for (const { type, extra } of this.orgEvents) {
        ids.push(await appendOrgEvent(this.trx, { orgId: this.row.org_id, type, taskId: this.row.id, sessionId: this.row.session_id, data: { task, ...extra } }));
      }
    }
    return ids;
  }

  get wroteEvents(): boolean {
    return this.events.length > 0;
  }
}

export interface TaskChangeDeps {
  db: Knex;
  clock: Clock;
  queues: JobQueues;
  notifier: Notifier;
  logger: Logger;
  baseUrl: string;
}

/**
 * Runs `work` on the locked task in one transaction, then, after the commit: wakes long-pollers,
 * hands org events to the webhooks queue, and runs the change's after-commit work.
 */
export async function changeTask<T>(
  deps: TaskChangeDeps,
  taskId: string,
  work: (change: TaskChange) => Promise<T> | T,
): Promise<{ value: T; row: TaskRow }> {
  const { value, change, orgEventIds } = await deps.db.transaction(async (trx) => {
    const row = await lockTask(trx, taskId);
    if (!row) throw notFound(`No task ${taskId}`);
    const change = new TaskChange(trx, row, deps.clock.now(), deps.baseUrl);
    const value = await work(change);
    const orgEventIds = await change.flush();
    return { value, change, orgEventIds };
  });
  // After the commit, independent work goes out together (one round trip's wait, not several);
  // the change's own work keeps its order (e.g. a question is shown before its timeout is set).
  const notify = change.wroteEvents
    ? deps.notifier.publish(taskChannel(taskId), String(change.row.cursor)).catch((error) => deps.logger.warn({ err: error }, 'could not notify followers'))
    : undefined;
  const dispatch = orgEventIds.length ? dispatchOrgEvents(deps.queues, orgEventIds) : undefined;
  const ordered = (async () => {
    for (const work of change.afterCommit) await work();
  })();
  await Promise.all([notify, dispatch, ordered]);
  return { value, row: change.row };
}
