import type { Knex } from '../../shared/db/knex';
import type { JobPayload } from '../../shared/queues/catalog';
import type { ModelRegistry } from '../../shared/models/registry';
import { ModelError } from '../../shared/models/model.types';
import { judgeScope, scopeCheckFailed, type ScopeJudgement } from '../../shared/guardrails/scope-check';
import { findTaskById } from '../../shared/tasks/tasks.repository';
import { awaitsScopeCheck } from '../../shared/tasks/loop/begin';
import type { Processor } from '../runtime';

export interface ScopeCheckDeps {
  db: Knex;
  models: Pick<ModelRegistry, 'backendFor'>;
  /** How long the judge's one model turn may take. */
  modelTimeoutMs: number;
  /** The task loop, which begins the task or fails it with the verdict's reason. */
  loop: { scopeJudged(taskId: string, jobIdOfCheck: string, judgement: ScopeJudgement): Promise<boolean> };
}

/**
 * `guardrails/scope`: before a task with `guardrails.scope` begins, asks the judge (the task's
 * model backend) whether the prompt fits the scope, then hands the verdict to the task loop,
 * which begins the task or fails it with the reason. A judge that failed for a passing reason
 * (429, 5xx, no answer) is asked again by the queue; on the last attempt it counts as undecided.
 */
export function createScopeProcessor(deps: ScopeCheckDeps): Processor {
  return async (payload, { job, signal }): Promise<string> => {
    const { task_id } = payload as JobPayload<'guardrails', 'scope'>;
    const row = await findTaskById(deps.db, task_id);
    if (!row || !awaitsScopeCheck(row, job.id!)) return 'stale';
    const input = { scope: row.agent_config.guardrails.scope, prompt: row.prompt, model: row.model };
    let judgement: ScopeJudgement;
    try {
      judgement = await judgeScope(deps.models.backendFor(row.model), input, AbortSignal.any([AbortSignal.timeout(deps.modelTimeoutMs), signal]));
    } catch (error) {
      const lastAttempt = job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
      if (error instanceof ModelError && error.retryable && !lastAttempt) throw error;
      judgement = scopeCheckFailed(error);
    }
    const applied = await deps.loop.scopeJudged(task_id, job.id!, judgement);
    return applied ? judgement.verdict : 'stale';
  };
}
