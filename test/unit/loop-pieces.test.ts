import { expect } from 'chai';
import type { Decision } from '../../shared/guardrails/engine';
import type { JobQueues } from '../../shared/queues/job-queues';
import type { ComputerLink } from '../../shared/desktop/computer-link';
import { describeAction, describeActions } from '../../shared/desktop/describe-action';
import { TaskChange } from '../../shared/tasks/task-change';
import type { TaskRow } from '../../shared/tasks/task-rows';
import { awaitedAct, dispatch, judgeWithDeclared } from '../../shared/tasks/loop/actions';
import { endFields } from '../../shared/tasks/loop/ending';
import { isCurrentStep, jobNumber, scheduleStep, scopeJobId, stepJobId } from '../../shared/tasks/loop/scheduling';
import { respondRefusalError } from '../../shared/tasks/respond-errors';

const NOW = new Date('2026-11-25T12:00:00Z');

/** A task row with the fields these pieces read; the rest of a row is not needed without a database. */
function taskRow(fields: Partial<TaskRow> = {}): TaskRow {
  return {
    id: 'task_1',
    session_id: 'sess_1',
    status: 'running',
    phase: 'model',
    cursor: 4,
    current_job_id: 'step-task_1-3',
    awaiting_act_id: null,
    queued_actions: [],
    turn_results: [],
    observation: null,
    guard_state: {},
    active_ms: 0,
    running_since: null,
    ...fields,
  } as unknown as TaskRow;
}

const decision = (fields: Partial<Decision>): Decision => ({
  verdict: 'confirm',
  rule: 'confirm_category',
  category: 'purchase',
  app: 'Safari',
  site: 'shop.example',
  reason: 'Buying needs an approval.',
  addressBar: null,
  ...fields,
});

