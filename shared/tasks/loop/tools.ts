import type { HttpTool } from '../../agents/agent-config';
import { changeTaskLocked, type TaskChange } from '../task-change';
import type { TaskLoopDeps } from './loop-deps';
import { scheduleStep } from './scheduling';
import { enterState, waitsFor } from './transitions';

/** Calls one of the agent's HTTP tools: the task waits (running/tool) for the tool-calls worker. */
export async function callTool(deps: Pick<TaskLoopDeps, 'tools' | 'queues'>, change: TaskChange, tool: HttpTool, args: Record<string, unknown>): Promise<void> {
  const row = change.row;
  const tools = deps.tools;
  if (!tools) {
    change.set({ last_outcome: { kind: 'tool', ok: false, text: 'HTTP tools are not available on this server' } });
    scheduleStep(deps.queues, change);
    return;
  }
  change.event('tool_call', `Calling ${tool.name}`, { tool: tool.name });
  enterState(change, 'running/tool', { phase_since: change.now });
  const callId = await tools.create(change.trx, {
    orgId: row.org_id,
    taskId: row.id,
    sessionId: row.session_id,
    agentId: row.agent_id,
    agentVersion: row.agent_version,
    step: row.steps,
    tool: { name: tool.name, url: tool.url },
    arguments: args,
  });
  change.after(() => tools.enqueue(callId));
}

/** A tool call finished (the tool-calls worker calls this): its reply goes to the model. */
export async function toolCallFinished(deps: TaskLoopDeps, call: { task_id: string; ok: boolean; reply_text: string | null; error: string | null; status: number | null }): Promise<void> {
  await changeTaskLocked(deps, call.task_id, async (change) => {
    if (waitsFor(change.row) !== 'tool') return;
    const text = call.ok ? call.reply_text ?? '' : call.error ?? `The call failed${call.status ? ` with status ${call.status}` : ''}`;
    change.event('tool_result', call.ok ? 'The tool answered' : `The tool call failed: ${text}`, { ok: call.ok, status: call.status });
    change.set({ last_outcome: { kind: 'tool', ok: call.ok, text } });
    scheduleStep(deps.queues, change);
  });
}
