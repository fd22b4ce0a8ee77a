import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Actor } from '../audit/actor';
import type { AgentForTask } from '../agents/agents.service';
import type { AgentConfig } from '../agents/agent-config';
import type { ModelRegistry } from '../models/registry';
import type { SessionRow } from '../sessions/sessions.repository';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { GUARDRAIL_LIMITS } from '../guardrails/guardrails.types';
import { newId } from '../ids';
import { recordSessionTask } from '../sessions/sessions.repository';
import { stepJobId } from './loop';
import { findActiveTask, insertTask, type TaskRow } from './tasks.repository';
import { earlierTaskFor } from './idempotency';
import type { StartAdmissionService } from '../billing/start-admission.service';

/**
 * Creating a task, whoever asks: `POST /v1/sessions/{id}/tasks`, the older API's `/start`, and
 * (later) evals on a machine session. The task row, the session's counters and the audit row
 * commit together; the first step is queued after the commit (a job carries ids, and its
 * processor must find the row). Which session and agent version are the caller's to resolve.
 */

export interface CreateTaskDeps {
  db: Knex;
  clock: Clock;
  models: Pick<ModelRegistry, 'isAvailable' | 'unavailableReason' | 'resolve'>;
  /** Queues step 1 (`TaskLoop.enqueueFirstStep`); when Redis does not take it, the sweep does later. */
  enqueueFirstStep: (taskId: string) => Promise<unknown>;
  /**
   * The plan's limits (shared/billing): an auto top-up tried before the transaction when the
   * next minute is not covered, then, in it, the org's 429 `concurrency_limit` and 402s.
   * Tasks on eval machines are not limited here (their machine minutes are billed instead).
   */
  billing: { admission: Pick<StartAdmissionService, 'prepareStart' | 'admitStart'> };
}

/** Limits of one task; each overrides the agent version's `guardrails.max_steps` / `max_minutes` for it. */
export interface TaskLimits {
  steps?: number;
  minutes?: number;
}

export interface CreateTaskInput {
  /** The session the task runs on; it must be connected. */
  session: Pick<SessionRow, 'code' | 'org_id' | 'status' | 'kind' | 'last_active_at' | 'expires_at'>;
  /**
   * What `AgentService.resolveForTask` returned, or how to ask it: then asked only once the
   * session is found to take a task, so that a session without a computer is refused (409) whatever
   * the agent asked for.
   */
  agent: AgentForTask | (() => Promise<AgentForTask>);
  prompt: string;
  limits?: TaskLimits;
  /**
   * Values the task must treat as secrets (e.g. an eval's `{ secret }` facts): the guardrails
   * hand any text holding one to the person instead of the agent typing it. Kept on the task row,
   * never in its object or events.
   */
  secrets?: readonly string[];
  /** The caller's idempotency key (the API's `request_id`): the same one returns the task it made (also under concurrency); with other parameters, 409. */
  idempotencyKey?: string;
  metadata?: Record<string, string>;
  /** Who asked, for the audit row (null: the service itself, or a session token). */
  actor: Actor;
  /** The id of the HTTP request that asked, for the audit row. */
  httpRequestId?: string;
}

export interface CreatedTask {
  row: TaskRow;
  /** False when `idempotencyKey` named a task made before: `row` is that task, and nothing was written. */
  created: boolean;
}

const UNIQUE_VIOLATION = '23505';

/**
 * The computer has a task already, seen before the plan's limits are asked (`writeTask`): it is
 * answered as the unique index's refusal is (the same request's task, or 409 `task_running`).
 */
class ComputerBusy extends Error {}

/**
 * Creates a task in a transaction of its own and queues its first step once that commits.
 * Throws 404 for an expired session, 409 `not_connected` when no computer is connected, 503
 * `model_unavailable` when the agent's model cannot run here, 400 for limits out of range, and
 * 409 `task_running` (with `active_task_id`) when the computer already has a task, 429
 * `concurrency_limit` when the org's plan runs no more tasks at once, 402 `payment_required`
 * when the next minute is not covered; a retired model with a successor runs as its successor.
 */
