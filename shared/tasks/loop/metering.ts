import { changeTaskLocked } from '../task-change';
import { activeMs } from '../task-object';
import type { TaskLoopDeps } from './loop-deps';
import { finish } from './ending';

/**
 * Metering (docs/billing.md): a running task is charged minute by minute as it runs, each
 * minute when it begins (its running time rounded up, as `billed_minutes` is), so that it cannot
 * run far past what the org has. The maintenance sweep calls this for every running task; a
 * minute is charged once (the ledger's unique task and minute), whoever charges it. A minute the
 * org cannot cover stops the task, with a stopped event that says why; on a paid plan an auto
 * top-up is tried first. Returns whether the task was stopped.
 */
export async function meterTask(deps: TaskLoopDeps, taskId: string, orgId: string): Promise<boolean> {
  // Outside the task's lock: the payment provider may take a while. Does nothing unless due.
  await deps.billing.payments.autoTopUpIfDue(orgId);
  const { value } = await changeTaskLocked(deps, taskId, async (change) => {
    const row = change.row;
    if (row.status !== 'running') return false;
    const due = Math.ceil(activeMs(row, change.now) / 60_000);
    const { uncovered } = await deps.billing.metering.chargeTaskMinutes(change.trx, row, due, { overdraft: false });
    if (uncovered === null) return false;
    await finish(deps, change, 'stopped', uncovered);
    return true;
  });
  return value;
}

/** The sweep's step: meters every running task on people's computers; returns how many it stopped. */
export async function meterRunningTasks(deps: TaskLoopDeps): Promise<number> {
  let stopped = 0;
  for (const task of await deps.billing.metering.runningTasks()) {
    try {
      if (await meterTask(deps, task.id, task.org_id)) stopped++;
    } catch (error) {
      deps.logger.warn({ err: error, task_id: task.id }, 'metering a task failed');
    }
  }
  return stopped;
}
