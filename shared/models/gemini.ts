/**
 * Gemini backend: `generateContent` with the `computer_use` tool (browser environment) and the
 * agent's own tools as function declarations. The model points with coordinates normalized to
 * 0..999 whatever the screen, scaled here to the display.
 *
 * Gemini keeps no conversation, so the contents live in `state` without images (each request
 * carries only the current screenshot).
 */
import type { DesktopAction } from '../desktop/protocol';
import {
  actionFailures,
  agentToolCallToMove,
  agentToolDefinitions,
  NOT_CARRIED_OUT,
  outcomeText,
  type PropertySchema,
  type ToolSchema,
} from './agent-tools';
import {
  clampPoint,
  currentUrl,
  describeActions,
  desktopOs,
  navigateActions,
  normalizeCombo,
  openAppActions,
  primaryModifier,
  systemAppName,
  type DesktopOs,
} from './desktop-helpers';
import {
  ModelError,
  type Effort,
  type ModelBackend,
  type ModelMove,
  type ModelTurnInput,
  type ModelTurnOutput,
  type ScopeJudgeInput,
  type ScopeVerdict,
  type ModelUsage,
  type TurnOutcome,
} from './model.types';
import type { Observation } from '../desktop/protocol';
import { joinUrl, postJson, type VendorBackendOptions } from './vendor-http';
import { geminiText, readScopeAnswer, SCOPE_JUDGE_INSTRUCTIONS, scopeJudgeQuestion } from './scope-judge';

/** The API host; the backend adds `/v1beta/models/{model}:generateContent`. */
export const GEMINI_DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GEMINI_API_VERSION = 'v1beta';

/** Effort → thinking budget in tokens. */
export const GEMINI_THINKING_BUDGET: Readonly<Record<Effort, number>> = Object.freeze({
  low: 1024,
  medium: 8192,
  high: 24576,
});

/** The computer-use functions Gemini predefines; anything else is one of the agent's tools. */
export const GEMINI_COMPUTER_FUNCTIONS: readonly string[] = Object.freeze([
  'open_web_browser',
  'wait_5_seconds',
  'go_back',
  'go_forward',
  'search',
  'navigate',
  'click_at',
  'hover_at',
  'type_text_at',
  'key_combination',
  'scroll_document',
  'scroll_at',
  'drag_and_drop',
]);

/** Coordinates and magnitudes come on a 1000-step grid. */
const GRID = 1000;
const DEFAULT_SCROLL_MAGNITUDE = 800;
const SEARCH_ADDRESS = 'https://www.google.com';
const MAX_REQUESTS_PER_TURN = 3;
const MAX_CONTENTS = 41;

type Part = { [key: string]: unknown };
interface Content {
  role: 'user' | 'model';
  parts: Part[];
}

interface PendingCall {
  name: string;
  id?: string;
  handled: boolean;
  /** A predefined computer function (answered with the page address and a screenshot). */
  computer: boolean;
  first?: number;
  count?: number;
  error?: string;
  /** The model asked for confirmation on this call; acknowledge it when it ran. */
  acknowledge?: boolean;
}

interface GeminiState {
  v: 1;
  contents: Content[];
  pending: PendingCall[];
}

interface GeminiResponse {
  candidates?: Array<{ content?: { role?: string; parts?: Part[] }; finishReason?: string }>;
  promptFeedback?: { blockReason?: string };
  usageMetadata?: { promptTokenCount?: number; candidatesTokenCount?: number; thoughtsTokenCount?: number };
}

function readState(state: unknown): GeminiState {
  const s = state as Partial<GeminiState> | null;
  if (!s || s.v !== 1 || !Array.isArray(s.contents) || !Array.isArray(s.pending)) {
    throw new ModelError('The Gemini backend was given a state it did not write', {
      code: 'invalid_input',
      retryable: false,
      backend: 'gemini',
    });
  }
  return { v: 1, contents: s.contents, pending: s.pending };
}

function inlinePng(png: Buffer): Part {
  return { inlineData: { mimeType: 'image/png', data: png.toString('base64') } };
}

