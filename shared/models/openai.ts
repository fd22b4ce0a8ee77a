/**
 * OpenAI backend: the Responses API with the `computer_use_preview` tool, plus the agent's own
 * tools as function tools. OpenAI keeps the conversation (`previous_response_id`), so `state`
 * only holds that id and the calls the next request must answer.
 */
import type { DesktopAction } from '../desktop/protocol';
import { actionFailures, agentToolCallToMove, agentToolDefinitions, NOT_CARRIED_OUT, outcomeText } from './agent-tools';
import { clampPoint, describeActions, desktopOs, normalizeCombo, type DesktopOs } from './desktop-helpers';
import {
  ModelError,
  type ModelBackend,
  type ModelMove,
  type ModelTurnInput,
  type ModelTurnOutput,
  type ScopeJudgeInput,
  type ScopeVerdict,
  type ModelUsage,
  type TurnOutcome,
} from './model.types';
import { blankPng, resizePng } from './screenshots';
import { joinUrl, postJson, type VendorBackendOptions } from './vendor-http';
import { openaiText, readScopeAnswer, SCOPE_JUDGE_INSTRUCTIONS, scopeJudgeQuestion } from './scope-judge';

/** The API base including `/v1`, as OpenAI's own clients take `OPENAI_BASE_URL`. */
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
/** An OpenAI `wait` has no duration; two seconds is what OpenAI's samples wait. */
const WAIT_MS = 2000;
const MAX_REQUESTS_PER_TURN = 3;

interface SafetyCheck {
  id: string;
  code?: string;
  message?: string;
}

interface PendingCall {
  call_id: string;
  type: 'computer' | 'function';
  handled: boolean;
  first?: number;
  count?: number;
  error?: string;
  /** Safety checks to acknowledge when the step ran. */
  checks?: SafetyCheck[];
}

interface OpenAIState {
  v: 1;
  response_id: string;
  pending: PendingCall[];
}

type Item = { type: string; [key: string]: unknown };

interface OpenAIResponse {
  id: string;
  status?: string;
  output: Item[];
  usage?: { input_tokens?: number; output_tokens?: number };
}

function readState(state: unknown): OpenAIState {
  const s = state as Partial<OpenAIState> | null;
  if (!s || s.v !== 1 || typeof s.response_id !== 'string' || !Array.isArray(s.pending)) {
    throw new ModelError('The OpenAI backend was given a state it did not write', {
      code: 'invalid_input',
      retryable: false,
      backend: 'openai',
    });
  }
  return { v: 1, response_id: s.response_id, pending: s.pending };
}

function dataUrl(png: Buffer): string {
  return `data:image/png;base64,${png.toString('base64')}`;
}

/** Input items answering the previous response's calls; notes on failures follow as a user message. */
function answers(pending: PendingCall[], outcome: TurnOutcome | null, screenshotUrl: string): Item[] {
  const items: Item[] = [];
  const notes: string[] = [];
  const results = outcome && (outcome.kind === 'actions' || outcome.kind === 'refused') ? (outcome.results ?? []) : [];
  for (const call of pending) {
    if (call.type === 'computer') {
      const item: Item = {
        type: 'computer_call_output',
        call_id: call.call_id,
        output: { type: 'input_image', image_url: screenshotUrl },
      };
      if (call.error !== undefined) notes.push(call.error);
      else if (!call.handled) notes.push(NOT_CARRIED_OUT);
      else {
        if (call.checks && call.checks.length > 0) item.acknowledged_safety_checks = call.checks;
        const mine = results.slice(call.first ?? 0, (call.first ?? 0) + (call.count ?? 0));
        if (outcome?.kind === 'refused' && mine.length < (call.count ?? 0)) notes.push(outcomeText(outcome).text);
        else {
          const failures = actionFailures(mine);
          if (failures) notes.push(`The last action did not work: ${failures}.`);
        }
      }
      items.push(item);
      continue;
    }
    let output: string;
    if (call.error !== undefined) output = call.error;
    else if (!call.handled) output = NOT_CARRIED_OUT;
    else output = outcomeText(outcome).text;
    items.push({ type: 'function_call_output', call_id: call.call_id, output });
  }
  if (notes.length > 0) items.push({ role: 'user', type: 'message', content: [{ type: 'input_text', text: notes.join('\n') }] });
  return items;
}

