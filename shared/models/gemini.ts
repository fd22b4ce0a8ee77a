/**
 * Gemini backend: `generateContent` through Google's SDK (`@google/genai`) with the `computerUse`
 * tool (browser environment; a preview feature of the Gemini 3 Flash models) and the agent's own
 * tools as function declarations. The model points with coordinates normalized to
 * 0..999 whatever the screen, scaled here to the display.
 *
 * Gemini keeps no conversation, so the contents live in `state` without images (each request
 * carries only the current screenshot).
 */
import type { DesktopAction } from '../desktop/protocol';
import { agentToolDefinitions, outcomeText, type PropertySchema, type ToolSchema } from './agent-tools';
import {
  clampPoint,
  currentUrl,
  desktopOs,
  historyKeys,
  mayAcknowledgeSafety,
  navigateActions,
  normalizeCombo,
  openAppActions,
  primaryModifier,
  screenCentre,
  scrollDelta,
  systemAppName,
  type DesktopOs,
  type PlannedActions,
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
  type TurnOutcome,
} from './model.types';
import type { Observation } from '../desktop/protocol';
import { DEFAULT_TIMEOUT_MS, withRetries, type VendorBackendOptions } from './vendor-http';
import { geminiText, readScopeAnswer, SCOPE_JUDGE_INSTRUCTIONS, SCOPE_JUDGE_RETRY, scopeJudgeQuestion } from './scope-judge';
import {
  agentToolRequest,
  answerCall,
  computerProblem,
  computerRequest,
  foreignState,
  MAX_REQUESTS_PER_TURN,
  reduceCalls,
  thoughtOf,
  trimmedTranscript,
  TurnTally,
  type CallRecord,
  type CallRequest,
} from './turn-reduction';
import {
  Environment,
  FunctionCallingConfigMode,
  GoogleGenAI,
  ThinkingLevel,
  type Content as GeminiContent,
  type GenerateContentConfig,
  type GenerateContentParameters,
  type GenerateContentResponse,
  type Part as GeminiPart,
  type Tool as GeminiTool,
} from '@google/genai';

/** The API host; the backend adds `/v1beta/models/{model}:generateContent`. */
export const GEMINI_DEFAULT_BASE_URL = 'https://generativelanguage.googleapis.com';
export const GEMINI_API_VERSION = 'v1beta';

/**
 * Effort → `thinkingLevel` on Gemini 3 models, which take it (`thinkingBudget` is the older
 * setting and is not sent). The Gemini 2.5 computer-use preview documents no thinking settings:
 * nothing is sent to it, and its three efforts run alike.
 */
export const GEMINI_THINKING_LEVEL: Readonly<Record<Effort, ThinkingLevel>> = Object.freeze({
  low: ThinkingLevel.LOW,
  medium: ThinkingLevel.MEDIUM,
  high: ThinkingLevel.HIGH,
});

/** Whether a model serves computer use only, and refuses requests without the `computerUse` tool. */
export function requiresComputerTool(model: string): boolean {
  return model.includes('computer-use');
}

/** Whether a model takes `thinkingLevel` (the Gemini 3 family). */
export function takesThinkingLevel(model: string): boolean {
  return /^gemini-3(\.\d+)?-/.test(model);
}

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
const MAX_CONTENTS = 41;

type Part = GeminiPart;
interface Content extends GeminiContent {
  role: 'user' | 'model';
  parts: Part[];
}

interface PendingCall extends CallRecord {
  name: string;
  id?: string;
  /** A predefined computer function (answered with the page address and a screenshot). */
  computer: boolean;
  /** The model asked for confirmation on this call; acknowledge it when it ran. */
  acknowledge?: boolean;
}

interface GeminiState {
  v: 1;
  contents: Content[];
  pending: PendingCall[];
}

type GeminiResponse = GenerateContentResponse;

function readState(state: unknown): GeminiState {
  const s = state as Partial<GeminiState> | null;
  if (!s || s.v !== 1 || !Array.isArray(s.contents) || !Array.isArray(s.pending)) {
    throw foreignState('gemini', 'Gemini');
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
        if (p.functionResponse?.parts) {
          const { parts: _dropped, ...rest } = p.functionResponse;
          return { ...p, functionResponse: rest };
        }
        return p;
      })
      .filter((p): p is Part => p !== null);
    return { role: c.role, parts: parts.length > 0 ? parts : [{ text: '[screenshot omitted]' }] };
  });
}

/**
 * The function responses answering the previous answer's calls, in the same order. A call the
 * model asked to confirm carries `safety_acknowledgement` only when a person approved it and it
 * ran (`mayAcknowledgeSafety`).
 */
