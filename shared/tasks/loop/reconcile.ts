import { QUEUE_NAMES } from '../../queues/catalog';
import { DesktopEvents } from '../../desktop/protocol';
import { changeTaskLocked } from '../task-change';
import { activeMs, isDone } from '../task-object';
import { findQuietActiveTasks } from '../tasks.repository';
import { awaitedAct } from './actions';
import { requeueScopeCheck } from './begin';
import { finish } from './ending';
import type { TaskLoopDeps } from './loop-deps';
import { jobNumber, requeueStep, stepJobId } from './scheduling';
import { waitsFor } from './transitions';

/**
 * The reconcile sweep: a task waiting on a step job that Redis lost (restarted empty, or the
 * job was never added because Redis did not answer) gets that job again, as does a lost tool
 * call; a task whose step job failed or finished without moving it on (its worker died with
 * it) fails with "server restarted" instead of hanging; a task past its running-time limit
 * while waiting on the computer or a tool fails too; an act the computer has not answered is
 * sent again (same act_id) until it answers or the act timeout fails the task. `quietMs`: tasks
 * changed more recently are left alone (their jobs are normally on their way); 0 right after
 * Redis lost its data. What each task is checked for follows what it waits for
 * (./transitions.ts). Returns how many tasks it ended.
 */
export async function reconcile(deps: TaskLoopDeps, quietMs = 30_000): Promise<number> {
  const now = deps.clock.now();
  const candidates = await findQuietActiveTasks(deps.db, new Date(now.getTime() - quietMs));
  let ended = 0;
  const queue = deps.queues.queue(QUEUE_NAMES.taskSteps);
  const checks = deps.queues.queue(QUEUE_NAMES.guardrails);
  for (const row of candidates) {
    let reason: string | null = null;
    const waiting = waitsFor(row);
    if (waiting === 'scope') {
      // A scope check is only a question to the judge: one lost with Redis is asked again.
      const state = row.current_job_id ? await checks.getJobState(row.current_job_id) : 'unknown';
      if (state === 'unknown' && row.current_job_id) {
        await requeueScopeCheck(deps, row.id, row.current_job_id);
        continue;
      }
      if (state === 'failed' || state === 'completed' || state === 'unknown') reason = 'The scope check did not finish (server restarted)';
    } else if (waiting === 'step') {
      const state = row.current_job_id ? await queue.getJobState(row.current_job_id) : 'unknown';
      const n = jobNumber(row);
      if (state === 'unknown' && row.current_job_id === stepJobId(row.id, n)) {
        // The step reads the row when it runs, so the job (same id) is all that was lost. A
        // sleep whose job was lost ends early: the agent looks at the screen again.
        await requeueStep(deps.queues, row.id, n);
        continue;
      }
      if (state === 'unknown' || state === 'failed' || state === 'completed') reason = 'server restarted';
    } else if (waiting === 'tool' && deps.tools) {
      await deps.tools.requeue(row.id);
    }
    if (!reason && waiting === 'computer' && row.phase_since && now.getTime() - row.phase_since.getTime() >= deps.actTimeoutMs) {
      reason = `The computer did not answer within ${Math.round(deps.actTimeoutMs / 1000)} seconds`;
    }
    const limit = row.agent_config.guardrails.max_minutes;
    if (!reason && limit !== null && row.status === 'running' && activeMs(row, now) >= limit * 60_000) reason = `Reached the limit of ${limit} running minutes`;
    if (!reason) {
      // An act still unanswered (for `quietMs`, or at once after Redis came back) is sent again
      // with its act_id: the first copy may have been published while the web process holding
      // the computer was not subscribed (Redis restarting). The app runs an act_id once and
      // repeats its result, and a repeated result is ignored, so a copy too many costs nothing.
      const act = awaitedAct(row);
      if (act) {
        deps.link.send(row.session_id, DesktopEvents.act, act);
        deps.logger.info({ task_id: row.id, act_id: act.act_id, waited_ms: now.getTime() - (row.phase_since?.getTime() ?? now.getTime()) }, 'action sent again: no result yet');
      }
      continue;
    }
    const expectedJob = row.current_job_id;
    const failure = reason;
    await changeTaskLocked(deps, row.id, async (change) => {
      if (isDone(change.row.status) || change.row.current_job_id !== expectedJob || change.row.updated_at.getTime() !== row.updated_at.getTime()) return;
      await finish(deps, change, 'failed', failure);
      ended++;
    });
  }
  return ended;
}
