import type { Knex } from '../db/knex';
import { newId } from '../ids';
import type { JobQueues } from '../queues/job-queues';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import { insertOrgEvent } from './org-events.repository';

/** The ten webhook event types of the spec, in its order. */
export const ORG_EVENT_TYPES = [
  'session.connected',
  'session.disconnected',
  'task.started',
  'task.waiting_for_user',
  'task.question_answered',
  'task.waiting_for_approval',
  'task.approval_decided',
  'task.completed',
  'task.failed',
  'task.stopped',
] as const;
export type OrgEventType = (typeof ORG_EVENT_TYPES)[number];

export interface OrgEventInput {
  orgId: string;
  type: OrgEventType;
  sessionId?: string | null;
  taskId?: string | null;
  /** The webhook's `data`: `task` and/or `session` as the API returns them, plus `answer` or `decision`. */
  data: Record<string, unknown>;
}

/**
 * Appends an event inside the caller's transaction and returns its id. After the commit, pass
 * the id to `dispatchOrgEvents` so that the webhooks queue delivers it; the sweep covers a lost
 * dispatch.
 */
export async function appendOrgEvent(trx: Knex | Knex.Transaction, event: OrgEventInput): Promise<string> {
  const id = newId('evt');
  await insertOrgEvent(trx, {
    id,
    org_id: event.orgId,
    type: event.type,
    session_id: event.sessionId ?? null,
    task_id: event.taskId ?? null,
    data: JSON.stringify(event.data),
  });
  return id;
}

/**
 * Enqueues delivery of events already committed (idempotent: one job id per event). An event
 * Redis does not take now stays undispatched, and the sweep dispatches it once Redis answers.
 */
export async function dispatchOrgEvents(queues: JobQueues, eventIds: string[]): Promise<void> {
  await Promise.all(
    eventIds.map((eventId) => queues.enqueueOrLeaveToSweep(QUEUE_NAMES.webhooks, 'dispatch', { event_id: eventId }, { jobId: jobId('dispatch', eventId) })),
  );
}
