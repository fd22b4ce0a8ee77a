/**
 * The agent's own tools as every vendor model sees them, next to the vendor's computer tool:
 * asking the person, requesting an approval, finishing, giving up, calling the org's HTTP tools
 * and using the agent's file store. Each vendor backend declares these in its own wire format
 * and turns the model's calls back into moves here, so the three behave alike.
 */
import { GUARDRAIL_CATEGORIES, type GuardrailCategory } from '../desktop/protocol';
import type { ActionOutcome, ModelMove, ModelTools, TurnOutcome } from './model.types';
import { asSentence } from '../guardrails/engine';

/** A JSON Schema of the small kind all three vendors accept. */
export interface ToolSchema {
  type: 'object';
  properties: Record<string, PropertySchema>;
  required: string[];
}

export type PropertySchema =
  | { type: 'string'; description: string; enum?: string[] }
  | { type: 'array'; description: string; items: { type: 'string' } }
  | { type: 'object'; description: string };

export interface AgentToolDefinition {
  name: string;
  description: string;
  parameters: ToolSchema;
}

export const TOOL_NAMES = {
  ask: 'ask_person',
  approval: 'request_approval',
  finish: 'finish',
  giveUp: 'give_up',
  callTool: 'call_tool',
  listFiles: 'list_files',
  readFile: 'read_file',
  searchFiles: 'search_files',
  writeFile: 'write_file',
  deleteFile: 'delete_file',
} as const;

/**
 * The tools to declare for this agent. `argumentsAsJson` makes `call_tool` take its arguments as
 * a JSON string (Gemini's schema subset has no free-form object).
 */
export function agentToolDefinitions(tools: ModelTools, options: { argumentsAsJson?: boolean } = {}): AgentToolDefinition[] {
  const defs: AgentToolDefinition[] = [
    {
      name: TOOL_NAMES.ask,
      description:
        'Ask the people you work for a question and wait for the answer. Give options when the answer is one of a few choices.',
      parameters: {
        type: 'object',
        properties: {
          question: { type: 'string', description: 'The question, in one or two sentences.' },
          options: { type: 'array', description: 'Possible answers; leave empty for a free answer.', items: { type: 'string' } },
        },
        required: ['question'],
      },
    },
    {
      name: TOOL_NAMES.approval,
      description:
        'Ask for approval before doing something with consequences (buying, sending, deleting, installing, changing security settings, accepting terms). Wait for the decision; if denied, do not do it.',
      parameters: {
        type: 'object',
        properties: {
          what: { type: 'string', description: 'What you are about to do, in one sentence.' },
          category: {
            type: 'string',
            description: 'The kind of step, when it is one of these.',
            enum: [...GUARDRAIL_CATEGORIES],
          },
        },
        required: ['what'],
      },
    },
    {
      name: TOOL_NAMES.finish,
      description: 'The task is done. Give a short summary of what you did and found.',
      parameters: {
        type: 'object',
        properties: { summary: { type: 'string', description: 'What was done, for the people you work for.' } },
        required: ['summary'],
      },
    },
    {
      name: TOOL_NAMES.giveUp,
      description: 'The task cannot be done. Say why.',
      parameters: {
        type: 'object',
        properties: { reason: { type: 'string', description: 'Why the task cannot be done.' } },
        required: ['reason'],
      },
    },
  ];

  if (tools.http.length > 0) {
    const list = tools.http.map((t) => `- ${t.name}: ${t.description}`).join('\n');
    defs.push({
      name: TOOL_NAMES.callTool,
      description: `Call one of the organisation's functions and get its reply. The functions:\n${list}`,
      parameters: {
        type: 'object',
        properties: {
          name: { type: 'string', description: 'The function to call.', enum: tools.http.map((t) => t.name) },
          ...(options.argumentsAsJson
            ? { arguments_json: { type: 'string' as const, description: 'The arguments as a JSON object, like {"id": 1}.' } }
            : { arguments: { type: 'object' as const, description: 'The arguments, as the function expects them.' } }),
        },
        required: ['name'],
      },
    });
  }

  if (tools.files.enabled) {
    defs.push(
      {
        name: TOOL_NAMES.listFiles,
        description: 'List the files in your own file store (kept for you between tasks, separate from the computer).',
        parameters: {
          type: 'object',
          properties: { path: { type: 'string', description: 'A folder; leave out for all files.' } },
          required: [],
        },
      },
      {
        name: TOOL_NAMES.readFile,
        description: 'Read a text file from your own file store.',
        parameters: { type: 'object', properties: { path: { type: 'string', description: 'The file.' } }, required: ['path'] },
      },
      {
        name: TOOL_NAMES.searchFiles,
        description: 'Search the text of the files in your own file store.',
        parameters: {
          type: 'object',
          properties: { query: { type: 'string', description: 'Words to look for.' } },
          required: ['query'],
        },
      },
    );
    if (!tools.files.read_only) {
      defs.push(
        {
          name: TOOL_NAMES.writeFile,
          description: 'Write a text file in your own file store (replaces the file if it exists).',
          parameters: {
            type: 'object',
            properties: {
              path: { type: 'string', description: 'The file.' },
              text: { type: 'string', description: 'The whole text of the file.' },
            },
            required: ['path', 'text'],
          },
        },
        {
          name: TOOL_NAMES.deleteFile,
          description: 'Delete a file from your own file store.',
          parameters: { type: 'object', properties: { path: { type: 'string', description: 'The file.' } }, required: ['path'] },
        },
      );
    }
  }
  return defs;
}

