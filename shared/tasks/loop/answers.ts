import { recordAudit, type AuditEntryInput } from '../../audit/audit.repository';
import { changeTaskLocked, type TaskChange } from '../task-change';
import type { TaskItemKind, TaskItemRow, TaskRow } from '../task-rows';
import { answerItem, findItem, findOverdueApprovals } from '../tasks.repository';
import { actionToRun, moveToApply } from '../typed-text';
import { declare, dispatch, sendNextAction } from './actions';
import { finish } from './ending';
import type { TaskLoopDeps } from './loop-deps';
import { applyMove } from './model-turn';
import { resumeClock } from './questions';
import { scheduleStep } from './scheduling';
import { callTool } from './tools';

/*
 * Answers to questions and decisions on approvals (the team through the API, the person at the
 * computer, or the clock when nobody decided in time): the first answer wins, and the task
 * carries on from where it waited.
 */

export type AnsweredBy = 'customer' | 'operator' | 'timeout';

export interface RespondInput {
  question_id?: string;
  answer?: string;
  approval_id?: string;
  decision?: 'approve' | 'deny';
  note?: string | null;
}

/** Why an answer was not taken; the API words each (shared/tasks/respond-errors.ts). */
export type RespondRefusal =
  /** No such task, or not the org's. */
  | { reason: 'no_task' }
  /** The task has no such question (or approval). */
  | { reason: 'no_item'; kind: TaskItemKind }
  /** The person at the computer may not answer this kind of item for this agent. */
  | { reason: 'customer_not_allowed'; kind: TaskItemKind }
  /** Somebody answered first. */
  | { reason: 'already_answered'; kind: TaskItemKind; answeredBy: AnsweredBy | null }
  /** The item is no longer open (the task ended). */
  | { reason: 'not_pending'; kind: TaskItemKind };

/** How an answer went: taken (the task as it is after it), or refused and why. */
export type RespondOutcome = { ok: true; row: TaskRow } | { ok: false; refusal: RespondRefusal };

/**
 * Answers the open question or decides the open approval; the first answer wins. `audit`, when
 * given, is recorded in the same transaction as the answer.
 */
export async function respond(deps: TaskLoopDeps, taskId: string, orgId: string | null, input: RespondInput, answeredBy: AnsweredBy, audit?: AuditEntryInput): Promise<RespondOutcome> {
  const itemId = input.question_id ?? input.approval_id!;
  const kind: TaskItemKind = input.question_id ? 'question' : 'approval';
  const { value: refusal, row } = await changeTaskLocked(deps, taskId, async (change): Promise<RespondRefusal | null> => {
    if (orgId !== null && change.row.org_id !== orgId) return { reason: 'no_task' };
    const item = await findItem(change.trx, taskId, itemId);
    if (!item || item.kind !== kind) return { reason: 'no_item', kind };
    if (answeredBy === 'customer') {
      const allowed = kind === 'question' ? change.row.agent_config.customer_answers : change.row.agent_config.customer_approvals;
      if (!allowed) return { reason: 'customer_not_allowed', kind };
    }
    const won = await answerItem(change.trx, itemId, { answered_by: answeredBy, answer: input.answer, decision: input.decision, note: input.note ?? null, at: change.now });
    if (!won) return item.state === 'answered' ? { reason: 'already_answered', kind, answeredBy: item.answered_by } : { reason: 'not_pending', kind };
    await applyAnswer(deps, change, won);
    if (audit) await recordAudit(change.trx, audit);
    return null;
  });
  return refusal ? { ok: false, refusal } : { ok: true, row };
}

