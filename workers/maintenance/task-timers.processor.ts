import type { JobHelpers } from '../runtime';

/** `approval_timeout_minutes` passed: the approval is denied with `answered_by: timeout`. */
export async function approvalTimeoutProcessor(payload: unknown, { container }: JobHelpers): Promise<void> {
  const { task_id, approval_id } = payload as { task_id: string; approval_id: string };
  await container.loop.approvalTimedOut(task_id, approval_id);
}
