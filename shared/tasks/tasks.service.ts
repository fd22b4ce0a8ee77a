import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Caller } from '../audit/actor';
import type { AgentService, AgentVersionChoice } from '../agents/agents.service';
import type { ModelRegistry } from '../models/registry';
import { recordAudit } from '../audit/audit.repository';
import { invalidRequest, notFound } from '../errors';
import type { Page, PageRequest } from '../pagination';
import { findSession } from '../sessions/sessions.repository';
import type { RespondInput, TaskLoop } from './loop';
import { createTask, createTaskInTransaction, type CreatedTask, type CreateTaskDeps, type CreateTaskInput } from './create-task';
import { isDone, toTask, type Task, type TaskEvent } from './task-object';

export type { TaskEvent };
import {
  findTask,
  listTasks,
  readTaskObject,
  type TaskObjectRow,
  readFrame,
  readTraceEvents,
  type TaskFilter,
  type TaskRow,
} from './tasks.repository';
import { earlierTaskFor } from './idempotency';

export interface StartTaskInput {
  prompt: string;
  agent_id?: string;
  /** Default `published`; a number runs that published version (`AgentService.resolveForTask`). */
  agent_version?: AgentVersionChoice;
  request_id?: string;
  metadata?: Record<string, string>;
}

export interface TasksDeps {
  db: Knex;
  clock: Clock;
  agents: Pick<AgentService, 'resolveForTask'>;
  models: ModelRegistry;
  loop: TaskLoop;
  billing: CreateTaskDeps['billing'];
  baseUrl: string;
  logger: Logger;
}


/**
 * Starting, reading and steering tasks; the loop itself is `TaskLoop`, and following a task (the
 * long polls) is `TaskFollowers`'.
 */
export class TasksService {
  /** What `createTask` needs of this service's dependencies. */
  private readonly createDeps: CreateTaskDeps;

  constructor(private readonly deps: TasksDeps) {
    this.createDeps = { db: deps.db, clock: deps.clock, models: deps.models, enqueueFirstStep: (taskId) => deps.loop.enqueueFirstStep(taskId), billing: deps.billing };
  }

  toTask(row: TaskObjectRow): Task {
    return toTask(row, this.deps.baseUrl, this.deps.clock.now());
  }

  /**
   * Starts a task on a connected person's session (`createTask` checks the session, resolves
   * the agent and writes). The same `request_id` (the idempotency key) returns the same task
   * (also under concurrent retries), and 409 with other parameters (shared/tasks/idempotency.ts);
   * one task at a time per computer, settled by a unique index. A machine session is not the
   * API's: 404. `httpRequestId` is the id of the HTTP request, for the audit row.
   */
  async start(auth: Caller, sessionCode: string, input: StartTaskInput, httpRequestId: string): Promise<Task> {
    if (input.request_id) {
      const earlier = await earlierTaskFor(this.deps.db, auth.orgId, input.request_id, { ...input, session_id: sessionCode });
      if (earlier) return this.toTask(earlier);
    }
    const session = await findSession(this.deps.db, auth.orgId, sessionCode);
    if (!session || session.kind !== 'person') throw notFound(`No session ${sessionCode}`);
    const { row } = await this.create({
      session,
      agent: () => this.deps.agents.resolveForTask(auth.orgId, input.agent_id ?? session.agent_id, input.agent_version ?? 'published'),
      prompt: input.prompt,
      idempotencyKey: input.request_id,
      metadata: input.metadata,
      actor: auth.actor,
      httpRequestId,
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
    const events = await readTraceEvents(this.deps.db, taskId);
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
      decisions: events.map((event) => ({
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

  async respond(auth: Caller, taskId: string, input: RespondInput, requestId: string): Promise<Task> {
    const hasQuestion = input.question_id !== undefined || input.answer !== undefined;
    const hasApproval = input.approval_id !== undefined || input.decision !== undefined;
    if (hasQuestion === hasApproval || (hasQuestion && (input.question_id === undefined || input.answer === undefined)) || (hasApproval && (input.approval_id === undefined || input.decision === undefined))) {
      throw invalidRequest('Send either question_id with answer, or approval_id with decision (and an optional note)');
    }
    // The loop answers 404 for another org's task under the same lock that decides the answer,
    // and writes the audit row in the answer's own transaction.
    const row = await this.deps.loop.respond(taskId, auth.orgId, input, 'operator', {
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

  /** Stops the org's task; the audit row is written with the stop (none when the task had ended already). */
  async stop(auth: Caller, taskId: string, requestId: string): Promise<Task> {
    const row = await this.deps.loop.stop(taskId, auth.orgId, 'operator', undefined, { orgId: auth.orgId, actor: auth.actor, action: 'task.stopped', objectType: 'task', objectId: taskId, requestId });
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