async function applyAnswer(deps: TaskLoopDeps, change: TaskChange, item: TaskItemRow): Promise<void> {
  const row = change.row;
  resumeClock(change);
  change.set({ pending: null });
  change.after(() => deps.link.show(row.session_id, { kind: 'clear', task_id: row.id, item_id: item.id }));
  if (item.kind === 'question') {
    const answer = item.answer ?? '';
    change.event('answer', answer, { question_id: item.id, answered_by: item.answered_by });
    change.orgEvent('task.question_answered', { answer: { question_id: item.id, answer, answered_by: item.answered_by } });
    change.set({ last_outcome: { kind: 'answer', answer } });
    scheduleStep(deps.queues, change);
    return;
  }
  const decision = item.decision!;
  const detail = item.detail;
  change.event('decision', `${decision === 'approve' ? 'Approved' : 'Denied'}: ${detail.what}`, { approval_id: item.id, decision, note: item.note, answered_by: item.answered_by });
  change.orgEvent('task.approval_decided', { decision: { approval_id: item.id, decision, note: item.note, answered_by: item.answered_by } });
  const denial = `Denied${item.answered_by === 'timeout' ? ' (nobody decided in time)' : ''}${item.note ? `: ${item.note}` : ''}`;
  switch (detail.kind) {
    case 'action': {
      const action = decision === 'approve' ? actionToRun(detail.action, row.queued_actions) : null;
      if (action) {
        dispatch(deps, change, action, detail.addressBar);
      } else {
        const why = decision === 'approve' ? 'Approved, but the action was no longer queued' : denial;
        change.set({ queued_actions: [], last_outcome: { kind: 'refused', reason: `${detail.what} ${why}.`, results: row.turn_results }, turn_results: [] });
        scheduleStep(deps.queues, change);
      }
      return;
    }
    case 'agent_request':
      if (detail.category) declare(change, detail.category, decision);
      change.set({ last_outcome: { kind: 'approval', decision, reason: item.note } });
      scheduleStep(deps.queues, change);
      return;
    case 'tool': {
      const tool = row.agent_config.tools.http.find((candidate) => candidate.name === detail.tool);
      if (decision === 'approve' && tool) {
        await callTool(deps, change, tool, detail.arguments);
      } else {
        change.set({ last_outcome: { kind: 'tool', ok: false, text: `The call was ${denial.toLowerCase()}` } });
        scheduleStep(deps.queues, change);
      }
      return;
    }
    case 'safety_check':
      if ('rule' in detail) {
        // The screen check: approved, the agent goes on where it was (the rest of its move, or its next turn).
        if (decision === 'deny') await finish(deps, change, 'failed', `Stopped by a screen check that was denied: ${detail.reason}`);
        else if (row.queued_actions.length > 0) await sendNextAction(deps, change);
        else scheduleStep(deps.queues, change);
        return;
      }
      if (decision === 'approve') {
        const move = moveToApply(detail.move, row.queued_actions);
        if (!move) {
          await finish(deps, change, 'failed', 'The approved move could not be found again');
          return;
        }
        // Only a person's approval lets the backend acknowledge the vendor's safety check.
        change.set({ guard_state: { ...row.guard_state, safetyApproved: true } });
        await applyMove(deps, change, move, null);
      } else await finish(deps, change, 'failed', `Stopped by a safety check that was denied: ${detail.what.replace(/^Safety check: /, '')}`);
      return;
  }
}

/**
 * An approval nobody decided in time is denied with `answered_by: timeout`. False when there
 * was nothing to deny (decided meanwhile, or the task is over).
 */
export async function approvalTimedOut(deps: TaskLoopDeps, taskId: string, approvalId: string): Promise<boolean> {
  const outcome = await respond(deps, taskId, null, { approval_id: approvalId, decision: 'deny' }, 'timeout');
  return outcome.ok;
}

/**
 * The sweep's side of `approval_timeout_minutes`: denies every approval past its `expires_at`
 * whose delayed job was lost (or has not run yet). Returns how many it denied.
 */
export async function timeOutOverdueApprovals(deps: TaskLoopDeps, limit = 200): Promise<number> {
  const overdue = await findOverdueApprovals(deps.db, deps.clock.now(), limit);
  let denied = 0;
  for (const { task_id, approval_id } of overdue) {
    if (await approvalTimedOut(deps, task_id, approval_id)) denied++;
  }
  return denied;
}
