import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Notifier } from '../notifier';
import type { Caller } from '../audit/actor';
import type { AgentService } from '../agents/agents.service';
import type { ModelRegistry } from '../models/catalog';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import { findSession } from '../sessions/sessions.repository';
import { taskChannel } from './task-change';
import { stepJobId, type RespondInput, type TaskLoop } from './task-loop';
import { isDone, toTask, type Task } from './task-object';
import {
  findActiveTask,
  findTask,
  findTaskByRequestId,
  insertTask,
  listTasks,
  readEvents,
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

export interface TaskEvent {
  cursor: number;
  type: string;
  message: string;
  ts: string;
  data: Record<string, unknown>;
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

const UNIQUE_VIOLATION = '23505';

/** Starting, reading, following and steering tasks; the loop itself is `TaskLoop`. */
export class TasksService {
  constructor(private readonly deps: TasksDeps) {}

  toTask(row: TaskRow): Task {
    return toTask(row, this.deps.baseUrl, this.deps.clock.now());
  }

  /**
   * Starts a task on a connected session. The same `request_id` returns the same task (also
   * under concurrent retries); one task at a time per computer, settled by a unique index.
   */
  async start(auth: Caller, sessionCode: string, input: StartTaskInput, requestId: string): Promise<Task> {
    if (input.request_id) {
      const existing = await findTaskByRequestId(this.deps.db, auth.orgId, input.request_id);
      if (existing) return this.toTask(existing);
    }
    const session = await findSession(this.deps.db, auth.orgId, sessionCode);
    if (!session || session.status === 'expired') throw notFound(`No session ${sessionCode}`);
    if (session.status !== 'connected') {
      throw conflict(`No computer is connected to session ${sessionCode}; the person must enter the code in the app first`, 'not_connected');
    }
    const agent = await this.deps.agents.resolveForTask(auth.orgId, input.agent_id ?? session.agent_id, input.agent_version === 'draft' ? 'draft' : 'published');
    if (!this.deps.models.isAvailable(agent.model)) {
      throw new ApiError('server_error', `The model ${agent.model} cannot run on this server`, { status: 503, code: 'model_unavailable' });
    }
    const now = this.deps.clock.now();
    try {
      const taskId = newId('task');
      const row = await this.deps.db.transaction(async (trx) => {
        const inserted = await insertTask(trx, {
          id: taskId,
          org_id: auth.orgId,
          session_id: session.code,
          agent_id: agent.agent_id,
          agent_version: agent.version,
          agent_draft: agent.draft,
          agent_config: agent.config,
          model: agent.model,
          effort: agent.effort,
          prompt: input.prompt,
          request_id: input.request_id ?? null,
          metadata: input.metadata ?? {},
          status: 'queued',
          phase: 'model',
          current_job_id: stepJobId(taskId, 1),
          created_at: now,
          updated_at: now,
        });
        await trx('sessions').where({ code: session.code }).update({ task_count: trx.raw('task_count + 1'), latest_task_id: inserted.id });
        await recordAudit(trx, {
          orgId: auth.orgId,
          actor: auth.actor,
          action: 'task.created',
          objectType: 'task',
          objectId: inserted.id,
          data: { session_id: session.code, agent_id: agent.agent_id, agent_version: agent.version, agent_draft: agent.draft },
          requestId,
        });
        return inserted;
      });
      await this.deps.loop.enqueueFirstStep(row.id);
      return this.toTask(row);
    } catch (error) {
      if ((error as { code?: string }).code !== UNIQUE_VIOLATION) throw error;
      // A concurrent retry with the same request_id may collide on either unique index; PostgreSQL
      // has waited for it to commit, so its task is visible now.
      if (input.request_id) {
        const existing = await findTaskByRequestId(this.deps.db, auth.orgId, input.request_id);
        if (existing) return this.toTask(existing);
      }
      const active = await findActiveTask(this.deps.db, session.code);
      throw conflict(
        `A task is already running on this computer${active ? ` (${active.id})` : ''}; follow it or stop it first`,
        'task_running',
        active ? { active_task_id: active.id } : undefined,
      );
    }
  }

  async getRow(orgId: string, taskId: string): Promise<TaskRow> {
    const row = await findTask(this.deps.db, orgId, taskId);
    if (!row) throw notFound(`No task ${taskId}`);
    return row;
  }

  async get(orgId: string, taskId: string): Promise<Task> {
    return this.toTask(await this.getRow(orgId, taskId));
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

  private async eventsAfter(taskId: string, after: number): Promise<TaskEvent[]> {
    const rows = await readEvents(this.deps.db, taskId, after, EVENTS_PER_PAGE);
    return rows.map((row) => ({ cursor: row.cursor, type: row.type, message: row.message, ts: row.ts.toISOString(), data: row.data }));
  }

  /**
   * Events after `after`; when there are none yet, waits up to `waitMs` for one. A Redis
   * notification wakes the wait within milliseconds of the write; nothing polls the database.
   */
  async follow(orgId: string, taskId: string, after: number, waitMs: number): Promise<{ data: TaskEvent[]; cursor: number; task: Task }> {
    if (waitMs > MAX_WAIT_MS) throw invalidRequest(`wait_ms must be at most ${MAX_WAIT_MS}`);
    let row = await this.getRow(orgId, taskId);
    let data = row.cursor > after ? await this.eventsAfter(taskId, after) : [];
    if (data.length === 0 && waitMs > 0 && !isDone(row.status)) {
      let wake: () => void = () => undefined;
      const woken = new Promise<void>((resolve) => (wake = resolve));
      const unsubscribe = await this.deps.notifier.subscribe(taskChannel(taskId), (cursor) => {
        if (Number(cursor) > after) wake();
      });
      const timer = setTimeout(wake, waitMs);
      try {
        // An event may have landed between the first read and the subscription.
        row = await this.getRow(orgId, taskId);
        if (row.cursor <= after && !isDone(row.status)) await woken;
      } finally {
        clearTimeout(timer);
        await unsubscribe();
      }
      row = await this.getRow(orgId, taskId);
      data = row.cursor > after ? await this.eventsAfter(taskId, after) : [];
    }
    const cursor = data.length ? data[data.length - 1]!.cursor : Math.max(after, 0);
    return { data, cursor, task: this.toTask(row) };
  }

  async respond(auth: Caller, taskId: string, input: RespondInput, requestId: string): Promise<Task> {
    const hasQuestion = input.question_id !== undefined || input.answer !== undefined;
    const hasApproval = input.approval_id !== undefined || input.decision !== undefined;
    if (hasQuestion === hasApproval || (hasQuestion && (input.question_id === undefined || input.answer === undefined)) || (hasApproval && (input.approval_id === undefined || input.decision === undefined))) {
      throw invalidRequest('Send either question_id with answer, or approval_id with decision (and an optional note)');
    }
    await this.getRow(auth.orgId, taskId);
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