/** Either the move a tool call asks for, or why it cannot be done (to tell the model). */
export type CallResult = { ok: true; move: ModelMove } | { ok: false; error: string };

function str(args: Record<string, unknown>, key: string): string | null {
  const value = args[key];
  return typeof value === 'string' ? value : null;
}

/** Turns a call of one of the agent's tools into a move; null when `name` is not one of them. */
export function agentToolCallToMove(name: string, rawArgs: unknown, tools: ModelTools): CallResult | null {
  const args = (rawArgs && typeof rawArgs === 'object' && !Array.isArray(rawArgs) ? rawArgs : {}) as Record<string, unknown>;
  const missing = (key: string): CallResult => ({ ok: false, error: `${name} needs "${key}" (a string)` });
  const filesOff: CallResult = { ok: false, error: 'This agent has no file store' };
  switch (name) {
    case TOOL_NAMES.ask: {
      const question = str(args, 'question');
      if (!question) return missing('question');
      const options = Array.isArray(args.options) ? args.options.filter((o): o is string => typeof o === 'string') : [];
      return { ok: true, move: { kind: 'ask', question, options } };
    }
    case TOOL_NAMES.approval: {
      const what = str(args, 'what');
      if (!what) return missing('what');
      const raw = str(args, 'category');
      const category = raw && (GUARDRAIL_CATEGORIES as readonly string[]).includes(raw) ? (raw as GuardrailCategory) : null;
      return { ok: true, move: { kind: 'request_approval', what, category } };
    }
    case TOOL_NAMES.finish:
      return { ok: true, move: { kind: 'done', summary: str(args, 'summary') || 'Done.' } };
    case TOOL_NAMES.giveUp:
      return { ok: true, move: { kind: 'fail', reason: str(args, 'reason') || 'The model gave up without a reason.' } };
    case TOOL_NAMES.callTool: {
      const tool = str(args, 'name');
      if (!tool) return missing('name');
      if (!tools.http.some((t) => t.name === tool)) return { ok: false, error: `There is no function named "${tool}"` };
      let callArgs: unknown = args.arguments ?? {};
      if (typeof args.arguments_json === 'string') {
        try {
          callArgs = JSON.parse(args.arguments_json === '' ? '{}' : args.arguments_json);
        } catch {
          return { ok: false, error: 'arguments_json is not valid JSON' };
        }
      }
      if (!callArgs || typeof callArgs !== 'object' || Array.isArray(callArgs)) {
        return { ok: false, error: 'The arguments must be a JSON object' };
      }
      return { ok: true, move: { kind: 'tool', name: tool, arguments: callArgs as Record<string, unknown> } };
    }
    case TOOL_NAMES.listFiles: {
      if (!tools.files.enabled) return filesOff;
      const path = str(args, 'path');
      return { ok: true, move: path ? { kind: 'file', op: 'list', path } : { kind: 'file', op: 'list' } };
    }
    case TOOL_NAMES.readFile:
    case TOOL_NAMES.deleteFile: {
      if (!tools.files.enabled) return filesOff;
      if (name === TOOL_NAMES.deleteFile && tools.files.read_only) return { ok: false, error: 'Your files are read-only' };
      const path = str(args, 'path');
      if (!path) return missing('path');
      return { ok: true, move: { kind: 'file', op: name === TOOL_NAMES.readFile ? 'read' : 'delete', path } };
    }
    case TOOL_NAMES.searchFiles: {
      if (!tools.files.enabled) return filesOff;
      const query = str(args, 'query');
      if (!query) return missing('query');
      return { ok: true, move: { kind: 'file', op: 'search', query } };
    }
    case TOOL_NAMES.writeFile: {
      if (!tools.files.enabled) return filesOff;
      if (tools.files.read_only) return { ok: false, error: 'Your files are read-only' };
      const path = str(args, 'path');
      const text = str(args, 'text');
      if (!path) return missing('path');
      if (text === null) return missing('text');
      return { ok: true, move: { kind: 'file', op: 'write', path, text } };
    }
    default:
      return null;
  }
}

