import type { Container } from '../../shared/container';
import { appendOrgEvent, dispatchOrgEvents, type OrgEventType } from '../../shared/events/org-events';

/**
 * Realistic org events for webhook tests, written the way the sessions and tasks code writes
 * them: appended in a transaction, dispatched after commit.
 */

/** Fixed times, so that the same type always carries the same data. */
const CREATED = '2026-01-05T10:00:00.000Z';
const UPDATED = '2026-01-05T10:03:21.500Z';

export function sessionObject(code = 'ABCD-EFGH', status = 'connected'): Record<string, unknown> {
  return {
    object: 'session',
    session_id: code,
    code,
    agent_id: 'default',
    invite_url: `https://deskhand.example/join/${code}`,
    status,
    device: { os: 'mac', name: 'Ada’s MacBook', width: 1512, height: 982, app_version: '1.0.21' },
    metadata: { customer: 'cus_42' },
    created_at: CREATED,
    paired_at: CREATED,
    last_active_at: UPDATED,
    expires_at: null,
    task_count: 1,
    latest_task_id: 'task_0001',
  };
}

export function taskObject(status = 'running', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    object: 'task',
    task_id: 'task_0001',
    session_id: 'ABCD-EFGH',
    agent_id: 'default',
    status,
    done: ['completed', 'failed', 'stopped'].includes(status),
    prompt: 'Renew the car insurance — naïve café ✓',
    result: status === 'completed' ? 'Renewed until 2027.' : null,
    error: status === 'failed' ? 'The computer disconnected mid-step.' : null,
    pending: null,
    cursor: 7,
    metadata: { ticket: 'T-1' },
    created_at: CREATED,
    updated_at: UPDATED,
    active_seconds: 42,
    billed_minutes: null,
    replay_url: 'https://deskhand.example/console/tasks/task_0001',
    recording: { frames: 3 },
    ...extra,
  };
}

/** The `data` each of the ten types carries (spec: Event types). */
export function dataFor(type: OrgEventType): Record<string, unknown> {
  switch (type) {
    case 'session.connected':
      return { session: sessionObject() };
    case 'session.disconnected':
      return { session: sessionObject('ABCD-EFGH', 'disconnected') };
    case 'task.waiting_for_user':
      return { task: taskObject('running', { pending: { type: 'question', question_id: 'q_1', question: 'Which plan?', options: ['basic', 'full'], customer_can_answer: true } }) };
    case 'task.question_answered':
      return { task: taskObject(), answer: { question_id: 'q_1', answer: 'full', answered_by: 'operator' } };
    case 'task.waiting_for_approval':
      return { task: taskObject('running', { pending: { type: 'approval', approval_id: 'appr_1', customer_can_approve: false, risk: 'high' } }) };
    case 'task.approval_decided':
      return { task: taskObject(), decision: { approval_id: 'appr_1', decision: 'approve', note: null, answered_by: 'customer' } };
    case 'task.completed':
      return { task: taskObject('completed') };
    case 'task.failed':
      return { task: taskObject('failed') };
    case 'task.stopped':
      return { task: taskObject('stopped') };
    default:
      return { task: taskObject() };
  }
}

/** Appends events in one transaction and dispatches them after commit; returns their ids. */
export async function emitEvents(container: Container, orgId: string, types: OrgEventType[]): Promise<string[]> {
  const ids = await container.db.transaction(async (trx) => {
    const out: string[] = [];
    for (const type of types) {
      out.push(await appendOrgEvent(trx, { orgId, type, taskId: type.startsWith('task.') ? 'task_0001' : null, sessionId: 'ABCD-EFGH', data: dataFor(type) }));
    }
    return out;
  });
  await dispatchOrgEvents(container.queues, ids);
  return ids;
}

export async function emitEvent(container: Container, orgId: string, type: OrgEventType = 'task.started'): Promise<string> {
  return (await emitEvents(container, orgId, [type]))[0]!;
}