describe('the task loop\'s pieces', () => {
  describe('judgeWithDeclared', () => {
    it('runs a step the agent asked approval for and got, without asking again', () => {
      const judged = judgeWithDeclared(decision({}), { category: 'purchase', decision: 'approve' }, null);
      expect(judged).to.include({ verdict: 'run', rule: 'approved_request' });
      expect(judged.reason).to.equal('Runs without asking again: the agent asked for approval of this step (purchase) and it was approved.');
    });

    it('refuses a step whose request was denied, even one that would have run', () => {
      const bar = { text: 'shop', app: 'Safari' } as unknown as Decision['addressBar'];
      for (const verdict of ['confirm', 'run'] as const) {
        const judged = judgeWithDeclared(decision({ verdict, rule: verdict === 'run' ? 'allowed' : 'confirm_category' }), { category: 'purchase', decision: 'deny' }, bar);
        expect(judged).to.include({ verdict: 'block', rule: 'denied_request', addressBar: bar });
        expect(judged.reason).to.equal('Refused: the agent asked for approval of this step (purchase) and it was denied.');
      }
    });

    it('leaves the engine\'s decision for another category, a block, the person\'s typing, or another rule', () => {
      const declared = { category: 'purchase' as const, decision: 'approve' as const };
      for (const original of [decision({ category: 'send' }), decision({ verdict: 'block', rule: 'block_category' }), decision({ verdict: 'person_types', rule: 'secret' }), decision({ rule: 'unseen_action' })]) {
        expect(judgeWithDeclared(original, declared, null)).to.equal(original);
      }
      expect(judgeWithDeclared(decision({}), null, null)).to.deep.equal(decision({}));
    });
  });

  describe('awaitedAct', () => {
    const action = { type: 'click' as const, x: 1, y: 2 };

    it('is the first queued action, under the act id it went out with, while the task waits for the computer', () => {
      expect(awaitedAct(taskRow({ phase: 'computer', awaiting_act_id: 'act_9', queued_actions: [action, { type: 'screenshot' }] }))).to.deep.equal({ task_id: 'task_1', act_id: 'act_9', action });
    });

    it('is nothing when the task waits for anything else, or has no act out', () => {
      expect(awaitedAct(taskRow({ phase: 'model', awaiting_act_id: 'act_9', queued_actions: [action] }))).to.equal(null);
      expect(awaitedAct(taskRow({ phase: 'computer', awaiting_act_id: null, queued_actions: [action] }))).to.equal(null);
      expect(awaitedAct(taskRow({ phase: 'computer', awaiting_act_id: 'act_9', queued_actions: [] }))).to.equal(null);
      expect(awaitedAct(taskRow({ status: 'stopped', phase: null, awaiting_act_id: 'act_9', queued_actions: [action] }))).to.equal(null);
    });
  });

  describe('step jobs', () => {
    it('numbers jobs on from the latest, a scope check keeping the number of the step it came from', () => {
      expect(stepJobId('task_1', 1)).to.equal('step-task_1-1');
      expect(scopeJobId('task_1', 1)).to.equal('scope-task_1-1');
      expect(jobNumber({ current_job_id: 'step-task_1-12' })).to.equal(12);
      expect(jobNumber({ current_job_id: 'scope-task_1-1' })).to.equal(1);
      expect(jobNumber({ current_job_id: null })).to.equal(0);
    });

    it('takes a step job as current only while the task waits for that very step', () => {
      expect(isCurrentStep(taskRow({ current_job_id: 'step-task_1-3' }), 3)).to.equal(true);
      expect(isCurrentStep(taskRow({ phase: 'sleep', current_job_id: 'step-task_1-3' }), 3)).to.equal(true);
      expect(isCurrentStep(taskRow({ status: 'queued', current_job_id: 'step-task_1-1' }), 1)).to.equal(true);
      expect(isCurrentStep(taskRow({ current_job_id: 'step-task_1-3' }), 2)).to.equal(false);
      expect(isCurrentStep(taskRow({ phase: 'computer', current_job_id: 'step-task_1-3' }), 3)).to.equal(false);
      expect(isCurrentStep(taskRow({ status: 'queued', phase: 'scope', current_job_id: 'scope-task_1-1' }), 1)).to.equal(false);
      expect(isCurrentStep(taskRow({ status: 'failed', phase: null, current_job_id: 'step-task_1-3' }), 3)).to.equal(false);
    });

    it('schedules the next step job after the commit, with its id, delay and the task waiting for it', async () => {
      const enqueued: unknown[][] = [];
      const queues = { enqueueOrLeaveToSweep: async (...args: unknown[]) => enqueued.push(args) } as unknown as JobQueues;
      const change = new TaskChange(null, taskRow({ phase: 'model', awaiting_act_id: 'act_1' }), NOW, '');
      scheduleStep(queues, change, 5000, 'sleep');
      expect(change.row).to.include({ status: 'running', phase: 'sleep', current_job_id: 'step-task_1-4', awaiting_act_id: null, phase_since: NOW });
      expect(enqueued).to.deep.equal([]);
      for (const work of change.afterCommit) await work();
      expect(enqueued).to.have.length(1);
      const [queue, name, payload, options] = enqueued[0]!;
      expect([queue, name, payload]).to.deep.equal(['task-steps', 'step', { task_id: 'task_1', step: 4 }]);
      expect(options).to.include({ jobId: 'step-task_1-4', delay: 5000, attempts: 3 });
    });
  });

  describe('endFields', () => {
    it('banks the running stretch and bills whole minutes', () => {
      const fields = endFields({ active_ms: 60_000, running_since: new Date(NOW.getTime() - 1_000) }, 'completed', 'All done', NOW);
      expect(fields).to.include({ result: 'All done', error: null, active_ms: 61_000, running_since: null, billed_minutes: 2, ended_at: NOW, current_job_id: null, awaiting_act_id: null, model_state: null, pending: null });
      expect(fields.queued_actions).to.deep.equal([]);
    });

    it('keeps the message as the error of a failure and as neither of a stop', () => {
      expect(endFields({ active_ms: 0, running_since: null }, 'failed', 'Broke', NOW)).to.include({ result: null, error: 'Broke', billed_minutes: 0 });
      expect(endFields({ active_ms: 120_000, running_since: null }, 'stopped', 'Stopped by the team', NOW)).to.include({ result: null, error: null, billed_minutes: 2 });
    });
  });

  describe('dispatch', () => {
    it('sends the action after the commit and records it, typed text only as its length', async () => {
      const sent: unknown[][] = [];
      const link = { send: (...args: unknown[]) => sent.push(args) } as unknown as ComputerLink;
      const change = new TaskChange(null, taskRow({ queued_actions: [{ type: 'type', text: 'hunter2' }] }), NOW, '');
      dispatch({ link }, change, { type: 'type', text: 'hunter2' }, null);
      expect(change.row).to.include({ status: 'running', phase: 'computer' });
      expect(change.row.awaiting_act_id).to.match(/^act_/);
      expect(change.writtenEvents.map((event) => event.message)).to.deep.equal(['Type 7 characters']);
      expect(JSON.stringify(change.writtenEvents)).to.not.include('hunter2');
      for (const work of change.afterCommit) await work();
      expect(sent[0]![2]).to.deep.equal({ task_id: 'task_1', act_id: change.row.awaiting_act_id, action: { type: 'type', text: 'hunter2' } });
    });
  });

  describe('describeAction', () => {
    it('words each action as the model steps and the action events both show it', () => {
      expect(describeAction({ type: 'click', x: 720, y: 450 })).to.equal('Click at 720, 450');
      expect(describeAction({ type: 'click', x: 1, y: 2, double: true })).to.equal('Double-click at 1, 2');
      expect(describeAction({ type: 'click', x: 1, y: 2, button: 'right' })).to.equal('Right-click at 1, 2');
      expect(describeAction({ type: 'key', keys: 'cmd+enter' })).to.equal('Press cmd+enter');
      expect(describeAction({ type: 'type', text: 'secret' })).to.equal('Type 6 characters');
      expect(describeAction({ type: 'screenshot' })).to.equal('Look at the screen');
      expect(describeActions([{ type: 'click', x: 100, y: 200 }, { type: 'key', keys: 'enter' }])).to.equal('Click at 100, 200, Press enter');
      expect(describeActions([])).to.equal('Nothing');
    });
  });

  describe('respond\'s refusals as the API answers them', () => {
    it('maps each refusal to the spec\'s 404 or 409 with its code and message', () => {
      const answers = [
        [{ reason: 'no_task' }, 404, undefined, 'No task task_1'],
        [{ reason: 'no_item', kind: 'question' }, 404, undefined, 'Task task_1 has no question q_1'],
        [{ reason: 'customer_not_allowed', kind: 'question' }, 409, 'customer_answers_off', 'The person cannot answer this question'],
        [{ reason: 'customer_not_allowed', kind: 'approval' }, 409, 'customer_approvals_off', 'The person cannot answer this approval'],
        [{ reason: 'not_pending', kind: 'approval' }, 409, 'not_pending', 'This approval is no longer open'],
        [{ reason: 'already_answered', kind: 'question', answeredBy: 'customer' }, 409, 'already_answered', 'This question was already answered by the person at the computer'],
        [{ reason: 'already_answered', kind: 'approval', answeredBy: 'timeout' }, 409, 'already_answered', 'This approval was already decided by the timeout'],
        [{ reason: 'already_answered', kind: 'approval', answeredBy: 'operator' }, 409, 'already_answered', 'This approval was already decided by the team'],
      ] as const;
      for (const [refusal, status, code, message] of answers) {
        const error = respondRefusalError('task_1', 'q_1', refusal);
        expect([error.status, error.code, error.message], refusal.reason).to.deep.equal([status, code, message]);
      }
      expect(respondRefusalError('task_1', 'q_1', { reason: 'already_answered', kind: 'question', answeredBy: 'customer' }).toBody().error).to.include({ answered_by: 'customer' });
    });
  });
});
