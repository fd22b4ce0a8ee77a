import type { Knex } from '../db/knex';
import type { TaskEvent, TasksService } from '../tasks/tasks.service';
import type { TaskFollowers } from '../tasks/task-followers';
import type { Task, TaskPending } from '../tasks/task-object';
import type { LegacyCaller } from '../sessions/session-token-auth';
import { conflict, notFound } from '../errors';
import { latestUpdateEvents, UPDATE_EVENT_TYPES, type UpdateEvent } from './task-updates.repository';

/**
 * Tasks through the older session-token API: the same `TasksService` and `TaskFollowers` calls as
 * `/v1` (start, follow, respond, stop, trace), scoped to the caller's session, in the older task shape.
 */

/** `/wait` waits this long when `timeout_ms` is not sent (at most `MAX_WAIT_MS`, 55 s). */
export const LEGACY_DEFAULT_WAIT_MS = 25_000;
/** `/tasks` returns at most this many of the session's tasks, newest first. */
export const LEGACY_TASK_LIST_LIMIT = 100;

type QuestionPending = Extract<TaskPending, { type: 'question' }>;
type ApprovalPending = Extract<TaskPending, { type: 'approval' }>;

/** The older API's task: `{ id, request_id, status, done, cursor, events, update, question?, approval?, result?, error? }`. */
export interface LegacyTask {
  id: string;
  request_id: string | null;
  status: Task['status'];
  done: boolean;
  /** The cursor this response covers: pass it as `after` to `/wait`. */
  cursor: number;
  /** Events after the request's `after` (only `/wait` returns events). */
  events: TaskEvent[];
  /** One line for people: what the task is doing now (see `updateLine`). */
  update: string;
  question?: Omit<QuestionPending, 'type'>;
  approval?: Omit<ApprovalPending, 'type'>;
  result?: string;
  error?: string;
}

export interface LegacyWaitInput {
  id: string;
  after: number;
  timeout_ms?: number;
  question_id?: string;
  answer?: string;
  approval_id?: string;
  decision?: 'approve' | 'deny';
  note?: string | null;
}

const updateTypes = new Set<string>(UPDATE_EVENT_TYPES);

/**
 * The `update` line: an open question or approval first (it is what the task waits for), then
 * the latest event that means something to people (steps, answers, decisions, the ending),
 * then `Queued` or `Working` for a task with no such event yet.
 */
export function updateLine(task: Pick<Task, 'pending' | 'status'>, latest: UpdateEvent | null): string {
  if (task.pending?.type === 'question') return `Waiting for an answer: ${task.pending.question}`;
  if (task.pending?.type === 'approval') return `Waiting for approval: ${task.pending.what}`;
  if (latest) {
    switch (latest.type) {
      case 'started':
        return 'Started';
      case 'question':
        return `Asked: ${latest.message}`;
      case 'answer':
        return `Answered: ${latest.message}`;
      case 'approval':
        return `Asked for approval: ${latest.message}`;
      case 'completed':
        return `Completed: ${latest.message}`;
      case 'failed':
        return `Failed: ${latest.message}`;
      default:
        return latest.message; // step, decision, tool_call, sleep, safety_check, stopped
    }
  }
  return task.status === 'queued' ? 'Queued' : 'Working';
}

/** The older shape of `task`, with the events and cursor a response covers. */
export function toLegacyTask(task: Task, events: TaskEvent[], cursor: number, update: string): LegacyTask {
  const legacy: LegacyTask = { id: task.task_id, request_id: task.request_id, status: task.status, done: task.done, cursor, events, update };
  if (task.pending) {
    const { type, ...item } = task.pending;
    if (type === 'question') legacy.question = item as Omit<QuestionPending, 'type'>;
    else legacy.approval = item as Omit<ApprovalPending, 'type'>;
  }
  if (task.result !== null) legacy.result = task.result;
  if (task.error !== null) legacy.error = task.error;
  return legacy;
}

export class LegacyTasksService {
  constructor(private readonly deps: { db: Knex; tasks: TasksService; followers: Pick<TaskFollowers, 'follow'> }) {}