function functionResponses(
  pending: PendingCall[],
  outcome: TurnOutcome | null,
  observation: Observation | null,
  image: Buffer | null,
  safetyApproved: boolean | undefined,
): Part[] {
  const computer = pending.filter((p) => p.computer);
  const lastComputer = computer[computer.length - 1];
  return pending.map((p): Part => {
    const base: { name: string; id?: string } = { name: p.name };
    if (p.id) base.id = p.id;
    const answer = answerCall(p, outcome);
    const response: Record<string, unknown> = p.computer ? { url: currentUrl(observation) ?? '' } : {};
    if (answer.kind === 'text') response[answer.isError ? 'error' : 'result'] = answer.text;
    else {
      const problem = computerProblem(answer.outcome);
      if (problem !== null) response.error = problem;
      if (p.acknowledge && mayAcknowledgeSafety(safetyApproved, answer.outcome)) response.safety_acknowledgement = 'true';
    }
    if (!p.computer) return { functionResponse: { ...base, response } };
    const functionResponse: NonNullable<Part['functionResponse']> = { ...base, response };
    if (p === lastComputer && image) functionResponse.parts = [{ inlineData: { mimeType: 'image/png', data: image.toString('base64') } }];
    return { functionResponse };
  });
}

/** One predefined computer-use call → desktop actions, in screen pixels. */
function mapComputerCall(name: string, args: Record<string, unknown>, input: ModelTurnInput, os: DesktopOs): PlannedActions {
  const { width, height } = input.display;
  const num = (key: string) => (typeof args[key] === 'number' ? (args[key] as number) : null);
  const at = (xKey: string, yKey: string) => {
    const x = num(xKey);
    const y = num(yKey);
    return x === null || y === null ? null : clampPoint((x / GRID) * width, (y / GRID) * height, width, height);
  };
  const needs = (what: string): PlannedActions => ({ ok: false, error: `${name} needs ${what}` });
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
      return { ok: true, actions: [{ type: 'key', keys: historyKeys('back', os) }] };
    case 'go_forward':
      return { ok: true, actions: [{ type: 'key', keys: historyKeys('forward', os) }] };
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
      const p = name === 'scroll_at' ? at('x', 'y') : screenCentre(width, height);
      if (!p) return needs('x and y');
      const magnitude = name === 'scroll_at' ? (num('magnitude') ?? DEFAULT_SCROLL_MAGNITUDE) : DEFAULT_SCROLL_MAGNITUDE;
      const { dx, dy } = scrollDelta(args.direction, Math.round((magnitude / GRID) * width), Math.round((magnitude / GRID) * height));
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
  const thought = thoughtOf(said, thoughts);
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

  const reduced = reduceCalls(
    calls.map((call): { call: ReplyCall; request: CallRequest } => {
      const args = (call.args && typeof call.args === 'object' ? call.args : {}) as Record<string, unknown>;
      const id = typeof call.id === 'string' ? call.id : undefined;
      if (!GEMINI_COMPUTER_FUNCTIONS.includes(call.name)) {
        return { call: { name: call.name, id, computer: false }, request: agentToolRequest(call.name, args, input.tools, `There is no function named "${call.name}".`) };
      }
      const safety = confirmationAsked(args);
      return { call: { name: call.name, id, computer: true, safety }, request: computerRequest(mapComputerCall(call.name, args, input, os), safety ? [safety] : []) };
    }),
  );
  const pending = reduced.calls.map(({ call, record }): PendingCall => {
    const { handled, ...rest } = record;
    const entry: PendingCall = { name: call.name, ...(call.id ? { id: call.id } : {}), handled, computer: call.computer, ...rest };
    if (handled && call.computer && call.safety) entry.acknowledge = true;
    return entry;
  });
  return { move: reduced.move, pending, thought, safety: reduced.safety };
}

/** One function call of a reply; `safety` is the confirmation the model asked for, on a computer call. */
interface ReplyCall {
  name: string;
  id?: string;
  computer: boolean;
  safety?: string;
}

/** The model's request for confirmation on a computer call (`safety_decision`), as a person should read it; undefined when none. */
function confirmationAsked(args: Record<string, unknown>): string | undefined {
  const decision = args.safety_decision as { decision?: unknown; explanation?: unknown } | undefined;
  if (!decision || decision.decision !== 'require_confirmation') return undefined;
  return typeof decision.explanation === 'string' && decision.explanation !== '' ? decision.explanation : 'The model asks for confirmation before this step.';
}

function readResponse(r: GeminiResponse): GeminiResponse {
  if (!r || typeof r !== 'object') {
    throw new ModelError('Gemini API answered with something that is not a response', {
      code: 'invalid_response',
      retryable: false,
      backend: 'gemini',
    });
  }
  return r;
}

/**
 * Gemini API backend (`x-goog-api-key`, base URL without the API version), on Google's SDK. The
 * SDK's own retries honour neither `Retry-After` nor the `RetryInfo` delay of Google's error
 * body, so they are off and `withRetries` retries instead.
 */
export class GeminiBackend implements ModelBackend {
  readonly id = 'gemini' as const;
  readonly readsScreens = true;
  private readonly client: GoogleGenAI;

