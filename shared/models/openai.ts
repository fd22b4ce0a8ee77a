/**
 * OpenAI backend: the Responses API through OpenAI's SDK with the GA `computer` tool (current
 * GPT models; the `computer_use_preview` tool and its models are retired), plus the agent's own
 * tools as function tools. A computer call batches several actions (`actions[]`) and is answered
 * with a `computer_call_output` holding a `computer_screenshot`. OpenAI keeps the conversation
 * (`previous_response_id`), so `state` only holds that id and the calls the next request must
 * answer.
 */
import OpenAI from 'openai';
import type {
  ComputerAction,
  Response as OpenAIResponse,
  ResponseComputerToolCall,
  ResponseFunctionToolCall,
  ResponseCreateParamsNonStreaming,
  ResponseInputItem,
  ResponseOutputItem,
  Tool,
} from 'openai/resources/responses/responses';
import type { DesktopAction } from '../desktop/protocol';
import { agentToolDefinitions, outcomeText } from './agent-tools';
import {
  clampPoint,
  desktopOs,
  historyKeys,
  mayAcknowledgeSafety,
  normalizeCombo,
  screenCentre,
  withHeldKeys,
  type DesktopOs,
  type PlannedActions,
} from './desktop-helpers';
import {
  ModelError,
  type ModelBackend,
  type ModelMove,
  type ModelTurnInput,
  type ModelTurnOutput,
  type ScopeJudgeInput,
  type ScopeVerdict,
  type TurnOutcome,
} from './model.types';
import { blankPng, resizePng } from './screenshots';
import { sdkClientOptions, toModelError, type VendorBackendOptions } from './vendor-http';
import { openaiText, readScopeAnswer, SCOPE_JUDGE_INSTRUCTIONS, SCOPE_JUDGE_RETRY, scopeJudgeQuestion } from './scope-judge';
import {
  agentToolRequest,
  answerCall,
  computerProblem,
  computerRequest,
  foreignState,
  MAX_REQUESTS_PER_TURN,
  reduceCalls,
  thoughtOf,
  TurnTally,
  type CallRecord,
  type CallRequest,
} from './turn-reduction';

/** The API base including `/v1`, as OpenAI's own clients take `OPENAI_BASE_URL`. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** An OpenAI `wait` has no duration; two seconds is what OpenAI's samples wait. */
const WAIT_MS = 2000;

type SafetyCheck = ResponseComputerToolCall.PendingSafetyCheck;

interface PendingCall extends CallRecord {
  call_id: string;
  type: 'computer' | 'function';
  /** Safety checks to acknowledge when the step ran. */
  checks?: SafetyCheck[];
}

interface OpenAIState {
  v: 1;
  response_id: string;
  pending: PendingCall[];
}

function readState(state: unknown): OpenAIState {
  const s = state as Partial<OpenAIState> | null;
  if (!s || s.v !== 1 || typeof s.response_id !== 'string' || !Array.isArray(s.pending)) {
    throw foreignState('openai', 'OpenAI');
  }
  return { v: 1, response_id: s.response_id, pending: s.pending };
}

type Item = ResponseInputItem;

function dataUrl(png: Buffer): string {
  return `data:image/png;base64,${png.toString('base64')}`;
}

/**
 * Input items answering the previous response's calls; notes on failures follow as a user
 * message. A computer call's safety checks are acknowledged only when a person approved them
 * and its actions ran (`mayAcknowledgeSafety`).
 */
function answers(pending: PendingCall[], outcome: TurnOutcome | null, screenshotUrl: string, safetyApproved: boolean | undefined): Item[] {
  const items: Item[] = [];
  const notes: string[] = [];
  for (const call of pending) {
    const answer = answerCall(call, outcome);
    if (call.type === 'function') {
      // A function call's record never holds actions: its answer is text.
      if (answer.kind === 'text') items.push({ type: 'function_call_output', call_id: call.call_id, output: answer.text });
      continue;
    }
    const item: ResponseInputItem.ComputerCallOutput = {
      type: 'computer_call_output',
      call_id: call.call_id,
      output: { type: 'computer_screenshot', image_url: screenshotUrl },
    };
    if (answer.kind === 'text') notes.push(answer.text);
    else {
      if (call.checks && call.checks.length > 0 && mayAcknowledgeSafety(safetyApproved, answer.outcome)) item.acknowledged_safety_checks = call.checks;
      const problem = computerProblem(answer.outcome, 'The last action did not work');
      if (problem !== null) notes.push(problem);
    }
    items.push(item);
  }
  if (notes.length > 0) items.push({ role: 'user', type: 'message', content: [{ type: 'input_text', text: notes.join('\n') }] });
  return items;
}

