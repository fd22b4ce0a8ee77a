import type { Knex } from '../db/knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { SIGNATURE_HEADER, signPayload, type SafeHttpClient } from '../http';
import { newId } from '../ids';
import { QUEUE_NAMES } from '../queues/catalog';
import { jobId, type JobQueues } from '../queues/job-queues';
import { currentToolSecret } from './tool-secrets.service';
import { claimToolCall, finishToolCall, getToolCall, insertToolCall, latestToolCallIdOf, type ToolCall } from './tool-calls.repository';

/**
 * Calls of the agents' HTTP tools (spec: Outgoing HTTP tool call). The task loop records a call
 * with {@link createToolCall} in its own transaction and, after commit, enqueues it with
 * {@link enqueueToolCall}; the `tool-calls` worker makes the one signed POST
 * ({@link ToolCallService.execute}) and hands the outcome to the loop.
 */

/** Reply bytes that go back to the model; a longer reply is cut there and never read further. */
export const TOOL_REPLY_MAX_BYTES = 64 * 1024;

export interface CreateToolCallInput {
  orgId: string;
  taskId: string;
  sessionId: string;
  agentId: string;
  /** The agent version the task runs (the spec's `task.agent_version`, an integer). */
  agentVersion: number;
  /** The task step (model turn) that asked for the call. */
  step: number;
  /** The tool as configured on that agent version (`tools.http[]`). */
  tool: { name: string; url: string };
  arguments: Record<string, unknown>;
}

/** What the task loop hears when a call is finished (its row already updated). */
export interface ToolCallFinished {
  id: string;
  org_id: string;
  task_id: string;
  step: number;
  tool: string;
  /** True for a 2xx reply: `reply_text` is the result. Otherwise the call failed. */
  ok: boolean;
  /** The reply's HTTP status; null when none came (timeout, refused address, network error, interrupted). */
  status: number | null;
  /** The reply body as text, at most 64 KB (also on failure: it often says why). */
  reply_text: string;
  /** The reply was longer than 64 KB and was cut. */
  truncated: boolean;
  /** Why the call failed; null when ok. */
  error: string | null;
  /** `timeout`, `network`, `refused`, `http_status`, `interrupted`, or null. */
  error_code: string | null;
  duration_ms: number | null;
}

/** Records a call inside the caller's transaction; returns its id (`call_…`). Enqueue it after commit. */
export async function createToolCall(trx: Knex | Knex.Transaction, input: CreateToolCallInput): Promise<string> {
  const id = newId('call');
  await insertToolCall(trx, {
    id,
    org_id: input.orgId,
    task_id: input.taskId,
    session_id: input.sessionId,
    agent_id: input.agentId,
    agent_version: input.agentVersion,
    step: input.step,
    tool_name: input.tool.name,
    url: input.tool.url,
    arguments: JSON.stringify(input.arguments),
  });
  return id;
}

/** Enqueues a committed call (idempotent: one job id per call). */
export async function enqueueToolCall(queues: JobQueues, callId: string): Promise<void> {
  await queues.enqueue(QUEUE_NAMES.toolCalls, 'call', { call_id: callId }, {
    jobId: jobId('call', callId),
    // Infrastructure errors only: the POST itself is made at most once (see ToolCallService.execute).
    attempts: 3,
    backoff: { type: 'exponential', delay: 1000 },
  });
}

/**
 * The reconcile sweep's side of a task waiting on a tool call: the call's job, when Redis lost
 * it (or it failed on infrastructure errors), is queued again. Harmless when the job is there:
 * the job id is the call's, and a call is made at most once whatever runs it (`execute`).
 * Answers whether a job was queued.
 */
export async function requeueToolCallOf(db: Knex, queues: JobQueues, taskId: string): Promise<boolean> {
  const latest = await latestToolCallIdOf(db, taskId);
  if (latest === null) return false;
  const job = await queues.queue(QUEUE_NAMES.toolCalls).getJob(jobId('call', latest));
  if (!job) {
    await enqueueToolCall(queues, latest);
    return true;
  }
  if (await job.isFailed()) {
    await job.retry();
    return true;
  }
  return false;
}

