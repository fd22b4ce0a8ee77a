import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Notifier } from '../notifier';
import type { Caller } from '../audit/actor';
import type { AgentService } from '../agents/agents.service';
import type { ModelRegistry } from '../models/catalog';
import { recordAudit } from '../audit/audit.repository';
import { invalidRequest, notFound } from '../errors';
import type { Page, PageRequest } from '../pagination';
import { findSession } from '../sessions/sessions.repository';
import { decodeTaskNote, taskChannel, type TaskNote } from './task-change';
import type { RespondInput, TaskLoop } from './task-loop';
import { assertSessionTakesTask, createTask, createTaskInTransaction, type CreatedTask, type CreateTaskDeps, type CreateTaskInput } from './create-task';
import { isDone, toTask, toTaskEvent, type Task, type TaskEvent } from './task-object';

export type { TaskEvent };
import {
  findTask,
  findTaskByRequestId,
  listTasks,
  readTaskObject,
  readTaskAndEventsAfter,
  type TaskObjectRow,
  readFrame,
  type TaskFilter,
  type TaskRow,
} from './tasks.repository';

export interface StartTaskInput {
  prompt: string;
  agent_id?: string;
  agent_version?: 'draft' | 'published';
  request_id?: string;
  metadata?: Record<string, string>;
}

/** Longest long poll. */
export const MAX_WAIT_MS = 55_000;
const EVENTS_PER_PAGE = 500;


export interface TasksDeps {
  db: Knex;
  clock: Clock;
  notifier: Notifier;
  agents: Pick<AgentService, 'resolveForTask'>;
  models: ModelRegistry;
  loop: TaskLoop;
  baseUrl: string;
  logger: Logger;
}

/** What a follower is answered: the events after its cursor, the cursor to ask from next, the task. */
export interface FollowAnswer {
  data: TaskEvent[];
  cursor: number;
  task: Task;
}

/** What one follow read sees: the task, then its events after the cursor asked for. */
interface FollowState {
  row: TaskObjectRow;
  data: TaskEvent[];
}

/** What the last follow read of a task found, and where its channel stood when it was sent. */
interface FollowedTask {
  orgId: string;
  cursor: number;
  done: boolean;
  mark: string;
  /** `performance.now()` of the read. */
  at: number;
}

/**
 * How long a follow read (or a note heard) may stand in for a new one while the task's channel
 * stays subscribed. Only a lost notification (the writer's PUBLISH failed while this process's
 * subscriber stayed connected) can make it wrong: a follower asking within this time then waits
 * for the next event or the end of its wait, as followers already waiting do. As long as a
 * channel lingers: with 1 s, followers that came back later than that under load (five per task,
 * 500 events/s, on two busy cores) each sent a read, the reads queued for the pool, answers ran
 * later still, and the web process fell seconds behind (docs/benchmarks.md, follow).
 */
const FOLLOWED_TTL_MS = 10_000;
const FOLLOWED_MAX = 10_000;

/** A gapless run of a task's newest events, as its notes carried them. */
interface RecentNotes {
  /** Every event after this cursor, up to `task.cursor`, is in `events`. */
  from: number;
  events: TaskEvent[];
  task: TaskObjectRow;
  /** Size of the notes the run came from, to bound memory. */
  chars: number;
  /**
   * The last answer made from this run: the followers a note wakes at one cursor share it (and
   * its JSON) for SHARED_ANSWER_MS, rather than each building the task object anew.
   */
  answered?: { after: number; at: number; answer: FollowAnswer };
}

/** How long followers of one task at one cursor may share an answer (its `active_seconds` is that old). */
const SHARED_ANSWER_MS = 100;

/** Bounds of the recent runs: per task (events, and characters of the notes) and tasks. */
const RECENT_MAX_EVENTS = 50;
const RECENT_MAX_CHARS = 64 * 1024;
const RECENT_MAX_TASKS = 10_000;

/** A follower on its way to waiting: what it follows from where, for how long, and its subscription. */
interface Follower {
  orgId: string;
  taskId: string;
  after: number;
  waitMs: number;
  wait: { woken: Promise<void>; wake: () => void };
  unsubscribe: () => Promise<void>;
  onHangUp: ((listener: () => void) => void) | undefined;
}

/** A follower hung up while waiting: there is nobody to answer. */
export class FollowerGone extends Error {
  constructor() {
    super('The follower hung up');
  }
}

