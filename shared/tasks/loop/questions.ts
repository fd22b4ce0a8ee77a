import { jobId } from '../../queues/job-queues';
import { QUEUE_NAMES } from '../../queues/catalog';
import { newId } from '../../ids';
import type { TaskChange } from '../task-change';
import { activeMs } from '../task-object';
import { insertItem } from '../tasks.repository';
import type { ApprovalDetail } from './guard-state';
import type { TaskLoopDeps } from './loop-deps';
import { enterState } from './transitions';

/*
 * Opening a question or an approval: the task waits for a person (running/person), its running
 * time paused. Answers come back through ./answers.ts.
 */

/** Pauses running time: waiting for a person does not count. */
function pauseClock(change: TaskChange): void {
  const row = change.row;
  if (row.running_since) change.set({ active_ms: activeMs(row, change.now), running_since: null });
}

/** Running time counts again once a person answered. */
export function resumeClock(change: TaskChange): void {
  if (!change.row.running_since && change.row.status === 'running') change.set({ running_since: change.now });
}

/** The agent asked a question: the task waits for the team's (or the person's) answer. */
export async function openQuestion(deps: Pick<TaskLoopDeps, 'link'>, change: TaskChange, question: string, options: string[]): Promise<void> {
  const row = change.row;
  const id = newId('q');
  const canAnswer = row.agent_config.customer_answers;
  await insertItem(change.trx, { id, task_id: row.id, kind: 'question', detail: { question, options }, created_at: change.now });
  pauseClock(change);
  enterState(change, 'running/person', {
    phase_since: change.now,
    pending: { type: 'question', question_id: id, question, options, customer_can_answer: canAnswer },
  });
  change.event('question', question, { question_id: id, options });
  change.orgEvent('task.waiting_for_user');
  if (canAnswer) change.after(() => deps.link.show(row.session_id, { kind: 'question', task_id: row.id, question_id: id, question, options }));
}

/**
 * Something waits for an approval (an action, the agent's own request, a tool call, a safety
 * check): the task waits for a decision, denied by the clock after `approval_timeout_minutes`.
 */
export async function openApproval(deps: Pick<TaskLoopDeps, 'link' | 'queues'>, change: TaskChange, detail: ApprovalDetail, risk: 'normal' | 'high'): Promise<void> {
  const row = change.row;
  const id = newId('appr');
  const canApprove = row.agent_config.customer_approvals;
  const timeoutMinutes = row.agent_config.guardrails.approval_timeout_minutes;
  const expiresAt = timeoutMinutes ? new Date(change.now.getTime() + timeoutMinutes * 60_000) : null;
  const category = 'category' in detail ? detail.category : null;
  await insertItem(change.trx, { id, task_id: row.id, kind: 'approval', detail, created_at: change.now });
  pauseClock(change);
  enterState(change, 'running/person', {
    phase_since: change.now,
    pending: {
      type: 'approval',
      approval_id: id,
      what: detail.what,
      kind: detail.kind,
      category,
      risk,
      customer_can_approve: canApprove,
      expires_at: expiresAt?.toISOString() ?? null,
    },
  });
  change.event('approval', detail.what, { approval_id: id, kind: detail.kind, category, risk, rule: 'rule' in detail ? detail.rule : null });
  change.orgEvent('task.waiting_for_approval');
  if (canApprove) change.after(() => deps.link.show(row.session_id, { kind: 'approval', task_id: row.id, approval_id: id, what: detail.what, risk, category }));
  if (expiresAt) {
    change.after(() =>
      // Lost, the sweep denies the approval from its `expires_at` all the same.
      deps.queues.enqueueOrLeaveToSweep(QUEUE_NAMES.maintenance, 'approval-timeout', { task_id: row.id, approval_id: id }, { jobId: jobId('approval-timeout', id), delay: timeoutMinutes! * 60_000 }),
    );
  }
}
