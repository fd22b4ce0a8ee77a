import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { Caller } from '../audit/actor';
import type { AgentService } from '../agents/agents.service';
import type { ModelRegistry } from '../models/catalog';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import { findSession } from '../sessions/sessions.repository';
import { stepJobId, type RespondInput, type TaskLoop } from './loop';
import { isDone, toTask, type Task, type TaskEvent } from './task-object';

export type { TaskEvent };
import {
  findActiveTask,
  findTask,
  findTaskByRequestId,
  insertTask,
  listTasks,
  readTaskObject,
  type TaskObjectRow,
  readFrame,
  readTraceEvents,
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

export interface TasksDeps {
  db: Knex;
  clock: Clock;
  agents: Pick<AgentService, 'resolveForTask'>;
  models: ModelRegistry;
  loop: TaskLoop;
  baseUrl: string;
  logger: Logger;
}

const UNIQUE_VIOLATION = '23505';

/**
 * Starting, reading and steering tasks; the loop itself is `TaskLoop`, and following a task (the
 * long polls) is `TaskFollowers`'.
 */
export class TasksService {
  constructor(private readonly deps: TasksDeps) {}

  toTask(row: TaskObjectRow): Task {
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
      const reason = this.deps.models.unavailableReason(agent.model) ?? `The model ${agent.model} cannot run on this server`;
      throw new ApiError('server_error', reason, { status: 503, code: 'model_unavailable' });
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
          // A retired id with a configured successor runs as its successor (docs/models.md).
          model: this.deps.models.resolve(agent.model),
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
