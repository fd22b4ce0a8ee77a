import type { JobPayload } from '../../shared/queues/catalog';
import type { Processor } from '../runtime';

/** What the task timers need of the task loop. */
export interface TaskTimers {
  approvalTimedOut(taskId: string, approvalId: string): Promise<boolean>;
}

/** `approval_timeout_minutes` passed: the approval is denied with `answered_by: timeout`. */
export function createApprovalTimeoutProcessor(loop: TaskTimers): Processor {
  return async (payload) => {
    const { task_id, approval_id } = payload as JobPayload<'maintenance', 'approval-timeout'>;
    await loop.approvalTimedOut(task_id, approval_id);
  };
}