/** Failed actions as sentences, or null when all went well. */
export function actionFailures(results: ActionOutcome[] | undefined): string | null {
  const failed = (results ?? [])
    .map((r, i) => (r.ok ? null : `action ${i + 1} failed: ${r.error ?? 'the computer could not do it'}`))
    .filter((s): s is string => s !== null);
  return failed.length > 0 ? failed.join('; ') : null;
}

/** The previous turn's outcome as the text a model gets back for its tool call. */
export function outcomeText(outcome: TurnOutcome | null): { text: string; isError: boolean } {
  if (!outcome) return { text: 'Done.', isError: false };
  switch (outcome.kind) {
    case 'actions': {
      const failures = actionFailures(outcome.results);
      const note = outcome.note ? ` ${outcome.note}` : '';
      return failures ? { text: `Not everything worked: ${failures}.${note}`, isError: true } : { text: `Done.${note}`, isError: false };
    }
    case 'refused': {
      const ran = actionFailures(outcome.results);
      return {
        text: `Refused by the guardrails: ${asSentence(outcome.reason)} Do not try it another way; plan around it or ask.${ran ? ` Before that, ${ran}.` : ''}`,
        isError: true,
      };
    }
    case 'answer':
      return { text: `The answer: ${outcome.answer}`, isError: false };
    case 'approval':
      return outcome.decision === 'approve'
        ? { text: 'Approved.', isError: false }
        : { text: `Denied${outcome.reason ? `: ${asSentence(outcome.reason)}` : '.'} Do not do it.`, isError: true };
    case 'tool':
      return outcome.ok ? { text: outcome.text, isError: false } : { text: `The call failed: ${outcome.text}`, isError: true };
    case 'file':
      return outcome.ok ? { text: outcome.text, isError: false } : { text: `Failed: ${outcome.text}`, isError: true };
    case 'slept':
      return { text: 'Done.', isError: false };
  }
}

/** Text the model gets for a call of its that was not carried out this turn. */
export const NOT_CARRIED_OUT =
  'Not carried out: only one kind of step runs per turn (the computer actions, or one other tool). Ask again if it is still needed.';