/** One action of a `computer_call` → desktop actions, keys held during it applied. */
function mapAction(action: ComputerAction | Record<string, unknown>, os: DesktopOs, width: number, height: number): PlannedActions {
  const mapped = mapPlainAction(action as Record<string, unknown>, os, width, height);
  const held = (action as { keys?: unknown }).keys;
  const type = (action as { type?: unknown }).type;
  if (!mapped.ok || type === 'keypress' || !Array.isArray(held) || held.length === 0) return mapped;
  return withHeldKeys(mapped.actions, held.filter((k): k is string => typeof k === 'string'), os);
}

function mapPlainAction(action: Record<string, unknown>, os: DesktopOs, width: number, height: number): PlannedActions {
  const num = (key: string) => (typeof action[key] === 'number' ? (action[key] as number) : null);
  const point = () => {
    const x = num('x');
    const y = num('y');
    return x === null || y === null ? null : clampPoint(x, y, width, height);
  };
  const type = typeof action.type === 'string' ? action.type : '';
  switch (type) {
    case 'screenshot':
    case 'move':
      // Hovering changes nothing on these computers; the model gets a fresh screenshot either way.
      return { ok: true, actions: [{ type: 'screenshot' }] };
    case 'click': {
      const p = point();
      if (!p) return { ok: false, error: 'click needs x and y' };
      const button = action.button ?? 'left';
      if (button === 'left') return { ok: true, actions: [{ type: 'click', ...p }] };
      if (button === 'right') return { ok: true, actions: [{ type: 'click', ...p, button: 'right' }] };
      if (button === 'back' || button === 'forward') return { ok: true, actions: [{ type: 'key', keys: historyKeys(button, os) }] };
      return { ok: false, error: `The ${String(button)} button is not available on this computer; use left or right.` };
    }
    case 'double_click': {
      const p = point();
      if (!p) return { ok: false, error: 'double_click needs x and y' };
      return { ok: true, actions: [{ type: 'click', ...p, double: true }] };
    }
    case 'drag': {
      const path = Array.isArray(action.path) ? (action.path as Array<{ x?: unknown; y?: unknown }>) : [];
      const ends = [path[0], path[path.length - 1]];
      if (path.length < 2 || ends.some((p) => typeof p?.x !== 'number' || typeof p?.y !== 'number')) {
        return { ok: false, error: 'drag needs a path of at least two points' };
      }
      const [from, to] = ends.map((p) => clampPoint(p.x as number, p.y as number, width, height));
      return { ok: true, actions: [{ type: 'drag', from, to }] };
    }
    case 'keypress': {
      const keys = Array.isArray(action.keys) ? action.keys.filter((k): k is string => typeof k === 'string') : [];
      const combo = normalizeCombo(keys.join('+'), os);
      if (!combo) return { ok: false, error: 'keypress needs keys' };
      return { ok: true, actions: [{ type: 'key', keys: combo }] };
    }
    case 'type':
      if (typeof action.text !== 'string') return { ok: false, error: 'type needs text' };
      return { ok: true, actions: [{ type: 'type', text: action.text }] };
    case 'scroll': {
      const p = point() ?? screenCentre(width, height);
      return {
        ok: true,
        actions: [{ type: 'scroll', ...p, dx: Math.round(num('scroll_x') ?? 0), dy: Math.round(num('scroll_y') ?? 0) }],
      };
    }
    case 'wait':
      return { ok: true, actions: [{ type: 'wait', ms: WAIT_MS }] };
    default:
      return { ok: false, error: `The action "${type}" is not available on this computer.` };
  }
}