  /** The task, when it runs on the caller's session; 404 otherwise (as for another org's). */
  private async ownTask(caller: LegacyCaller, taskId: string): Promise<Task> {
    const task = await this.deps.tasks.get(caller.orgId, taskId);
    if (task.session_id !== caller.session.code) throw notFound(`No task ${taskId}`);
    return task;
  }

  private async shape(task: Task, events: TaskEvent[], cursor: number): Promise<LegacyTask> {
    // The latest line-worthy event is usually among the events in hand; otherwise it is read.
    let latest: UpdateEvent | null = events.findLast((event) => updateTypes.has(event.type)) ?? null;
    if (!latest && cursor > 0) latest = (await latestUpdateEvents(this.deps.db, [{ taskId: task.task_id, upto: cursor }])).get(task.task_id) ?? null;
    return toLegacyTask(task, events, cursor, updateLine(task, latest));
  }

  /**
   * Starts a task on the caller's session with the session's agent. The same `request_id`
   * returns the same task; one already used on another session of the org is a 409.
   */
  async start(caller: LegacyCaller, input: { prompt: string; request_id?: string }, requestId: string): Promise<LegacyTask> {
    const task = await this.deps.tasks.start(caller.tasksAuth, caller.session.code, { prompt: input.prompt, request_id: input.request_id }, requestId);
    if (task.session_id !== caller.session.code) {
      throw conflict(`request_id ${input.request_id} was already used for a task on another session`, 'request_id_in_use');
    }
    return this.shape(task, [], task.cursor);
  }

  /**
   * Answers the open question or decides the open approval when the input carries one (first
   * answer wins: 409 `already_answered` or `not_pending` as with `/v1`), then long-polls for
   * events after `after`.
   */
  /** `signal`: the caller hung up; the wait ends at once with `FollowerGone` (see `TaskFollowers.follow`). */
  async wait(caller: LegacyCaller, input: LegacyWaitInput, requestId: string, signal?: AbortSignal): Promise<LegacyTask> {
    await this.ownTask(caller, input.id);
    const { question_id, answer, approval_id, decision, note } = input;
    if ([question_id, answer, approval_id, decision, note].some((value) => value !== undefined)) {
      await this.deps.tasks.respond(caller.tasksAuth, input.id, { question_id, answer, approval_id, decision, note }, requestId);
    }
    const followed = await this.deps.followers.follow(caller.orgId, input.id, input.after, input.timeout_ms ?? LEGACY_DEFAULT_WAIT_MS, signal);
    return this.shape(followed.task, followed.data, followed.cursor);
  }

  async stop(caller: LegacyCaller, taskId: string, requestId: string): Promise<LegacyTask> {
    await this.ownTask(caller, taskId);
    const task = await this.deps.tasks.stop(caller.tasksAuth, taskId, requestId);
    return this.shape(task, [], task.cursor);
  }

  /** The session's latest `LEGACY_TASK_LIST_LIMIT` tasks, newest first; `has_more` when there are older ones. */
  async list(caller: LegacyCaller): Promise<{ tasks: LegacyTask[]; has_more: boolean }> {
    const page = await this.deps.tasks.list(caller.orgId, { sessionId: caller.session.code }, { limit: LEGACY_TASK_LIST_LIMIT, cursor: null });
    const latest = await latestUpdateEvents(
      this.deps.db,
      page.data.filter((task) => task.cursor > 0).map((task) => ({ taskId: task.task_id, upto: task.cursor })),
    );
    return {
      tasks: page.data.map((task) => toLegacyTask(task, [], task.cursor, updateLine(task, latest.get(task.task_id) ?? null))),
      has_more: page.has_more,
    };
  }

  /** The task with the diagnostics of `GET /v1/tasks/{id}?include=trace`. */
  async trace(caller: LegacyCaller, taskId: string): Promise<LegacyTask & { trace: Record<string, unknown> }> {
    const task = await this.ownTask(caller, taskId);
    const trace = await this.deps.tasks.trace(caller.orgId, taskId);
    return { ...(await this.shape(task, [], task.cursor)), trace };
  }
}