type Mapped = { ok: true; actions: DesktopAction[] } | { ok: false; error: string };

/** One `computer_call` action → desktop actions. */
function mapAction(action: Record<string, unknown>, os: DesktopOs, width: number, height: number): Mapped {
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
      if (button === 'back') return { ok: true, actions: [{ type: 'key', keys: os === 'windows' ? 'alt+left' : 'cmd+[' }] };
      if (button === 'forward') return { ok: true, actions: [{ type: 'key', keys: os === 'windows' ? 'alt+right' : 'cmd+]' }] };
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
      const p = point() ?? { x: Math.round(width / 2), y: Math.round(height / 2) };
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

function readResponse(body: unknown): OpenAIResponse {
  const r = body as (Partial<OpenAIResponse> & { error?: { message?: string; code?: string } | null }) | null;
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
  return { id: r.id, status: r.status, output: r.output, usage: r.usage };
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
      for (const part of item.content as Item[]) {
        if (part.type === 'output_text' && typeof part.text === 'string' && part.text.trim() !== '') said.push(part.text.trim());
      }
    } else if (item.type === 'reasoning' && Array.isArray(item.summary)) {
      for (const part of item.summary as Item[]) {
        if (typeof part.text === 'string' && part.text.trim() !== '') reasoning.push(part.text.trim());
      }
    }
  }
  const thought = said.length > 0 ? said.join('\n') : reasoning.length > 0 ? reasoning.join('\n') : null;
  const calls = response.output.filter(
    (i) => (i.type === 'computer_call' || i.type === 'function_call') && typeof i.call_id === 'string',
  );

  if (calls.length === 0) {
    if (response.status === 'incomplete' && said.length === 0) return { move: null, pending: [], thought, safety: null };
    return { move: { kind: 'done', summary: said.join('\n') || thought || 'Done.' }, pending: [], thought, safety: null };
  }

  type Plan = { item: Item; computer?: DesktopAction[]; move?: ModelMove; error?: string };
  const plans: Plan[] = calls.map((item): Plan => {
    if (item.type === 'computer_call') {
      const mapped = mapAction((item.action ?? {}) as Record<string, unknown>, os, input.display.width, input.display.height);
      return mapped.ok ? { item, computer: mapped.actions } : { item, error: mapped.error };
    }
    let args: unknown = {};
    try {
      args = typeof item.arguments === 'string' && item.arguments !== '' ? JSON.parse(item.arguments) : {};
    } catch {
      return { item, error: 'The arguments are not valid JSON.' };
    }
    const call = agentToolCallToMove(String(item.name), args, input.tools);
    if (call === null) return { item, error: `There is no function named "${String(item.name)}".` };
    return call.ok ? { item, move: call.move } : { item, error: call.error };
  });

  const base = (p: Plan): PendingCall => ({
    call_id: p.item.call_id as string,
    type: p.item.type === 'computer_call' ? 'computer' : 'function',
    handled: false,
    ...(p.error !== undefined ? { error: p.error } : {}),
  });
  const leader = plans.find((p) => p.error === undefined);
  if (!leader) return { move: null, pending: plans.map(base), thought, safety: null };

  if (leader.computer) {
    const actions: DesktopAction[] = [];
    const safety: string[] = [];
    const pending = plans.map((p): PendingCall => {
      if (!p.computer) return base(p);
      const checks = Array.isArray(p.item.pending_safety_checks) ? (p.item.pending_safety_checks as SafetyCheck[]) : [];
      for (const check of checks) safety.push(check.message ?? check.code ?? 'safety check');
      const entry: PendingCall = { ...base(p), handled: true, first: actions.length, count: p.computer.length };
      if (checks.length > 0) entry.checks = checks;
      actions.push(...p.computer);
      return entry;
    });
    return {
      move: { kind: 'actions', actions, step: describeActions(actions) },
      pending,
      thought,
      safety: safety.length > 0 ? safety.join(' ') : null,
    };
  }

  const move = leader.move as ModelMove;
  const ends = move.kind === 'done' || move.kind === 'fail';
  return { move, pending: ends ? [] : plans.map((p) => ({ ...base(p), handled: p === leader })), thought, safety: null };
}