/** The JSON body POSTed to the tool: exactly the spec's fields. */
export function toolCallBody(call: ToolCall): string {
  return JSON.stringify({
    tool: call.tool_name,
    arguments: call.arguments,
    task: { task_id: call.task_id, session_id: call.session_id, agent_id: call.agent_id, agent_version: call.agent_version },
    org_id: call.org_id,
  });
}

export function finishedOf(call: ToolCall): ToolCallFinished {
  return {
    id: call.id,
    org_id: call.org_id,
    task_id: call.task_id,
    step: call.step,
    tool: call.tool_name,
    ok: call.status === 'succeeded',
    status: call.http_status,
    reply_text: call.reply_text ?? '',
    truncated: call.truncated,
    error: call.error,
    error_code: call.error_code,
    duration_ms: call.duration_ms,
  };
}

/**
 * The text the model gets back for a finished call: the reply on success; on failure, a
 * sentence saying the call failed and why, then whatever reply came.
 */
export function toolResultForModel(call: ToolCallFinished): { is_error: boolean; content: string } {
  const cut = call.truncated ? `\n[the reply was longer than ${TOOL_REPLY_MAX_BYTES / 1024} KB and was cut]` : '';
  if (call.ok) return { is_error: false, content: `${call.reply_text}${cut}` };
  const reply = call.reply_text ? `\nReply:\n${call.reply_text}${cut}` : '';
  return { is_error: true, content: `The call to the tool "${call.tool}" failed: ${call.error ?? 'no reply'}.${reply}` };
}

/** PostgreSQL text cannot hold NUL; a reply is text for the model, so NUL becomes U+FFFD. */
export function storableText(text: string): string {
  return text.includes('\u0000') ? text.replace(/\u0000/g, '\uFFFD') : text;
}

export class ToolCallService {
  constructor(private readonly deps: { db: Knex; http: SafeHttpClient; config: Readonly<Config>; logger: Logger }) {}

  /**
   * Makes the call's one POST and stores the outcome. Idempotent: a call already finished is
   * reported again as it is (so a lost notification is repeated); a call whose POST was started
   * by a worker that then died is failed as `interrupted`, never sent twice (spec: each call
   * made once). Returns null when there is nothing to report (no such call, or another worker
   * is making it right now).
   */
  async execute(callId: string): Promise<ToolCallFinished | null> {
    const { db, http, config } = this.deps;
    const call = await getToolCall(db, callId);
    if (!call) return null;
    if (call.status !== 'pending') return finishedOf(call);
    if (call.started_at) return this.failInterrupted(call);

    const secret = await currentToolSecret(db, call.org_id);
    if (!(await claimToolCall(db, callId))) return null;

    const body = toolCallBody(call);
    const result = await http.post(call.url, body, {
      headers: { [SIGNATURE_HEADER]: signPayload(body, secret) },
      timeoutMs: config.toolTimeoutMs,
      maxResponseBytes: TOOL_REPLY_MAX_BYTES,
    });
    const row = await finishToolCall(db, callId, {
      status: result.ok ? 'succeeded' : 'failed',
      http_status: result.status,
      reply_text: storableText(result.bodyText),
      truncated: result.truncated,
      error: result.error,
      error_code: result.errorCode,
      duration_ms: result.durationMs,
    });
    return row ? finishedOf(row) : null;
  }

  private async failInterrupted(call: ToolCall): Promise<ToolCallFinished | null> {
    const row = await finishToolCall(this.deps.db, call.id, {
      status: 'failed',
      error: 'the call was interrupted before its reply was recorded (the worker stopped); calls are made once and not repeated',
      error_code: 'interrupted',
    });
    this.deps.logger.warn({ call_id: call.id, task_id: call.task_id }, 'tool call interrupted; failed without a second attempt');
    return row ? finishedOf(row) : null;
  }
}