export async function createTask(deps: CreateTaskDeps, input: CreateTaskInput): Promise<CreatedTask> {
  const { task, agent } = await checkedTask(deps, input);
  const metered = input.session.kind !== 'machine';
  if (metered) await deps.billing.admission.prepareStart(input.session.org_id);
  try {
    const row = await deps.db.transaction((trx) => writeTask(trx, task, input, metered ? deps.billing : null));
    await deps.enqueueFirstStep(row.id);
    return { row, created: true };
  } catch (error) {
    if (!hasTaskAlready(error) && !isRefusedByPlan(error)) throw error;
    // A concurrent retry of this start that got in first holds the computer or a slot of the plan: it is that task.
    const earlier = await earlierTask(deps.db, input, agent);
    if (earlier) return { row: earlier, created: false };
    if (!hasTaskAlready(error)) throw error;
    throw await taskRunning(deps.db, input.session.code);
  }
}

/**
 * As `createTask`, written in the caller's transaction (in a savepoint, so that a conflict
 * leaves `trx` usable). The caller runs `afterCommit` once `trx` has committed: it queues the
 * first step (should it never run, the reconcile sweep queues the step of a task left queued).
 */
export async function createTaskInTransaction(
  trx: Knex.Transaction,
  deps: CreateTaskDeps,
  input: CreateTaskInput,
): Promise<CreatedTask & { afterCommit: () => Promise<unknown> }> {
  const { task, agent } = await checkedTask(deps, input);
  try {
    const row = await trx.transaction((savepoint) => writeTask(savepoint, task, input, input.session.kind !== 'machine' ? deps.billing : null));
    return { row, created: true, afterCommit: () => deps.enqueueFirstStep(row.id) };
  } catch (error) {
    if (!hasTaskAlready(error)) throw error;
    const earlier = await earlierTask(trx, input, agent);
    if (!earlier) throw await taskRunning(trx, input.session.code);
    return { row: earlier, created: false, afterCommit: async () => undefined };
  }
}

/**
 * Throws unless a task can start on the session: 404 when it expired (saying so, and when: the
 * session itself can still be read), 409 `not_connected` when no computer is connected, saying
 * whether one never paired (`waiting`) or went offline, and since when (`disconnected`).
 */
export function assertSessionTakesTask(session: CreateTaskInput['session']): void {
  if (session.status === 'expired') {
    const when = session.expires_at ? ` at ${session.expires_at.toISOString()}` : '';
    const next = session.kind === 'machine' ? '' : ' Create a new session for the person.';
    throw notFound(`Session ${session.code} expired${when}; its code no longer works and it takes no tasks.${next}`);
  }
  if (session.status === 'connected') return;
  const machine = session.kind === 'machine';
  if (session.status === 'disconnected') {
    const since = session.last_active_at ? ` since ${session.last_active_at.toISOString()}` : '';
    const back = machine ? 'the machine must say hello with its code again' : 'the person must open the app again to reconnect';
    throw conflict(`No computer is connected to session ${session.code}: its computer has been offline${since}; ${back}`, 'not_connected');
  }
  const who = machine ? 'the machine must say hello with its code first' : 'the person must enter the code in the app first';
  throw conflict(`No computer is connected to session ${session.code}: none has paired yet; ${who}`, 'not_connected');
}

/** The row of the new task, once the session, the model and the limits allow it (the one check of the session). */
async function checkedTask(deps: CreateTaskDeps, input: CreateTaskInput): Promise<{ task: Partial<TaskRow>; agent: AgentForTask }> {
  const { session } = input;
  assertSessionTakesTask(session);
  const agent = typeof input.agent === 'function' ? await input.agent() : input.agent;
  if (!deps.models.isAvailable(agent.model)) {
    const reason = deps.models.unavailableReason(agent.model) ?? `The model ${agent.model} cannot run on this server`;
    throw new ApiError('server_error', reason, { status: 503, code: 'model_unavailable' });
  }
  const now = deps.clock.now();
  const taskId = newId('task');
  const task: Partial<TaskRow> = {
    id: taskId,
    org_id: session.org_id,
    session_id: session.code,
    agent_id: agent.agent_id,
    agent_version: agent.version,
    agent_draft: agent.draft,
    agent_config: withLimits(agent.config, input.limits),
    // A retired id with a configured successor runs as its successor (docs/models.md).
    model: deps.models.resolve(agent.model),
    effort: agent.effort,
    prompt: input.prompt,
    request_id: input.idempotencyKey ?? null,
    metadata: input.metadata ?? {},
    secrets: input.secrets?.length ? [...input.secrets] : null,
    status: 'queued',
    phase: 'model',
    current_job_id: stepJobId(taskId, 1),
    created_at: now,
    updated_at: now,
  };
  return { task, agent };
}

