import type { Knex } from '../db/knex';
import { conflict, invalidRequest } from '../errors';
import { findTaskByIdempotencyKey, type TaskRow } from './tasks.repository';
import { idempotencyKeyHeader } from '../idempotency/idempotency.service';

/**
 * `request_id` (or the `Idempotency-Key` header) as Stripe treats its idempotency keys: the same
 * request again returns the task it made; the same key with other parameters is a mistake the
 * caller must hear about (409), not a task silently standing in for the one they asked for.
 * Called "idempotency key" in the code (the HTTP request's own id is another thing), it is looked
 * up and compared in one place, `earlierTaskFor`, which a start asks twice: first (tasks.service.ts),
 * before the session or the agent is looked at, so that a retry gets its task whatever became of
 * them since; and after a unique index or the plan refused the new row (create-task.ts), when a
 * concurrent retry got in first.
 */

/** What a task request asked for, as far as it can be compared with the task it made. */
export interface TaskRequestParameters {
  session_id: string;
  prompt: string;
  /** Absent: whichever agent the session defaults to (not compared). */
  agent_id?: string;
  /** Absent or `published`: any published version (the one current then ran); a number: that version. */
  agent_version?: 'draft' | 'published' | number;
  metadata?: Record<string, string>;
}

/** The parameters of `request` that differ from those `earlier` was made with, by name. */
export function differingParameters(earlier: Pick<TaskRow, 'session_id' | 'prompt' | 'agent_id' | 'agent_version' | 'agent_draft' | 'metadata'>, request: TaskRequestParameters): string[] {
  const differing: string[] = [];
  if (earlier.prompt !== request.prompt) differing.push('prompt');
  if (request.agent_id !== undefined && earlier.agent_id !== request.agent_id) differing.push('agent_id');
  const asked = request.agent_version;
  if (earlier.agent_draft !== (asked === 'draft') || (typeof asked === 'number' && earlier.agent_version !== asked)) differing.push('agent_version');
  if (!sameMetadata(earlier.metadata ?? {}, request.metadata ?? {})) differing.push('metadata');
  return differing;
}

/**
 * The task an earlier request with `idempotencyKey` made, if any, when `request` asks for what it
 * was made with; otherwise 409 (`sameRequestOrConflict`). Undefined: no task has that key.
 */
export async function earlierTaskFor(db: Knex | Knex.Transaction, orgId: string, idempotencyKey: string, request: TaskRequestParameters): Promise<TaskRow | undefined> {
  const earlier = await findTaskByIdempotencyKey(db, orgId, idempotencyKey);
  return earlier && sameRequestOrConflict(earlier, idempotencyKey, request);
}

/**
 * Returns `earlier` when `request` asks for what it was made with; otherwise throws 409:
 * `request_id_in_use` when it ran on another session (as the older API always answered),
 * `idempotency_conflict` naming the parameters that differ.
 */
export function sameRequestOrConflict(earlier: TaskRow, idempotencyKey: string, request: TaskRequestParameters): TaskRow {
  if (earlier.session_id !== request.session_id) {
    throw conflict(`request_id ${idempotencyKey} was already used for a task on another session`, 'request_id_in_use');
  }
  const differing = differingParameters(earlier, request);
  if (differing.length > 0) {
    throw conflict(
      `request_id ${idempotencyKey} was already used for task ${earlier.id} with another ${differing.join(', ')}; use a new request_id for a new task`,
      'idempotency_conflict',
      { task_id: earlier.id },
    );
  }
  return earlier;
}

/**
 * The idempotency key of a request: the body's `request_id` or the `Idempotency-Key` header
 * (the same thing, for clients that set it on every POST). Both, differing: 400.
 */
export function idempotencyKey(bodyRequestId: string | undefined, header: string | undefined): string | undefined {
  const fromHeader = idempotencyKeyHeader(header);
  if (bodyRequestId !== undefined && fromHeader !== undefined && bodyRequestId !== fromHeader) {
    throw invalidRequest('request_id and the Idempotency-Key header differ; send one of them, or the same value in both', { param: 'request_id' });
  }
  return bodyRequestId ?? fromHeader;
}

function sameMetadata(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