  constructor(private readonly options: VendorBackendOptions) {
    this.client = new GoogleGenAI({
      apiKey: options.apiKey,
      httpOptions: {
        baseUrl: options.baseUrl || GEMINI_DEFAULT_BASE_URL,
        apiVersion: GEMINI_API_VERSION,
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        ...(options.fetchImpl ? { fetch: options.fetchImpl as typeof fetch } : {}),
      },
    });
  }

  /**
   * The scope check: one generateContent request with the question as text and no tools, so the
   * answer cannot be an action. A dedicated computer-use model (the 2.5 preview) refuses requests
   * without its `computerUse` tool: for it the tool is declared with function calling off
   * (`mode: NONE`). An answer without text is asked again once.
   */
  async judgeScope(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict> {
    let text: string | null = null;
    for (const question of [scopeJudgeQuestion(input), `${scopeJudgeQuestion(input)}\n\n${SCOPE_JUDGE_RETRY}`]) {
      const config: GenerateContentConfig = { systemInstruction: SCOPE_JUDGE_INSTRUCTIONS };
      if (requiresComputerTool(input.model)) {
        config.tools = [{ computerUse: { environment: Environment.ENVIRONMENT_BROWSER } }];
        config.toolConfig = { functionCallingConfig: { mode: FunctionCallingConfigMode.NONE } };
      }
      const request = { model: input.model, contents: [{ role: 'user', parts: [{ text: question }] }], config } satisfies GenerateContentParameters;
      text = geminiText(await this.call(request, signal));
      if (text !== null) break;
    }
    return readScopeAnswer(text, input);
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
          ? functionResponses(state.pending, input.lastOutcome, input.observation, image, input.safetyApproved)
          : [{ text: outcomeText(input.lastOutcome).text }, ...(image ? [inlinePng(image)] : [])];
      contents = trimmedTranscript([...state.contents, { role: 'user', parts: answer }], MAX_CONTENTS);
    }

    const tally = new TurnTally();
    for (let request = 1; request <= MAX_REQUESTS_PER_TURN; request++) {
      const response = readResponse(await this.call(geminiRequest(input, contents), signal));
      const counted = response.usageMetadata;
      tally.count(counted?.promptTokenCount ?? 0, (counted?.candidatesTokenCount ?? 0) + (counted?.thoughtsTokenCount ?? 0));
      if (!response.candidates?.length && response.promptFeedback?.blockReason) {
        return {
          state: { v: 1, contents: withoutImages(contents), pending: [] } satisfies GeminiState,
          thought: null,
          move: { kind: 'fail', reason: `The model declined the task (${response.promptFeedback.blockReason}).` },
          safety: null,
          usage: tally.usage,
        };
      }
      const modelParts = response.candidates?.[0]?.content?.parts ?? [];
      if (modelParts.length > 0) contents.push({ role: 'model', parts: modelParts });
      const result = interpret(response, input, os);
      tally.heard(result.thought);
      if (result.move) {
        const state: GeminiState = { v: 1, contents: withoutImages(contents), pending: result.pending };
        return tally.output(state, result.move, result.safety);
      }
      if (result.pending.length > 0) {
        contents.push({ role: 'user', parts: functionResponses(result.pending, null, input.observation, null, false) });
      } else if (modelParts.length > 0) {
        contents.push({ role: 'user', parts: [{ text: 'Go on.' }] });
      }
      // Nothing came back at all: the same request is simply asked again.
    }
    return tally.gaveUp({ v: 1, contents: withoutImages(contents), pending: [] } satisfies GeminiState);
  }

  private call(request: GenerateContentParameters, signal?: AbortSignal): Promise<GenerateContentResponse> {
    const withSignal: GenerateContentParameters = { ...request, config: { ...request.config, ...(signal ? { abortSignal: signal } : {}) } };
    return withRetries('gemini', this.options.retry, signal, request.model, () => this.client.models.generateContent(withSignal));
  }
}

/** The request for one turn, typed by Google's SDK (which writes the REST body from it). */
export function geminiRequest(input: ModelTurnInput, contents: Content[]): GenerateContentParameters {
  const declarations = agentToolDefinitions(input.tools, { argumentsAsJson: true }).map((t) => ({
    name: t.name,
    description: t.description,
    parameters: geminiSchema(t.parameters),
  }));
  const tools: GeminiTool[] = [{ computerUse: { environment: Environment.ENVIRONMENT_BROWSER } }, { functionDeclarations: declarations }];
  const config: GenerateContentConfig = { tools };
  if (input.system.trim() !== '') config.systemInstruction = input.system;
  if (takesThinkingLevel(input.model)) config.thinkingConfig = { thinkingLevel: GEMINI_THINKING_LEVEL[input.effort] ?? ThinkingLevel.LOW };
  return { model: input.model, contents, config };
}
