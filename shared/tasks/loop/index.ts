import type { AuditEntryInput } from '../../audit/audit.repository';
import type { ActMessage, ResultMessage, ShowMessage } from '../../desktop/protocol';
import type { ScopeJudgement } from '../../guardrails/scope-check';
import type { TaskRow } from '../task-rows';
import { respondRefusalError, stopRefusalError } from '../respond-errors';
import { receiveResult } from './actions';
import { approvalTimedOut, respond, timeOutOverdueApprovals, type AnsweredBy, type RespondInput } from './answers';
import { scopeJudged } from './begin';
import { catchUp, ownsTask, personTypedSecret } from './catch-up';
import { computerGone, stop } from './ending';
import type { TaskLoopDeps } from './loop-deps';
import { step } from './step';
import { reconcile } from './reconcile';
import { enqueueFirstStep } from './scheduling';
import { meterRunningTasks, meterTask } from './metering';
import { toolCallFinished } from './tools';

export type { AnsweredBy, RespondInput, RespondOutcome, RespondRefusal } from './answers';
export type { TaskLoopDeps, ToolCaller } from './loop-deps';
export { SERVICE_RULES } from './model-turn';
export { scopeJobId, stepJobId } from './scheduling';

/**
 * The agent loop. A task is a chain of short steps, each run by whichever worker takes the job:
 * a model turn, the guardrails' judgement of each action, the action sent to the computer, its
 * result (received by the web process) and the next step job. Between steps everything lives in
 * the task row; no worker waits on the computer, the model's next turn, or a person.
 *
 * This class is only the loop's entry point; each concern has a file of this folder:
 * scheduling.ts (step jobs), step.ts (what a step job does), begin.ts (queued → running, the
 * scope check), model-turn.ts (a model turn and its move), file-ops.ts, actions.ts (guardrails, the computer, its
 * results), tools.ts, questions.ts (opening questions and approvals), answers.ts (answering
 * them, timeouts), ending.ts (finish, stop, the computer gone), reconcile.ts (the sweep),
 * catch-up.ts (a computer's hello); transitions.ts is the table of states they move between.
 */
export class TaskLoop {
  constructor(private readonly deps: TaskLoopDeps) {}

  /** The first step of a new task (called by the service after the task row commits). */
  enqueueFirstStep(taskId: string): Promise<boolean> {
    return enqueueFirstStep(this.deps.queues, taskId);
  }

  /** Runs step job `n` of a task (the task-steps worker); see step.ts. */
  step(taskId: string, n: number, lastAttempt = true): Promise<string> {
    return step(this.deps, taskId, n, lastAttempt);
  }

  /** The scope judge's verdict (the guardrails worker); see begin.ts. */
  scopeJudged(taskId: string, jobIdOfCheck: string, judgement: ScopeJudgement): Promise<boolean> {
    return scopeJudged(this.deps, taskId, jobIdOfCheck, judgement);
  }

  /** The computer's answer to an action (the web process holding its connection); see actions.ts. */
  receiveResult(sessionCode: string, message: ResultMessage): Promise<{ ok: boolean }> {
    return receiveResult(this.deps, sessionCode, message);
  }

  /** A tool call finished (the tool-calls worker). */
  toolCallFinished(call: { task_id: string; ok: boolean; reply_text: string | null; error: string | null; status: number | null }): Promise<void> {
    return toolCallFinished(this.deps, call);
  }

  /**
   * Answers the open question or decides the open approval, for callers at the edge (the API,
   * the person's app): the loop's refusal (answers.ts, `RespondOutcome`) becomes the spec's error
   * here (404; 409 `already_answered` naming who answered, `not_pending`, ...). `audit` is
   * recorded in the answer's transaction.
   */
  async respond(taskId: string, orgId: string | null, input: RespondInput, answeredBy: AnsweredBy, audit?: AuditEntryInput): Promise<TaskRow> {
    const outcome = await respond(this.deps, taskId, orgId, input, answeredBy, audit);
    if (!outcome.ok) throw respondRefusalError(taskId, input.question_id ?? input.approval_id!, outcome.refusal);
    return outcome.row;
  }

  /** An approval nobody decided in time is denied with `answered_by: timeout`. */
  approvalTimedOut(taskId: string, approvalId: string): Promise<boolean> {
    return approvalTimedOut(this.deps, taskId, approvalId);
  }

  /** The sweep's side of `approval_timeout_minutes`; returns how many it denied. */
  timeOutOverdueApprovals(limit = 200): Promise<number> {
    return timeOutOverdueApprovals(this.deps, limit);
  }

  /** Whether the task runs on this session's computer (the app may only speak for its own). */
  ownsTask(sessionCode: string, taskId: string): Promise<boolean> {
    return ownsTask(this.deps, sessionCode, taskId);
  }

  /** What a computer saying hello again missed of the task running on it; see catch-up.ts. */
  catchUp(sessionCode: string): Promise<{ show: ShowMessage[]; act: ActMessage | null }> {
    return catchUp(this.deps, sessionCode);
  }

  /** The person typed a secret the agent was not allowed to type (`secretPromptId`: the `sec_…` id of the prompt); recorded for the history. */
  personTypedSecret(taskId: string, secretPromptId: string): Promise<void> {
    return personTypedSecret(this.deps, taskId, secretPromptId);
  }

  /**
   * Stops a task (the team through the API, or the person's Stop button); ended tasks stay as
   * they are. `audit` is recorded in the stop's transaction when the task stopped. Another
   * org's task is the spec's 404.
   */
  async stop(taskId: string, orgId: string | null, by: 'operator' | 'customer', reason?: string, audit?: AuditEntryInput): Promise<TaskRow> {
    const outcome = await stop(this.deps, taskId, orgId, by, reason, audit);
    if (!outcome.ok) throw stopRefusalError(taskId);
    return outcome.row;
  }

  /** The session's computer went away: its active task fails or stops. */
  computerGone(sessionCode: string, why: 'offline' | 'released' | 'expired'): Promise<void> {
    return computerGone(this.deps, sessionCode, why);
  }

  /** Charges a running task's minutes so far; stops it when the org cannot cover one. See metering.ts. */
  meter(taskId: string, orgId: string): Promise<boolean> {
    return meterTask(this.deps, taskId, orgId);
  }

  /** The sweep's metering of every running task; returns how many it stopped. */
  meterRunning(): Promise<number> {
    return meterRunningTasks(this.deps);
  }

  /** The reconcile sweep; returns how many tasks it ended. See reconcile.ts. */
  reconcile(quietMs = 30_000): Promise<number> {
    return reconcile(this.deps, quietMs);
  }
}