/** Starting, reading, following and steering tasks; the loop itself is `TaskLoop`. */
export class TasksService {
  /** Follow reads not sent yet, by org, task and cursor; see `readFollowState`. */
  private readonly unsentReads = new Map<string, Promise<FollowState>>();
  /** The last follow read of each followed task; see `nothingNewSinceLastRead`. */
  private readonly followed = new Map<string, FollowedTask>();

  /** The newest events of followed tasks, from their notes; see `fromRecentNotes`. */
  private readonly recent = new Map<string, RecentNotes>();
  /** Wake-ups of the followers waiting now; see `endWaits`. */
  private readonly waits = new Set<() => void>();
  /** Set by `endWaits`: followers are answered without waiting. */
  private ending = false;
  /** The last note decoded: every follower of a task hears the same message. */
  private lastNote: { message: string; note: TaskNote | null } | null = null;

  /** What `createTask` needs of this service's dependencies. */
  private readonly createDeps: CreateTaskDeps;

  constructor(private readonly deps: TasksDeps) {
    this.createDeps = { db: deps.db, clock: deps.clock, models: deps.models, enqueueFirstStep: (taskId) => deps.loop.enqueueFirstStep(taskId) };
    // Notes of followed tasks, heard also between one poll of a follower and its next. Once
    // nobody has followed a task for a while its channel is released, its notes go unheard, and
    // what was kept of them goes: it would be out of date, and a web process would otherwise hold
    // the newest events of every task it ever served (up to RECENT_MAX_TASKS).
    const prefix = taskChannel('');
    deps.notifier.observe(prefix, {
      message: (_name, message) => void this.decodeNote(message),
      released: (name) => {
        const taskId = name.slice(prefix.length);
        this.recent.delete(taskId);
        this.followed.delete(taskId);
      },
    });
  }

  /**
   * Decodes a task's note (once per message, however many followers hear it). A note that
   * carries what its change wrote extends the task's recent events (see `fromRecentNotes`) and
   * counts as a read of everything up to its cursor, sent the moment it was heard (see
   * `nothingNewSinceLastRead`).
   */
  private decodeNote(message: string): TaskNote | null {
    if (this.lastNote?.message === message) return this.lastNote.note;
    const note = decodeTaskNote(message);
    this.lastNote = { message, note };
    if (note?.task && note.events && note.from !== undefined) {
      const taskId = note.task.id;
      this.rememberRecent(taskId, { from: note.from, events: note.events, task: note.task }, message.length);
      const known = this.followed.get(taskId);
      const mark = this.deps.notifier.mark(taskChannel(taskId));
      if (mark && (!known || known.cursor <= note.cursor)) {
        this.rememberFollowed(taskId, { orgId: note.task.org_id, cursor: note.cursor, done: isDone(note.task.status), mark, at: performance.now() });
      }
    }
    return note;
  }

  /** Appends a note's events to the task's recent run when they follow on from it; else starts a new run. */
  private rememberRecent(taskId: string, note: { from: number; events: TaskEvent[]; task: TaskObjectRow }, chars: number): void {
    const held = this.recent.get(taskId);
    if (held && note.from === held.task.cursor && held.chars + chars <= RECENT_MAX_CHARS) {
      held.answered = undefined;
      held.events.push(...note.events);
      held.task = note.task;
      held.chars += chars;
      if (held.events.length > RECENT_MAX_EVENTS) {
        held.events.splice(0, held.events.length - RECENT_MAX_EVENTS);
        held.from = held.events[0]!.cursor - 1;
      }
      return;
    }
    // A note older than the run (notes may arrive out of order) changes nothing.
    if (held && note.task.cursor <= held.task.cursor) return;
    if (this.recent.size >= RECENT_MAX_TASKS && !held) this.recent.clear();
    this.recent.set(taskId, { from: note.from, events: [...note.events], task: note.task, chars });
  }

  /**
   * The answer to a follower at `after` from the task's recent notes, when they hold every event
   * after it: a gapless run of committed events and the task as the newest of them left it. It
   * is the answer a read would have given a moment earlier; null sends the follower to the
   * database (events before the run, another org's task, or nothing new to tell).
   */
  private fromRecentNotes(orgId: string, taskId: string, after: number): FollowAnswer | null {
    const held = this.recent.get(taskId);
    if (!held || held.task.org_id !== orgId || after < held.from || after >= held.task.cursor) return null;
    const now = performance.now();
    if (held.answered && held.answered.after === after && now - held.answered.at < SHARED_ANSWER_MS) return held.answered.answer;
    const answer = this.answer(after, { row: held.task, data: held.events.slice(after - held.from) });
    held.answered = { after, at: now, answer };
    return answer;
  }

