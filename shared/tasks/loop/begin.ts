import { QUEUE_NAMES } from '../../queues/catalog';
import { checkStartable } from '../../guardrails/engine';
import type { ScopeJudgement } from '../../guardrails/scope-check';
import { findSessionComputer } from '../../sessions/sessions.repository';
import { changeTaskLocked, type TaskChange } from '../task-change';
import { sendNextAction } from './actions';
import { finish } from './ending';
import type { GuardrailContext } from './guard-state';
import type { TaskLoopDeps } from './loop-deps';
import { jobNumber, scopeJobId, STEP_RETRIES } from './scheduling';
import { enterState, waitsFor } from './transitions';
import type { TaskRow } from '../task-rows';

/*
 * A task begins (queued → running) on its first step job: once its computer is there and can run
 * it, and once the scope judge found the prompt in the agent's scope, when the agent has one.
 */

/** queued → running: events, the banner on the person's screen, and a first look at the screen. */
export async function begin(deps: TaskLoopDeps, change: TaskChange): Promise<void> {
  const row = change.row;
  const session = await findSessionComputer(change.trx, row.session_id);
  // A computer away for less than the reconnect grace may be back in a moment (a web process
  // restarting): the task begins, and its first action is sent again when the computer says hello.
  const away = session?.status === 'disconnected' && change.now.getTime() - new Date(session.last_active_at!).getTime() < deps.reconnectGraceMs;
  if (!session || (session.status !== 'connected' && !away)) {
    await finish(deps, change, 'failed', 'The computer disconnected before the task started');
    return;
  }
  const startable = checkStartable({ guardrails: row.agent_config.guardrails, device: session.device!, capabilities: session.capabilities! });
  if (!startable.ok) {
    await finish(deps, change, 'failed', startable.reason);
    return;
  }
  const scoped = row.guard_state.scope === 'in_scope';
  if (row.agent_config.guardrails.scope.trim() !== '' && !scoped) {
    startScopeCheck(deps, change);
    return;
  }
  enterState(change, 'running/model', {
    started_at: change.now,
    running_since: change.now,
    guard_state: { device: session.device!, capabilities: session.capabilities!, addressBar: null, ...(scoped ? { scope: 'in_scope' } : {}) } satisfies GuardrailContext,
    queued_actions: [{ type: 'screenshot' }],
    turn_results: [],
  });
  change.event('started', 'The task started', { agent_id: row.agent_id, agent_version: row.agent_version, agent_draft: row.agent_draft, model: row.model });
  change.orgEvent('task.started');
  const name = row.agent_config.display_name || 'Deskhand';
  change.after(() => deps.link.show(row.session_id, { kind: 'banner', task_id: row.id, agent_name: name, running: true }));
  await sendNextAction(deps, change);
}

/**
 * The agent has a scope: the task stays queued (nothing reaches the computer, no `started`)
 * while a job of the `guardrails` queue asks the judge whether the prompt fits it.
 */
function startScopeCheck(deps: TaskLoopDeps, change: TaskChange): void {
  const row = change.row;
  const id = scopeJobId(row.id, jobNumber(row));
  enterState(change, 'queued/scope', { phase_since: change.now, current_job_id: id });
  change.after(() => deps.queues.enqueueOrLeaveToSweep(QUEUE_NAMES.guardrails, 'scope', { task_id: row.id }, { jobId: id, ...STEP_RETRIES }));
}

/** Queues a scope check again with its own id (the sweep, after Redis lost it). */
export function requeueScopeCheck(deps: Pick<TaskLoopDeps, 'queues'>, taskId: string, id: string): Promise<unknown> {
  return deps.queues.enqueue(QUEUE_NAMES.guardrails, 'scope', { task_id: taskId }, { jobId: id, ...STEP_RETRIES });
}

/**
 * Whether a task waits for the scope check of job `jobIdOfCheck`: the one rule the check's
 * worker asks before it calls the judge, and the verdict asks before it changes the task.
 */
export function awaitsScopeCheck(row: Pick<TaskRow, 'status' | 'phase' | 'current_job_id'>, jobIdOfCheck: string): boolean {
  return waitsFor(row) === 'scope' && row.current_job_id === jobIdOfCheck;
}

/**
 * The scope judge's verdict (the `guardrails` worker calls this): in scope, the task begins;
 * off scope or undecidable, it fails with the judge's reason as its `error`. A verdict for a
 * task that moved on (stopped, or judged by an earlier run of the job) changes nothing.
 */
export async function scopeJudged(deps: TaskLoopDeps, taskId: string, jobIdOfCheck: string, judgement: ScopeJudgement): Promise<boolean> {
  const { value } = await changeTaskLocked(deps, taskId, async (change) => {
    const row = change.row;
    if (!awaitsScopeCheck(row, jobIdOfCheck)) return false;
    const inScope = judgement.verdict === 'in_scope';
    change.event('guardrail', judgement.reason, { verdict: inScope ? 'run' : 'block', rule: 'scope', category: null, scope: judgement.verdict });
    if (!inScope) {
      await finish(deps, change, 'failed', judgement.reason);
      return true;
    }
    change.set({ guard_state: { ...row.guard_state, scope: 'in_scope' } });
    await begin(deps, change);
    return true;
  });
  return value;
}
