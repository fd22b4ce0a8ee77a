import type { ModelMove, TurnOutcome } from '../../models/model.types';
import type { TaskRow } from '../task-rows';
import type { TaskLoopDeps } from './loop-deps';

/**
 * Runs the agent's file operation (its `files` tool) before the turn's change is written: what
 * it answers becomes the model's next outcome. A refusal or a failure is an outcome, not an error.
 */
export async function runFileOp(deps: Pick<TaskLoopDeps, 'agentFiles'>, row: TaskRow, move: Extract<ModelMove, { kind: 'file' }>): Promise<TurnOutcome> {
  const accessor = { kind: 'agent' as const, tools: row.agent_config.tools, taskId: row.id };
  const files = deps.agentFiles;
  try {
    switch (move.op) {
      case 'list': {
        const listed = await files.list(row.org_id, row.agent_id, { accessor });
        return { kind: 'file', ok: true, text: listed.map((file) => `${file.path} (${file.size_bytes} bytes)`).join('\n') || '(no files)' };
      }
      case 'read':
        return { kind: 'file', ok: true, text: (await files.read(row.org_id, row.agent_id, move.path ?? '', accessor)).content };
      case 'write':
        await files.write(row.org_id, row.agent_id, move.path ?? '', move.text ?? '', accessor);
        return { kind: 'file', ok: true, text: `Wrote ${move.path}` };
      case 'delete':
        await files.delete(row.org_id, row.agent_id, move.path ?? '', accessor);
        return { kind: 'file', ok: true, text: `Deleted ${move.path}` };
      case 'search': {
        const found = await files.search(row.org_id, row.agent_id, move.query ?? '', accessor);
        return { kind: 'file', ok: true, text: found.matches.map((m) => `${m.path}:${m.line}: ${m.text}`).join('\n') || '(no matches)' };
      }
    }
  } catch (error) {
    return { kind: 'file', ok: false, text: (error as Error).message };
  }
}