/**
 * The agent's config as the task keeps it (its snapshot), with the task's limits in place of
 * the version's: the loop reads its limits from the snapshot, so it needs nothing else.
 */
export function withLimits(config: AgentConfig, limits: TaskLimits | undefined): AgentConfig {
  if (limits?.steps === undefined && limits?.minutes === undefined) return config;
  const guardrails = { ...config.guardrails };
  if (limits.steps !== undefined) guardrails.max_steps = limitValue(limits.steps, GUARDRAIL_LIMITS.maxSteps, 'limits.steps');
  if (limits.minutes !== undefined) guardrails.max_minutes = limitValue(limits.minutes, GUARDRAIL_LIMITS.maxMinutes, 'limits.minutes');
  return { ...config, guardrails };
}

/** A limit within the range an agent's own guardrails allow, or 400. */
function limitValue(value: number, range: { min: number; max: number }, field: string): number {
  if (!Number.isInteger(value) || value < range.min || value > range.max) {
    throw invalidRequest(`${field} must be an integer from ${range.min} to ${range.max}`, { param: field });
  }
  return value;
}

async function writeTask(trx: Knex.Transaction, task: Partial<TaskRow>, input: CreateTaskInput, billing: CreateTaskDeps['billing'] | null): Promise<TaskRow> {
  if (billing) {
    // A computer that already has a task is 409 task_running (or the same request's task), as
    // the unique index would answer, before the plan's limits are asked.
    if (await findActiveTask(trx, input.session.code)) throw new ComputerBusy('the session has an active task');
    // Under the org's account lock: the org's starts count its running tasks one after another.
    await billing.admission.admitStart(trx, input.session.org_id);
  }
  const inserted = await insertTask(trx, task);
  await recordSessionTask(trx, inserted.session_id, inserted.id);
  await recordAudit(trx, {
    orgId: inserted.org_id,
    actor: input.actor,
    action: 'task.created',
    objectType: 'task',
    objectId: inserted.id,
    data: { session_id: inserted.session_id, agent_id: inserted.agent_id, agent_version: inserted.agent_version, agent_draft: inserted.agent_draft },
    requestId: input.httpRequestId,
  });
  return inserted;
}

/**
 * After a unique index or the plan refused the task: a concurrent retry with the same idempotency
 * key may collide on either index or hold the plan's slot, and PostgreSQL has waited for it to
 * commit, so its task is visible now (and is returned only when asked for with the same
 * parameters, `earlierTaskFor`).
 */
async function earlierTask(db: Knex | Knex.Transaction, input: CreateTaskInput, agent: AgentForTask): Promise<TaskRow | undefined> {
  if (!input.idempotencyKey) return undefined;
  return earlierTaskFor(db, input.session.org_id, input.idempotencyKey, {
    session_id: input.session.code,
    prompt: input.prompt,
    agent_id: agent.agent_id,
    agent_version: agent.draft ? 'draft' : 'published',
    metadata: input.metadata,
  });
}

/** The computer has a task already: 409 `task_running`, naming it. */
async function taskRunning(db: Knex | Knex.Transaction, sessionCode: string): Promise<ApiError> {
  const active = await findActiveTask(db, sessionCode);
  return conflict(
    `A task is already running on this computer${active ? ` (${active.id})` : ''}; follow it or stop it first`,
    'task_running',
    active ? { active_task_id: active.id } : undefined,
  );
}

/** A 402 or 429 of the plan (`admitStart`). */
function isRefusedByPlan(error: unknown): boolean {
  return error instanceof ApiError && (error.status === 402 || error.code === 'concurrency_limit');
}

/** The task could not be written because the computer, or the same idempotency key, has one already. */
function hasTaskAlready(error: unknown): boolean {
  return error instanceof ComputerBusy || (error as { code?: string }).code === UNIQUE_VIOLATION;
}
