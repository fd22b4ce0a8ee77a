import { QUEUE_NAMES } from '../../shared/queues/catalog';
import type { ToolCallService } from '../../shared/tools/tool-calls.service';
import type { QueueWiring } from '../runtime';
import { createCallProcessor, type OnToolCallFinished } from './call.processor';

export type { OnToolCallFinished } from './call.processor';

/** The `tool-calls` queue, with what to do when a call is finished (the root resumes its task). */
export function toolCallsWiring(deps: { toolCalls: Pick<ToolCallService, 'execute'>; finished: OnToolCallFinished }): QueueWiring {
  return { queue: QUEUE_NAMES.toolCalls, concurrency: 50, processors: { call: createCallProcessor(deps.toolCalls, deps.finished) } };
}