/** Drops screenshots from the contents kept in state. */
function withoutImages(contents: Content[]): Content[] {
  return contents.map((c) => {
    if (c.role !== 'user') return c;
    const parts = c.parts
      .map((p): Part | null => {
        if (p.inlineData) return null;
        const fr = p.functionResponse as { parts?: unknown } | undefined;
        if (fr && fr.parts) {
          const { parts: _dropped, ...rest } = fr as Record<string, unknown>;
          return { ...p, functionResponse: rest };
        }
        return p;
      })
      .filter((p): p is Part => p !== null);
    return { role: c.role, parts: parts.length > 0 ? parts : [{ text: '[screenshot omitted]' }] };
  });
}

function trimmed(contents: Content[]): Content[] {
  if (contents.length <= MAX_CONTENTS) return contents;
  const pairs = Math.ceil((contents.length - MAX_CONTENTS) / 2) * 2;
  return [contents[0], ...contents.slice(1 + pairs)];
}

/** The function responses answering the previous answer's calls, in the same order. */
function functionResponses(pending: PendingCall[], outcome: TurnOutcome | null, observation: Observation | null, image: Buffer | null): Part[] {
  const computer = pending.filter((p) => p.computer);
  const lastComputer = computer[computer.length - 1];
  const results = outcome && (outcome.kind === 'actions' || outcome.kind === 'refused') ? (outcome.results ?? []) : [];
  return pending.map((p): Part => {
    const base: Record<string, unknown> = { name: p.name };
    if (p.id) base.id = p.id;
    if (!p.computer) {
      let response: Record<string, unknown>;
      if (p.error !== undefined) response = { error: p.error };
      else if (!p.handled) response = { error: NOT_CARRIED_OUT };
      else {
        const { text, isError } = outcomeText(outcome);
        response = isError ? { error: text } : { result: text };
      }
      return { functionResponse: { ...base, response } };
    }
    const response: Record<string, unknown> = { url: currentUrl(observation) ?? '' };
    if (p.error !== undefined) response.error = p.error;
    else if (!p.handled) response.error = NOT_CARRIED_OUT;
    else {
      const mine = results.slice(p.first ?? 0, (p.first ?? 0) + (p.count ?? 0));
      if (outcome?.kind === 'refused' && mine.length < (p.count ?? 0)) response.error = outcomeText(outcome).text;
      else {
        const failures = actionFailures(mine);
        if (failures) response.error = `Failed: ${failures}.`;
      }
      if (p.acknowledge) response.safety_acknowledgement = 'true';
    }
    const functionResponse: Record<string, unknown> = { ...base, response };
    if (p === lastComputer && image) functionResponse.parts = [inlinePng(image)];
    return { functionResponse };
  });
}

type Mapped = { ok: true; actions: DesktopAction[] } | { ok: false; error: string };