  toTask(row: TaskObjectRow): Task {
    return toTask(row, this.deps.baseUrl, this.deps.clock.now());
  }

  /**
   * Starts a task on a connected person's session (`createTask` does the writing). The same
   * `request_id` returns the same task (also under concurrent retries); one task at a time per
   * computer, settled by a unique index. A machine session is not the API's: 404.
   */
  async start(auth: Caller, sessionCode: string, input: StartTaskInput, requestId: string): Promise<Task> {
    if (input.request_id) {
      const existing = await findTaskByRequestId(this.deps.db, auth.orgId, input.request_id);
      if (existing) return this.toTask(existing);
    }
    const session = await findSession(this.deps.db, auth.orgId, sessionCode);
    if (!session || session.kind !== 'person') throw notFound(`No session ${sessionCode}`);
    // Before the agent is read: a session without a computer is refused whatever the agent.
    assertSessionTakesTask(session);
    const agent = await this.deps.agents.resolveForTask(auth.orgId, input.agent_id ?? session.agent_id, input.agent_version === 'draft' ? 'draft' : 'published');
    const { row } = await this.create({
      session,
      agent,
      prompt: input.prompt,
      request_id: input.request_id,
      metadata: input.metadata,
      actor: auth.actor,
      auditRequestId: requestId,
    });
    return this.toTask(row);
  }

  /**
   * Creates a task on a session the caller resolved (a machine session included), with an agent
   * version it resolved: `createTask` with this service's dependencies.
   */
  create(input: CreateTaskInput): Promise<CreatedTask> {
    return createTask(this.createDeps, input);
  }

  /** As `create`, in the caller's transaction: the caller runs `afterCommit` once it commits. */
  createInTransaction(trx: Knex.Transaction, input: CreateTaskInput): ReturnType<typeof createTaskInTransaction> {
    return createTaskInTransaction(trx, this.createDeps, input);
  }

  async getRow(orgId: string, taskId: string): Promise<TaskRow> {
    const row = await findTask(this.deps.db, orgId, taskId);
    if (!row) throw notFound(`No task ${taskId}`);
    return row;
  }

  async get(orgId: string, taskId: string): Promise<Task> {
    const row = await readTaskObject(this.deps.db, orgId, taskId);
    if (!row) throw notFound(`No task ${taskId}`);
    return this.toTask(row);
  }

  /** Diagnostics safe to share with support: steps, timings, model and backend, decisions. */
  async trace(orgId: string, taskId: string): Promise<Record<string, unknown>> {
    const row = await this.getRow(orgId, taskId);
    const events = await this.deps.db('task_events').where({ task_id: taskId }).whereIn('type', ['started', 'step', 'guardrail', 'approval', 'decision', 'action_result', 'tool_result', 'safety_check', 'completed', 'failed', 'stopped']).orderBy('cursor').limit(1000);
    const backend = this.deps.models.backendFor(row.model)?.id ?? null;
    return {
      model: row.model,
      backend,
      effort: row.effort,
      agent_version: row.agent_version,
      agent_draft: row.agent_draft,
      steps: row.steps,
      actions: row.actions,
      frames: row.frames,
      phase: row.phase,
      phase_since: row.phase_since?.toISOString() ?? null,
      started_at: row.started_at?.toISOString() ?? null,
      ended_at: row.ended_at?.toISOString() ?? null,
      active_seconds: this.toTask(row).active_seconds,
      decisions: events.map((event: { cursor: number; type: string; message: string; ts: Date; data: Record<string, unknown> }) => ({
        cursor: event.cursor,
        type: event.type,
        message: event.message,
        ts: event.ts.toISOString(),
        ...(event.type === 'guardrail' || event.type === 'decision' ? { data: event.data } : {}),
      })),
    };
  }

  list(orgId: string, filter: TaskFilter, page: PageRequest): Promise<Page<Task>> {
    return listTasks(this.deps.db, orgId, filter, page, (row) => this.toTask(row));
  }

