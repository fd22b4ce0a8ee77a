/**
 * The scope check (`guardrails.scope`): before a task begins, a judge decides whether its prompt
 * is about what the agent is for. A task clearly about something else, or one the judge cannot
 * decide, fails with the judge's reason as its `error` (spec: Guardrails, `scope`).
 *
 * The judge is the backend serving the task's model: the scripted model follows the rules of
 * docs/models.md ("The scripted scope check"); a vendor backend asks its own model through
 * `judgeScope` (shared/models/scope-judge.ts). A backend without a judge cannot decide, and
 * says so. docs/guardrails.md describes the flow around it.
 */
import { ModelError, type ModelBackend, type ScopeJudgeInput } from '../models/model.types';
import { undecidedScope } from '../models/scope-judge';
import { judgeScopeScripted, type ScopeJudgement } from '../models/scripted';

export type { ScopeJudgement } from '../models/scripted';

/**
 * Judges a task against the agent's scope with `backend` (the one serving the task's model).
 * Throws the backend's `ModelError` when the judge could not be reached; the caller retries a
 * retryable one and otherwise treats it as undecidable ({@link scopeCheckFailed}).
 */
export async function judgeScope(backend: ModelBackend | null, input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeJudgement> {
  if (backend === null) return undecidedScope(`the model ${input.model} is not available on this server.`);
  if (backend.id === 'scripted') return judgeScopeScripted(input.scope, input.prompt);
  if (backend.judgeScope) return backend.judgeScope(input, signal);
  return undecidedScope(`no scope judge runs for the model ${input.model} on this server.`);
}

/** The verdict when the judge failed for good (after the queue's retries): it could not decide. */
export function scopeCheckFailed(error: unknown): ScopeJudgement {
  const message = error instanceof ModelError || error instanceof Error ? error.message : String(error);
  return undecidedScope(`the judge failed (${message.replace(/\.$/, '')})`);
}