/** One predefined computer-use call → desktop actions, in screen pixels. */
function mapComputerCall(name: string, args: Record<string, unknown>, input: ModelTurnInput, os: DesktopOs): Mapped {
  const { width, height } = input.display;
  const num = (key: string) => (typeof args[key] === 'number' ? (args[key] as number) : null);
  const at = (xKey: string, yKey: string) => {
    const x = num(xKey);
    const y = num(yKey);
    return x === null || y === null ? null : clampPoint((x / GRID) * width, (y / GRID) * height, width, height);
  };
  const needs = (what: string): Mapped => ({ ok: false, error: `${name} needs ${what}` });
  const mod = primaryModifier(os);
  switch (name) {
    case 'open_web_browser': {
      const browser = systemAppName('Browser', os);
      if (input.observation?.focused_app?.toLowerCase() === browser.toLowerCase()) {
        return { ok: true, actions: [{ type: 'screenshot' }] };
      }
      return openAppActions('Browser', os, input.observation);
    }
    case 'wait_5_seconds':
      return { ok: true, actions: [{ type: 'wait', ms: 5000 }] };
    case 'go_back':
      return { ok: true, actions: [{ type: 'key', keys: os === 'windows' ? 'alt+left' : 'cmd+[' }] };
    case 'go_forward':
      return { ok: true, actions: [{ type: 'key', keys: os === 'windows' ? 'alt+right' : 'cmd+]' }] };
    case 'search':
      return navigateActions(SEARCH_ADDRESS, os, input.observation, true);
    case 'navigate': {
      if (typeof args.url !== 'string' || args.url === '') return needs('a url');
      return navigateActions(args.url, os, input.observation, true);
    }
    case 'click_at': {
      const p = at('x', 'y');
      return p ? { ok: true, actions: [{ type: 'click', ...p }] } : needs('x and y');
    }
    case 'hover_at':
      // Hovering changes nothing on these computers; the model gets a fresh screenshot.
      return at('x', 'y') ? { ok: true, actions: [{ type: 'screenshot' }] } : needs('x and y');
    case 'type_text_at': {
      const p = at('x', 'y');
      if (!p) return needs('x and y');
      if (typeof args.text !== 'string') return needs('text');
      const actions: DesktopAction[] = [{ type: 'click', ...p }];
      if (args.clear_before_typing !== false) actions.push({ type: 'key', keys: `${mod}+a` }, { type: 'key', keys: 'backspace' });
      actions.push({ type: 'type', text: args.text });
      if (args.press_enter === true) actions.push({ type: 'key', keys: 'enter' });
      return { ok: true, actions };
    }
    case 'key_combination': {
      const combo = typeof args.keys === 'string' ? normalizeCombo(args.keys, os) : null;
      return combo ? { ok: true, actions: [{ type: 'key', keys: combo }] } : needs('keys');
    }
    case 'scroll_document':
    case 'scroll_at': {
      const direction = args.direction;
      const centre = { x: Math.round(width / 2), y: Math.round(height / 2) };
      const p = name === 'scroll_at' ? at('x', 'y') : centre;
      if (!p) return needs('x and y');
      const magnitude = name === 'scroll_at' ? (num('magnitude') ?? DEFAULT_SCROLL_MAGNITUDE) : DEFAULT_SCROLL_MAGNITUDE;
      const vertical = Math.round((magnitude / GRID) * height);
      const horizontal = Math.round((magnitude / GRID) * width);
      const dx = direction === 'left' ? -horizontal : direction === 'right' ? horizontal : 0;
      const dy = direction === 'up' ? -vertical : direction === 'down' ? vertical : 0;
      if (dx === 0 && dy === 0) return needs('a direction: up, down, left or right');
      return { ok: true, actions: [{ type: 'scroll', ...p, dx, dy }] };
    }
    case 'drag_and_drop': {
      const from = at('x', 'y');
      const to = at('destination_x', 'destination_y');
      return from && to ? { ok: true, actions: [{ type: 'drag', from, to }] } : needs('x, y, destination_x and destination_y');
    }
    default:
      return { ok: false, error: `${name} is not available on this computer.` };
  }
}

/** Gemini's schema dialect: upper-case types, no empty `required`. */
function geminiSchema(schema: ToolSchema): Record<string, unknown> {
  const property = (p: PropertySchema): Record<string, unknown> => {
    const out: Record<string, unknown> = { type: p.type.toUpperCase(), description: p.description };
    if (p.type === 'string' && p.enum) out.enum = p.enum;
    if (p.type === 'array') out.items = { type: 'STRING' };
    return out;
  };
  const out: Record<string, unknown> = {
    type: 'OBJECT',
    properties: Object.fromEntries(Object.entries(schema.properties).map(([k, v]) => [k, property(v)])),
  };
  if (schema.required.length > 0) out.required = schema.required;
  return out;
}

interface Interpretation {
  move: ModelMove | null;
  pending: PendingCall[];
  thought: string | null;
  safety: string | null;
}