function readResponse(r: OpenAIResponse): OpenAIResponse {
  if (r && r.status === 'failed' && r.error) {
    throw new ModelError(`OpenAI API could not answer: ${r.error.message ?? r.error.code ?? 'failed'}`, {
      code: 'server_error',
      retryable: true,
      backend: 'openai',
    });
  }
  if (!r || typeof r.id !== 'string' || !Array.isArray(r.output)) {
    throw new ModelError('OpenAI API answered without a response id and output list', {
      code: 'invalid_response',
      retryable: false,
      backend: 'openai',
    });
  }
  return r;
}

interface Interpretation {
  move: ModelMove | null;
  pending: PendingCall[];
  thought: string | null;
  safety: string | null;
}

function interpret(response: OpenAIResponse, input: ModelTurnInput, os: DesktopOs): Interpretation {
  const said: string[] = [];
  const reasoning: string[] = [];
  for (const item of response.output) {
    if (item.type === 'message' && Array.isArray(item.content)) {
      for (const part of item.content) {
        if (part.type === 'output_text' && typeof part.text === 'string' && part.text.trim() !== '') said.push(part.text.trim());
      }
    } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
      for (const part of item.summary) {
        if (typeof part.text === 'string' && part.text.trim() !== '') reasoning.push(part.text.trim());
      }
    }
  }
  const thought = thoughtOf(said, reasoning);
  const calls = response.output.filter(
    (i): i is Extract<ResponseOutputItem, { type: 'computer_call' | 'function_call' }> =>
      (i.type === 'computer_call' || i.type === 'function_call') && typeof i.call_id === 'string',
  );

  if (calls.length === 0) {
    if (response.status === 'incomplete' && said.length === 0) return { move: null, pending: [], thought, safety: null };
    return { move: { kind: 'done', summary: said.join('\n') || thought || 'Done.' }, pending: [], thought, safety: null };
  }

  const reduced = reduceCalls(calls.map((item) => ({ call: item, request: callRequest(item, input, os) })));
  const pending = reduced.calls.map(({ call, record }): PendingCall => {
    const entry: PendingCall = { call_id: call.call_id, type: call.type === 'computer_call' ? 'computer' : 'function', ...record };
    const checks = call.type === 'computer_call' && record.handled && Array.isArray(call.pending_safety_checks) ? call.pending_safety_checks : [];
    if (checks.length > 0) entry.checks = checks;
    return entry;
  });
  return { move: reduced.move, pending, thought, safety: reduced.safety };
}

/** One call of a response: a computer call's batch of actions, or one of the agent's functions. */
function callRequest(item: ResponseComputerToolCall | ResponseFunctionToolCall, input: ModelTurnInput, os: DesktopOs): CallRequest {
  if (item.type === 'computer_call') {
    // The GA tool batches actions in `actions[]`; a single `action` is read the same way.
    const batch: Array<ComputerAction | Record<string, unknown>> = item.actions ?? (item.action ? [item.action] : []);
    if (batch.length === 0) return { kind: 'error', error: 'The computer call holds no action.' };
    const actions: DesktopAction[] = [];
    for (const action of batch) {
      const mapped = mapAction(action, os, input.display.width, input.display.height);
      if (!mapped.ok) return computerRequest(mapped);
      actions.push(...mapped.actions);
    }
    const checks = Array.isArray(item.pending_safety_checks) ? item.pending_safety_checks : [];
    return computerRequest({ ok: true, actions }, checks.map((check) => check.message ?? check.code ?? 'safety check'));
  }
  let args: unknown = {};
  try {
    args = typeof item.arguments === 'string' && item.arguments !== '' ? JSON.parse(item.arguments) : {};
  } catch {
    return { kind: 'error', error: 'The arguments are not valid JSON.' };
  }
  return agentToolRequest(String(item.name), args, input.tools, `There is no function named "${String(item.name)}".`);
}

/** OpenAI Responses API backend (`Authorization: Bearer`, base URL including `/v1`), on OpenAI's SDK. */
export class OpenAIBackend implements ModelBackend {
  readonly id = 'openai' as const;
  readonly readsScreens = true;
  private readonly client: OpenAI;