/** OpenAI Responses API backend (`Authorization: Bearer`, base URL including `/v1`). */
export class OpenAIBackend implements ModelBackend {
  readonly id = 'openai' as const;
  private readonly baseUrl: string;

  constructor(private readonly options: VendorBackendOptions) {
    this.baseUrl = options.baseUrl || OPENAI_DEFAULT_BASE_URL;
  }

  /**
   * The scope check: one Responses request with the question as text. The computer-use model
   * takes requests only with its computer tool declared; the judge is told to answer in text,
   * and an answer that is a computer call cannot be read, so it counts as undecided.
   */
  async judgeScope(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict> {
    const response = await postJson({
      backend: 'openai',
      url: joinUrl(this.baseUrl, '/responses'),
      headers: { authorization: `Bearer ${this.options.apiKey}` },
      body: {
        model: input.model,
        instructions: SCOPE_JUDGE_INSTRUCTIONS,
        input: [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: scopeJudgeQuestion(input) }] }],
        tools: [{ type: 'computer_use_preview', display_width: 1280, display_height: 800, environment: 'browser' }],
        truncation: 'auto',
      },
      fetchImpl: this.options.fetchImpl,
      retry: this.options.retry,
      timeoutMs: this.options.timeoutMs,
      signal,
    });
    return readScopeAnswer(openaiText(response), input);
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
      const content: Item[] = [{ type: 'input_text', text: input.prompt }];
      if (screenshot) content.push({ type: 'input_image', image_url: dataUrl(screenshot) });
      items = [{ role: 'user', type: 'message', content }];
    } else {
      const state = readState(input.state);
      previous = state.response_id;
      items =
        state.pending.length > 0
          ? answers(state.pending, input.lastOutcome, await screenUrl())
          : [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: outcomeText(input.lastOutcome).text }] }];
    }

    const usage: ModelUsage = { input_tokens: 0, output_tokens: 0 };
    const thoughts: string[] = [];
    for (let request = 1; request <= MAX_REQUESTS_PER_TURN; request++) {
      const response = readResponse(await this.post(input, os, items, previous, signal));
      usage.input_tokens += response.usage?.input_tokens ?? 0;
      usage.output_tokens += response.usage?.output_tokens ?? 0;
      previous = response.id;
      const result = interpret(response, input, os);
      if (result.thought) thoughts.push(result.thought);
      if (result.move) {
        const state: OpenAIState = { v: 1, response_id: response.id, pending: result.pending };
        return { state, thought: thoughts.join('\n') || null, move: result.move, safety: result.safety, usage };
      }
      items =
        result.pending.length > 0
          ? answers(result.pending, null, await screenUrl())
          : [{ role: 'user', type: 'message', content: [{ type: 'input_text', text: 'Go on.' }] }];
    }
    return {
      state: { v: 1, response_id: previous ?? '', pending: [] } satisfies OpenAIState,
      thought: thoughts.join('\n') || null,
      move: { kind: 'fail', reason: 'The model kept asking for steps that cannot be carried out on this computer.' },
      safety: null,
      usage,
    };
  }

  private post(input: ModelTurnInput, os: DesktopOs, items: Item[], previous: string | null, signal?: AbortSignal): Promise<unknown> {
    const body: Record<string, unknown> = {
      model: input.model,
      input: items,
      tools: [
        {
          type: 'computer_use_preview',
          display_width: input.display.width,
          display_height: input.display.height,
          environment: os,
        },
        ...agentToolDefinitions(input.tools).map((t) => ({
          type: 'function',
          name: t.name,
          description: t.description,
          parameters: t.parameters,
          strict: false,
        })),
      ],
      reasoning: { effort: input.effort, summary: 'concise' },
      truncation: 'auto',
    };
    if (input.system.trim() !== '') body.instructions = input.system;
    if (previous) body.previous_response_id = previous;
    return postJson({
      backend: 'openai',
      url: joinUrl(this.baseUrl, '/responses'),
      headers: { authorization: `Bearer ${this.options.apiKey}` },
      body,
      fetchImpl: this.options.fetchImpl,
      retry: this.options.retry,
      timeoutMs: this.options.timeoutMs,
      signal,
    });
  }
}