  /**
   * The task and its events after `after`, read now. Identical reads asked for in the same turn
   * of the event loop share one pair of queries: the followers of a task that one notification
   * wakes, or that ask again together, cost one read, not one each. A read is shared only until
   * it is sent, so whoever joins it still sees everything committed before they asked.
   */
  private readFollowState(orgId: string, taskId: string, after: number): Promise<FollowState> {
    const key = `${orgId} ${taskId} ${after}`;
    let read = this.unsentReads.get(key);
    if (!read) {
      read = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        this.unsentReads.delete(key);
        const mark = this.deps.notifier.mark(taskChannel(taskId));
        const found = await readTaskAndEventsAfter(this.deps.db, orgId, taskId, after, EVENTS_PER_PAGE);
        if (!found) throw notFound(`No task ${taskId}`);
        const { row, events } = found;
        if (mark) this.rememberFollowed(taskId, { orgId: row.org_id, cursor: row.cursor, done: isDone(row.status), mark, at: performance.now() });
        return { row, data: events.map(toTaskEvent) };
      });
      this.unsentReads.set(key, read);
    }
    return read;
  }

  private rememberFollowed(taskId: string, state: FollowedTask): void {
    if (this.followed.size >= FOLLOWED_MAX && !this.followed.has(taskId)) {
      const stale = performance.now() - FOLLOWED_TTL_MS;
      for (const [id, entry] of this.followed) if (entry.at < stale) this.followed.delete(id);
      if (this.followed.size >= FOLLOWED_MAX) this.followed.clear();
    }
    this.followed.set(taskId, state);
  }

  /**
   * Whether a follower at `after` can go straight to waiting: a read sent while the task's
   * channel was already subscribed (or a note heard on it) found no event after `after` and the
   * task not done, and the channel has heard nothing since. Anything committed after that read is
   * published after it, so it will wake the wait; there is nothing to read before then.
   */
  private nothingNewSinceLastRead(orgId: string, taskId: string, after: number): boolean {
    const known = this.followed.get(taskId);
    return (
      known !== undefined &&
      known.orgId === orgId &&
      known.cursor <= after &&
      !known.done &&
      performance.now() - known.at < FOLLOWED_TTL_MS &&
      known.mark === this.deps.notifier.mark(taskChannel(taskId))
    );
  }



  /**
   * Events after `after`; when there are none yet, waits up to `waitMs` for one. A Redis
   * notification wakes the wait within milliseconds of the write; nothing polls the database.
   * `onHangUp` (the route's) tells when the follower has gone: the wait then ends at once,
   * without an answer (the promise rejects with `FollowerGone`).
   */
  follow(orgId: string, taskId: string, after: number, waitMs: number, onHangUp?: (listener: () => void) => void): Promise<FollowAnswer> {
    if (waitMs > MAX_WAIT_MS) return Promise.reject(invalidRequest(`wait_ms must be at most ${MAX_WAIT_MS}`));
    if (waitMs === 0 || this.ending) return Promise.resolve(this.answerNow(orgId, taskId, after));
    // Listen before the first read: an event committed after that read is then always heard.
    const wait = this.listen(taskId, after);
    // Not an async function (nor is what it chains to on the way to waiting): a follower asking
    // again right after its answer, as most do, usually finds nothing new and goes straight to
    // waiting, and an async function's frame for each of thousands of polls a second is garbage
    // the web process's scavenger runs for (docs/benchmarks.md, follow).
    return wait.subscribed.then((unsubscribe) => {
      const follower: Follower = { orgId, taskId, after, waitMs, wait, unsubscribe, onHangUp };
      return this.nothingNewSinceLastRead(orgId, taskId, after) ? this.answerWhenWoken(follower) : this.answerOrWait(follower);
    });
  }

  /** A follower who may have missed something: answered from the notes or a read when there is news, else waits. */
  private async answerOrWait(follower: Follower): Promise<FollowAnswer> {
    const { orgId, taskId, after, unsubscribe } = follower;
    let answer: FollowAnswer | null = null;
    try {
      answer = this.fromRecentNotes(orgId, taskId, after);
      if (!answer) {
        const state = await this.readFollowState(orgId, taskId, after);
        if (state.data.length > 0 || isDone(state.row.status)) answer = this.answer(after, state);
      }
    } catch (error) {
      await unsubscribe();
      throw error;
    }
    if (answer) {
      await unsubscribe();
      return answer;
    }
    return this.answerWhenWoken(follower);
  }

  /**
   * Listens on the task's channel: `woken` resolves on the first note past `after` (or one that
   * cannot be read), `wake` resolves it early. Not an async function, and neither is
   * `answerWhenWoken`: closures made in one would keep its suspended frame (~0.5 KB) alive for
   * as long as the follower waits, and thousands wait at once (docs/benchmarks.md, follow).
   */
  private listen(taskId: string, after: number): { woken: Promise<void>; wake: () => void; subscribed: Promise<() => Promise<void>> } {
    let wake: () => void = () => undefined;
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const subscribed = this.deps.notifier.subscribe(taskChannel(taskId), (message) => {
      const note = this.decodeNote(message);
      if (!note || note.cursor > after) wake();
    });
    return { woken, wake, subscribed };
  }

  /**
   * Waits for a note, `waitMs` or the follower hanging up, then answers from the newest notes or
   * a read (a follower that hung up is not answered: nothing is read for it).
   */
  private answerWhenWoken(follower: Follower): Promise<FollowAnswer> {
    const { orgId, taskId, after, waitMs, wait, unsubscribe, onHangUp } = follower;
    const timer = setTimeout(wait.wake, waitMs);
    this.waits.add(wait.wake);
    let gone = false;
    onHangUp?.(() => {
      gone = true;
      wait.wake();
    });
    // Stopping began while this follower was reading: it waits no more than those already waiting.
    if (this.ending) wait.wake();
    return wait.woken.then(() => {
      clearTimeout(timer);
      this.waits.delete(wait.wake);
      void unsubscribe();
      if (gone) throw new FollowerGone();
      return this.answerNow(orgId, taskId, after);
    });
  }

  /** What there is after `after` now: from the task's recent notes, else read. */
  private answerNow(orgId: string, taskId: string, after: number): FollowAnswer | Promise<FollowAnswer> {
    return this.fromRecentNotes(orgId, taskId, after) ?? this.readFollowState(orgId, taskId, after).then((state) => this.answer(after, state));
  }

  /** Followers waiting in this process now (for monitoring, and to see that none is left behind). */
  get waitingFollowers(): number {
    return this.waits.size;
  }

  /**
   * The process is stopping: answers every waiting follower now, with what there is (often no
   * new events and the same cursor), and every later one without waiting, so that followers
   * come back on another process rather than holding this one for up to 55 s.
   */
  endWaits(): void {
    this.ending = true;
    for (const wake of this.waits) wake();
  }

  private answer(after: number, { row, data }: FollowState): FollowAnswer {
    // An `after` past the task's cursor is answered with the task's cursor, not echoed back.
    const cursor = data.length ? data[data.length - 1]!.cursor : Math.min(Math.max(after, 0), row.cursor);
    return { data, cursor, task: this.toTask(row) };
  }

  async respond(auth: Caller, taskId: string, input: RespondInput, requestId: string): Promise<Task> {
    const hasQuestion = input.question_id !== undefined || input.answer !== undefined;
    const hasApproval = input.approval_id !== undefined || input.decision !== undefined;
    if (hasQuestion === hasApproval || (hasQuestion && (input.question_id === undefined || input.answer === undefined)) || (hasApproval && (input.approval_id === undefined || input.decision === undefined))) {
      throw invalidRequest('Send either question_id with answer, or approval_id with decision (and an optional note)');
    }
    // The loop answers 404 for another org's task under the same lock that decides the answer.
    const row = await this.deps.loop.respond(taskId, auth.orgId, input, 'operator');
    await recordAudit(this.deps.db, {
      orgId: auth.orgId,
      actor: auth.actor,
      action: input.question_id ? 'task.question_answered' : 'task.approval_decided',
      objectType: 'task',
      objectId: taskId,
      data: input.question_id ? { question_id: input.question_id } : { approval_id: input.approval_id, decision: input.decision },
      requestId,
    });
    return this.toTask(row);
  }

  async stop(auth: Caller, taskId: string, requestId: string): Promise<Task> {
    const before = await this.getRow(auth.orgId, taskId);
    const row = await this.deps.loop.stop(taskId, auth.orgId, 'operator');
    if (!isDone(before.status)) {
      await recordAudit(this.deps.db, { orgId: auth.orgId, actor: auth.actor, action: 'task.stopped', objectType: 'task', objectId: taskId, requestId });
    }
    return this.toTask(row);
  }

  /** One recorded frame as PNG bytes; 404 past the end. */
  async frame(orgId: string, taskId: string, seq: number): Promise<Buffer> {
    const row = await this.getRow(orgId, taskId);
    if (seq < 1 || seq > row.frames) throw notFound(`Task ${taskId} has ${row.frames} frame${row.frames === 1 ? '' : 's'}; there is no frame ${seq}`);
    const frame = await readFrame(this.deps.db, taskId, seq);
    if (!frame) throw notFound(`No frame ${seq}`);
    return frame.png;
  }
}
