import { recordAudit, type AuditEntryInput } from '../../audit/audit.repository';
import { findSessionPresenceForShare } from '../../sessions/sessions.repository';
import { changeTaskLocked, type TaskChange } from '../task-change';
import { activeMs, isDone } from '../task-object';
import type { TaskRow } from '../task-rows';
import { closeOpenItems, findActiveTask } from '../tasks.repository';
import type { TaskLoopDeps } from './loop-deps';
import { enterState } from './transitions';

export type EndStatus = 'completed' | 'failed' | 'stopped';

/**
 * The fields a task ends with (besides status and phase): running time banked and billed in
 * whole minutes, the outcome, and the loop's working state cleared.
 */
export function endFields(row: Pick<TaskRow, 'active_ms' | 'running_since'>, status: EndStatus, message: string, now: Date): Partial<TaskRow> {
  const ms = activeMs(row, now);
  return {
    result: status === 'completed' ? message : null,
    error: status === 'failed' ? message : null,
    active_ms: ms,
    running_since: null,
    billed_minutes: Math.ceil(ms / 60_000),
    ended_at: now,
    phase_since: now,
    current_job_id: null,
    awaiting_act_id: null,
    queued_actions: [],
    // A vendor's transcript (Anthropic, Gemini) holds the text the agent typed; no turn follows.
    model_state: null,
    pending: null,
  };
}

/**
 * Ends the task: banks running time, bills whole minutes (the ledger's charges of the task come
 * to its `billed_minutes`: those the meter has not charged yet are charged here, even past the
 * balance, since they were used), closes open items, tells everyone.
 */
export async function finish(deps: Pick<TaskLoopDeps, 'link' | 'billing'>, change: TaskChange, status: EndStatus, message: string): Promise<void> {
  const row = change.row;
  const fields = endFields(row, status, message, change.now);
  await deps.billing.metering.chargeTaskMinutes(change.trx, row, fields.billed_minutes!, { overdraft: true });
  enterState(change, status, fields);
  await closeOpenItems(change.trx, row.id);
  change.event(status, message, status === 'completed' ? { result: message } : status === 'failed' ? { error: message } : { reason: message });
  change.orgEvent(`task.${status}`);
  change.after(() => {
    if (status === 'completed' && row.agent_config.narration) deps.link.show(row.session_id, { kind: 'summary', task_id: row.id, text: message });
    deps.link.show(row.session_id, { kind: 'ended', task_id: row.id, status, message });
  });
}

/** How a stop went: the task as it is after it, or no such task (of the org asked for). */
export type StopOutcome = { ok: true; row: TaskRow } | { ok: false; refusal: { reason: 'no_task' } };

/**
 * Stops a task (the team through the API, or the person's Stop button). Ended tasks stay as they
 * are. `audit`, when given, is recorded in the change's transaction, only when the task stopped.
 */
export async function stop(deps: TaskLoopDeps, taskId: string, orgId: string | null, by: 'operator' | 'customer', reason?: string, audit?: AuditEntryInput): Promise<StopOutcome> {
  const { value, row } = await changeTaskLocked(deps, taskId, async (change) => {
    if (orgId !== null && change.row.org_id !== orgId) return false;
    if (isDone(change.row.status)) return true;
    await finish(deps, change, 'stopped', reason ?? (by === 'customer' ? 'Stopped by the person at the computer' : 'Stopped by the team'));
    if (audit) await recordAudit(change.trx, audit);
    return true;
  });
  return value ? { ok: true, row } : { ok: false, refusal: { reason: 'no_task' } };
}

/**
 * The session's computer went away: its active task fails (offline, and not back within the
 * reconnect grace) or stops (released, expired).
 */
export async function computerGone(deps: TaskLoopDeps, sessionCode: string, why: 'offline' | 'released' | 'expired'): Promise<void> {
  const active = await findActiveTask(deps.db, sessionCode);
  if (!active) return;
  await changeTaskLocked(deps, active.id, async (change) => {
    if (isDone(change.row.status)) return;
    if (why === 'offline') {
      // Read under a share lock: a hello (which takes the row FOR UPDATE) either came first, or
      // back and gone again within the grace, and the task goes on; or it waits for this failure
      // and finds no task to resume.
      const session = await findSessionPresenceForShare(change.trx, sessionCode);
      const grace = deps.reconnectGraceMs;
      if (session?.status === 'connected' || (session?.last_active_at && change.now.getTime() - new Date(session.last_active_at).getTime() < grace)) return;
      const seconds = Math.round(grace / 100) / 10;
      await finish(deps, change, 'failed', grace > 0 ? `The computer disconnected and did not come back within ${seconds} second${seconds === 1 ? '' : 's'}` : 'The computer disconnected');
    } else {
      await finish(deps, change, 'stopped', why === 'released' ? 'The team disconnected the computer' : 'The session expired');
    }
  });
}
