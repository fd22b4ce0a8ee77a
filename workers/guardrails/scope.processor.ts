import type { JobPayload } from '../../shared/queues/catalog';
import { ModelError } from '../../shared/models/model.types';
import { judgeScope, scopeCheckFailed, type ScopeJudgement } from '../../shared/guardrails/scope-check';
import { findTaskById } from '../../shared/tasks/tasks.repository';
import type { JobHelpers } from '../runtime';

/**
 * `guardrails/scope`: before a task with `guardrails.scope` begins, asks the judge (the task's
 * model backend) whether the prompt fits the scope, then hands the verdict to the task loop,
 * which begins the task or fails it with the reason. A judge that failed for a passing reason
 * (429, 5xx, no answer) is asked again by the queue; on the last attempt it counts as undecided.
 */
export async function scopeProcessor(payload: unknown, { job, container }: JobHelpers): Promise<string> {
  const { task_id } = payload as JobPayload<'guardrails', 'scope'>;
  const row = await findTaskById(container.db, task_id);
  if (!row || row.status !== 'queued' || row.phase !== 'scope' || row.current_job_id !== job.id) return 'stale';
  const input = { scope: row.agent_config.guardrails.scope, prompt: row.prompt, model: row.model };
  let judgement: ScopeJudgement;
  try {
    judgement = await judgeScope(container.models.backendFor(row.model), input, AbortSignal.timeout(container.config.modelTimeoutMs));
  } catch (error) {
    const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    if (error instanceof ModelError && error.retryable && !lastAttempt) throw error;
    judgement = scopeCheckFailed(error);
  }
  const applied = await container.loop.scopeJudged(task_id, job.id!, judgement);
  return applied ? judgement.verdict : 'stale';
}
