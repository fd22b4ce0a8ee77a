import { changeTaskIfUnchanged, changeTaskLocked, type TaskChange } from '../task-change';
import { readTaskForChange } from '../tasks.repository';
import { sendNextAction } from './actions';
import { begin } from './begin';
import type { TaskLoopDeps } from './loop-deps';
import { modelTurn } from './model-turn';
import { isCurrentStep } from './scheduling';

/**
 * Runs step job `n` of a task: the one thing the task waits for next, each done in its own file:
 * it begins (begin.ts), its next queued action is judged and sent (actions.ts), or the model takes
 * a turn (model-turn.ts). The row is read once, with its version and without the lock; a stale job
 * (the task moved on since it was queued) does nothing. `lastAttempt` tells whether a retryable
 * model failure should end the task now instead of being retried by the queue.
 */
export async function step(deps: TaskLoopDeps, taskId: string, n: number, lastAttempt = true): Promise<string> {
  const row = await readTaskForChange(deps.db, taskId);
  if (!row || !isCurrentStep(row, n)) return 'stale';
  if (row.status === 'queued') {
    // Beginning reads the session and raises `task.started`: a locked change.
    await changeTaskLocked(deps, taskId, (change) => (isCurrentStep(change.row, n) ? begin(deps, change) : undefined));
    return 'started';
  }
  if (row.queued_actions.length > 0) {
    const send = (change: TaskChange) => (isCurrentStep(change.row, n) ? sendNextAction(deps, change) : undefined);
    // Most actions are sent on the row as read; one held for an approval takes the lock.
    (await changeTaskIfUnchanged(deps, row, send)) ?? (await changeTaskLocked(deps, taskId, send));
    return 'action';
  }
  return modelTurn(deps, row, n, lastAttempt);
}