  constructor(options: VendorBackendOptions) {
    this.client = new OpenAI(sdkClientOptions(options, OPENAI_DEFAULT_BASE_URL));
  }

  /**
   * The scope check: one Responses request with the question as text and no tools, so the
   * answer cannot be a computer call. An answer without text is asked again once.
   */
  async judgeScope(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict> {
    let text: string | null = null;
    for (const question of [scopeJudgeQuestion(input), `${scopeJudgeQuestion(input)}\n\n${SCOPE_JUDGE_RETRY}`]) {
      const body = {
        model: input.model,
        instructions: SCOPE_JUDGE_INSTRUCTIONS,
        input: [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: question }] }],
      } satisfies ResponseCreateParamsNonStreaming;
      text = openaiText(await this.call(body, input.model, signal));
      if (text !== null) break;
    }
    return readScopeAnswer(text, input);
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnOutput> {
    const os = desktopOs(input.display.os);
    // Coordinates are read in display pixels, so the picture must be display-sized (a Retina
    // screenshot is twice as large).
    const screenshot = input.screenshot ? await resizePng(input.screenshot, input.display.width, input.display.height) : null;
    // A computer call must be answered with a screenshot; a blank one stands in when none was taken.
    const screenUrl = async () => dataUrl(screenshot ?? (await blankPng(input.display.width, input.display.height)));

    let previous: string | null = null;
    let items: Item[];
    if (input.state === null || input.state === undefined) {
      const content: ResponseInputItem.Message['content'] = [{ type: 'input_text', text: input.prompt }];
      if (screenshot) content.push({ type: 'input_image', image_url: dataUrl(screenshot), detail: 'auto' });
      items = [{ role: 'user', type: 'message', content }];
    } else {
      const state = readState(input.state);
      previous = state.response_id;
      items =
        state.pending.length > 0
          ? answers(state.pending, input.lastOutcome, await screenUrl(), input.safetyApproved)
          : [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: outcomeText(input.lastOutcome).text }] }];
    }

    const tally = new TurnTally();
    for (let request = 1; request <= MAX_REQUESTS_PER_TURN; request++) {
      const response = readResponse(await this.call(openaiRequestBody(input, items, previous), input.model, signal));
      tally.count(response.usage?.input_tokens ?? 0, response.usage?.output_tokens ?? 0);
      previous = response.id;
      const result = interpret(response, input, os);
      tally.heard(result.thought);
      if (result.move) {
        const state: OpenAIState = { v: 1, response_id: response.id, pending: result.pending };
        return tally.output(state, result.move, result.safety);
      }
      items =
        result.pending.length > 0
          ? answers(result.pending, null, await screenUrl(), false)
          : [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: 'Go on.' }] }];
    }
    return tally.gaveUp({ v: 1, response_id: previous ?? '', pending: [] } satisfies OpenAIState);
  }

  private async call(body: ResponseCreateParamsNonStreaming, model: string, signal?: AbortSignal): Promise<OpenAIResponse> {
    try {
      return await this.client.responses.create(body, { signal });
    } catch (error) {
      throw toModelError('openai', error, signal, model);
    }
  }
}

/**
 * The request for one turn, typed by OpenAI's SDK. The GA computer tool takes no display size or
 * environment: the model reads both off the screenshots. `reasoning.effort` is the task's effort
 * (the current GPT models are reasoning models and take low, medium and high).
 */
export function openaiRequestBody(input: ModelTurnInput, items: Item[], previous: string | null): ResponseCreateParamsNonStreaming {
  const tools: Tool[] = [
    { type: 'computer' },
    ...agentToolDefinitions(input.tools).map((t): Tool => ({
      type: 'function',
      name: t.name,
      description: t.description,
      parameters: { ...t.parameters },
      strict: false,
    })),
  ];
  const body: ResponseCreateParamsNonStreaming = {
    model: input.model,
    input: items,
    tools,
    reasoning: { effort: input.effort, summary: 'concise' },
    truncation: 'auto',
  };
  if (input.system.trim() !== '') body.instructions = input.system;
  if (previous) body.previous_response_id = previous;
  return body;
}
