import type { JobPayload } from '../../shared/queues/catalog';
import type { ToolCallFinished, ToolCallService } from '../../shared/tools/tool-calls.service';
import type { JobHelpers, Processor } from '../runtime';

/**
 * Told when a tool call is finished (its row already updated). It may hear the same call more
 * than once (a job that died after the update runs again), so it must be idempotent.
 */
export type OnToolCallFinished = (call: ToolCallFinished, helpers: JobHelpers) => Promise<void>;

/** `tool-calls/call`: makes the call's one signed POST, then says it is finished. */
export function createCallProcessor(toolCalls: Pick<ToolCallService, 'execute'>, onToolCallFinished: OnToolCallFinished): Processor {
  return async (payload, helpers) => {
    const { call_id } = payload as JobPayload<'tool-calls', 'call'>;
    const finished = await toolCalls.execute(call_id);
    if (!finished) return 'nothing_to_do';
    await onToolCallFinished(finished, helpers);
    return finished.ok ? 'succeeded' : 'failed';
  };
}
