import type { ActMessage, GuardrailCategory, ShowMessage } from '../../desktop/protocol';
import { changeTaskLocked } from '../task-change';
import { isDone } from '../task-object';
import { findActiveTask, findTaskById } from '../tasks.repository';
import { awaitedAct } from './actions';
import type { TaskLoopDeps } from './loop-deps';

/*
 * What the loop answers a computer that says hello, and the small things its app tells about
 * the task running on it.
 */

/**
 * What a computer saying hello again missed of the task running on it (a web process restarted,
 * the network dropped): the banner, the open question or approval the person may answer, and
 * the action the task waits for, under the same `act_id` (the app runs an `act_id` once and
 * answers a repeat with the same result). Nothing when no task runs on the session.
 */
export async function catchUp(deps: Pick<TaskLoopDeps, 'db'>, sessionCode: string): Promise<{ show: ShowMessage[]; act: ActMessage | null }> {
  const row = await findActiveTask(deps.db, sessionCode);
  if (!row || row.status !== 'running') return { show: [], act: null };
  const show: ShowMessage[] = [{ kind: 'banner', task_id: row.id, agent_name: row.agent_config.display_name || 'Deskhand', running: true }];
  const pending = row.pending;
  if (pending?.type === 'question' && pending.customer_can_answer) {
    show.push({ kind: 'question', task_id: row.id, question_id: pending.question_id, question: pending.question, options: pending.options });
  } else if (pending?.type === 'approval' && pending.customer_can_approve) {
    const category = pending.category as GuardrailCategory | null;
    show.push({ kind: 'approval', task_id: row.id, approval_id: pending.approval_id, what: pending.what, risk: pending.risk, category });
  }
  return { show, act: awaitedAct(row) };
}

/** Whether the task runs on this session's computer (the app may only speak for its own). */
export async function ownsTask(deps: Pick<TaskLoopDeps, 'db'>, sessionCode: string, taskId: string): Promise<boolean> {
  const row = await findTaskById(deps.db, taskId);
  return row?.session_id === sessionCode;
}

/** The person typed a secret the agent was not allowed to type (`secretPromptId`: the `sec_…` id of the prompt, the protocol's `request_id`); recorded for the history. */
export async function personTypedSecret(deps: TaskLoopDeps, taskId: string, secretPromptId: string): Promise<void> {
  await changeTaskLocked(deps, taskId, (change) => {
    if (!isDone(change.row.status)) change.event('secret_typed', 'The person typed the secret themselves', { request_id: secretPromptId });
  });
}