function interpret(response: GeminiResponse, input: ModelTurnInput, os: DesktopOs): Interpretation {
  const candidate = response.candidates?.[0];
  const parts = candidate?.content?.parts ?? [];
  const said = parts
    .filter((p) => typeof p.text === 'string' && p.thought !== true && (p.text as string).trim() !== '')
    .map((p) => (p.text as string).trim());
  const thoughts = parts
    .filter((p) => typeof p.text === 'string' && p.thought === true && (p.text as string).trim() !== '')
    .map((p) => (p.text as string).trim());
  const thought = said.length > 0 ? said.join('\n') : thoughts.length > 0 ? thoughts.join('\n') : null;
  const calls = parts
    .map((p) => p.functionCall as { name?: unknown; args?: unknown; id?: unknown } | undefined)
    .filter((c): c is { name: string; args?: unknown; id?: unknown } => !!c && typeof c.name === 'string');

  if (calls.length === 0) {
    const reason = candidate?.finishReason ?? '';
    if (said.length === 0 && ['SAFETY', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII', 'RECITATION'].includes(reason)) {
      return { move: { kind: 'fail', reason: `The model declined to go on (${reason}).` }, pending: [], thought, safety: null };
    }
    if (said.length === 0 && (reason === 'MALFORMED_FUNCTION_CALL' || reason === 'MAX_TOKENS' || parts.length === 0)) {
      return { move: null, pending: [], thought, safety: null };
    }
    return { move: { kind: 'done', summary: said.join('\n') || 'Done.' }, pending: [], thought, safety: null };
  }

  type Plan = { name: string; id?: string; computer: boolean; actions?: DesktopAction[]; move?: ModelMove; error?: string; safety?: string };
  const plans: Plan[] = calls.map((call): Plan => {
    const args = (call.args && typeof call.args === 'object' ? call.args : {}) as Record<string, unknown>;
    const id = typeof call.id === 'string' ? call.id : undefined;
    if (GEMINI_COMPUTER_FUNCTIONS.includes(call.name)) {
      const mapped = mapComputerCall(call.name, args, input, os);
      const decision = args.safety_decision as { decision?: unknown; explanation?: unknown } | undefined;
      const safety =
        decision && decision.decision === 'require_confirmation'
          ? typeof decision.explanation === 'string' && decision.explanation !== ''
            ? decision.explanation
            : 'The model asks for confirmation before this step.'
          : undefined;
      return mapped.ok
        ? { name: call.name, id, computer: true, actions: mapped.actions, safety }
        : { name: call.name, id, computer: true, error: mapped.error };
    }
    const result = agentToolCallToMove(call.name, args, input.tools);
    if (result === null) return { name: call.name, id, computer: false, error: `There is no function named "${call.name}".` };
    return result.ok ? { name: call.name, id, computer: false, move: result.move } : { name: call.name, id, computer: false, error: result.error };
  });

  const base = (p: Plan): PendingCall => ({
    name: p.name,
    ...(p.id ? { id: p.id } : {}),
    handled: false,
    computer: p.computer,
    ...(p.error !== undefined ? { error: p.error } : {}),
  });
  const leader = plans.find((p) => p.error === undefined);
  if (!leader) return { move: null, pending: plans.map(base), thought, safety: null };

  if (leader.actions) {
    const actions: DesktopAction[] = [];
    const safety: string[] = [];
    const pending = plans.map((p): PendingCall => {
      if (!p.actions) return base(p);
      const entry: PendingCall = { ...base(p), handled: true, first: actions.length, count: p.actions.length };
      if (p.safety) {
        safety.push(p.safety);
        entry.acknowledge = true;
      }
      actions.push(...p.actions);
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

function readResponse(body: unknown): GeminiResponse {
  const r = body as GeminiResponse | null;
  if (!r || typeof r !== 'object') {
    throw new ModelError('Gemini API answered with something that is not a response', {
      code: 'invalid_response',
      retryable: false,
      backend: 'gemini',
    });
  }
  return r;
}

/** Gemini API backend (`x-goog-api-key`, base URL without the API version). */
export class GeminiBackend implements ModelBackend {
  readonly id = 'gemini' as const;
  private readonly baseUrl: string;

  constructor(private readonly options: VendorBackendOptions) {
    this.baseUrl = options.baseUrl || GEMINI_DEFAULT_BASE_URL;
  }

  /** The scope check: one generateContent request with the question as text (the computer-use tool declared, as this model requires). */
  async judgeScope(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict> {
    const response = await postJson({
      backend: 'gemini',
      url: joinUrl(this.baseUrl, `/${GEMINI_API_VERSION}/models/${encodeURIComponent(input.model)}:generateContent`),
      headers: { 'x-goog-api-key': this.options.apiKey },
      body: {
        contents: [{ role: 'user', parts: [{ text: scopeJudgeQuestion(input) }] }],
        systemInstruction: { parts: [{ text: SCOPE_JUDGE_INSTRUCTIONS }] },
        tools: [{ computerUse: { environment: 'ENVIRONMENT_BROWSER' } }],
      },
      fetchImpl: this.options.fetchImpl,
      retry: this.options.retry,
      timeoutMs: this.options.timeoutMs,
      signal,
    });
    return readScopeAnswer(geminiText(response), input);
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnOutput> {
    const os = desktopOs(input.display.os);
    const image = input.screenshot ?? null;
    let contents: Content[];
    if (input.state === null || input.state === undefined) {
      contents = [{ role: 'user', parts: [{ text: input.prompt }, ...(image ? [inlinePng(image)] : [])] }];
    } else {
      const state = readState(input.state);
      const answer: Part[] =
        state.pending.length > 0
          ? functionResponses(state.pending, input.lastOutcome, input.observation, image)
          : [{ text: outcomeText(input.lastOutcome).text }, ...(image ? [inlinePng(image)] : [])];
      contents = trimmed([...state.contents, { role: 'user', parts: answer }]);
    }

    const usage: ModelUsage = { input_tokens: 0, output_tokens: 0 };
    const thoughts: string[] = [];
    for (let request = 1; request <= MAX_REQUESTS_PER_TURN; request++) {
      const response = readResponse(await this.post(input, contents, signal));
      usage.input_tokens += response.usageMetadata?.promptTokenCount ?? 0;
      usage.output_tokens += (response.usageMetadata?.candidatesTokenCount ?? 0) + (response.usageMetadata?.thoughtsTokenCount ?? 0);
      if (!response.candidates?.length && response.promptFeedback?.blockReason) {
        return {
          state: { v: 1, contents: withoutImages(contents), pending: [] } satisfies GeminiState,
          thought: null,
          move: { kind: 'fail', reason: `The model declined the task (${response.promptFeedback.blockReason}).` },
          safety: null,
          usage,
        };
      }
      const modelParts = response.candidates?.[0]?.content?.parts ?? [];
      if (modelParts.length > 0) contents.push({ role: 'model', parts: modelParts });
      const result = interpret(response, input, os);
      if (result.thought) thoughts.push(result.thought);
      if (result.move) {
        const state: GeminiState = { v: 1, contents: withoutImages(contents), pending: result.pending };
        return { state, thought: thoughts.join('\n') || null, move: result.move, safety: result.safety, usage };
      }
      if (result.pending.length > 0) {
        contents.push({ role: 'user', parts: functionResponses(result.pending, null, input.observation, null) });
      } else if (modelParts.length > 0) {
        contents.push({ role: 'user', parts: [{ text: 'Go on.' }] });
      }
      // Nothing came back at all: the same request is simply asked again.
    }
    return {
      state: { v: 1, contents: withoutImages(contents), pending: [] } satisfies GeminiState,
      thought: thoughts.join('\n') || null,
      move: { kind: 'fail', reason: 'The model kept asking for steps that cannot be carried out on this computer.' },
      safety: null,
      usage,
    };
  }

  private post(input: ModelTurnInput, contents: Content[], signal?: AbortSignal): Promise<unknown> {
    const declarations = agentToolDefinitions(input.tools, { argumentsAsJson: true }).map((t) => ({
      name: t.name,
      description: t.description,
      parameters: geminiSchema(t.parameters),
    }));
    const body: Record<string, unknown> = {
      contents,
      tools: [{ computerUse: { environment: 'ENVIRONMENT_BROWSER' } }, { functionDeclarations: declarations }],
      generationConfig: {
        thinkingConfig: { thinkingBudget: GEMINI_THINKING_BUDGET[input.effort] ?? GEMINI_THINKING_BUDGET.low, includeThoughts: true },
      },
    };
    if (input.system.trim() !== '') body.systemInstruction = { parts: [{ text: input.system }] };
    return postJson({
      backend: 'gemini',
      url: joinUrl(this.baseUrl, `/${GEMINI_API_VERSION}/models/${encodeURIComponent(input.model)}:generateContent`),
      headers: { 'x-goog-api-key': this.options.apiKey },
      body,
      fetchImpl: this.options.fetchImpl,
      retry: this.options.retry,
      timeoutMs: this.options.timeoutMs,
      signal,
    });
  }
}
