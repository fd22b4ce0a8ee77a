/**
 * Anthropic backend: the Messages API through Anthropic's SDK (`client.beta.messages.create`)
 * with the computer-use tool, plus the agent's own tools as custom tools. The tool version and
 * its beta header depend on the model (`anthropicProfile`): `computer_20251124` with
 * `computer-use-2025-11-24` for Claude Opus 4.5 and later 4.x models, `computer_20250124` with
 * `computer-use-2025-01-24` for Haiku 4.5 and older ones.
 *
 * The transcript lives in `state` without images (each request carries only the current
 * screenshot), so state stays small. Screens larger than 1280×800 are shown to the model scaled
 * down, as Anthropic recommends, and its coordinates are scaled back up.
 */
import Anthropic from '@anthropic-ai/sdk';
import type {
  BetaContentBlock,
  BetaContentBlockParam,
  BetaImageBlockParam,
  BetaMessage,
  BetaMessageParam,
  BetaTextBlockParam,
  BetaToolResultBlockParam,
  BetaToolUnion,
  MessageCreateParamsNonStreaming,
} from '@anthropic-ai/sdk/resources/beta/messages/messages';
import type { DesktopAction } from '../desktop/protocol';
import { agentToolDefinitions, outcomeText } from './agent-tools';
import { clampPoint, desktopOs, normalizeCombo, screenCentre, scrollDelta, withHeldKeys, type DesktopOs, type PlannedActions } from './desktop-helpers';
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
import { fitWithin, resizePng } from './screenshots';
import { sdkClientOptions, toModelError, type VendorBackendOptions } from './vendor-http';
import { anthropicText, readScopeAnswer, SCOPE_JUDGE_INSTRUCTIONS, scopeJudgeQuestion } from './scope-judge';
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
} from './turn-reduction';

export const ANTHROPIC_DEFAULT_BASE_URL = 'https://api.anthropic.com';

/** How one Claude model is called: its computer tool version, beta header and thinking style. */
export interface AnthropicProfile {
  tool: 'computer_20251124' | 'computer_20250124';
  beta: 'computer-use-2025-11-24' | 'computer-use-2025-01-24';
  /**
   * `adaptive`: `thinking: {type: 'adaptive'}` and `output_config.effort` (Claude 4.6 and later,
   * where `budget_tokens` is deprecated or refused); `budget`: an extended-thinking budget.
   */
  thinking: 'adaptive' | 'budget';
}

/** Models before Opus 4.5 keep the January 2025 tool and thinking budgets. */
const LEGACY_MODEL = /^claude-(haiku-4-5|sonnet-4-5|sonnet-4|opus-4|opus-4-1|3-7-sonnet)(-\d{8})?$/;

export function anthropicProfile(model: string): AnthropicProfile {
  if (LEGACY_MODEL.test(model)) return { tool: 'computer_20250124', beta: 'computer-use-2025-01-24', thinking: 'budget' };
  if (/^claude-opus-4-5(-\d{8})?$/.test(model)) return { tool: 'computer_20251124', beta: 'computer-use-2025-11-24', thinking: 'budget' };
  return { tool: 'computer_20251124', beta: 'computer-use-2025-11-24', thinking: 'adaptive' };
}

/** Largest screen size shown to the model (WXGA); larger screens are scaled down. */
const MODEL_MAX_WIDTH = 1280;
const MODEL_MAX_HEIGHT = 800;

/** Effort → `max_tokens` and, for `budget` models, the extended-thinking budget (none at low). */
export const ANTHROPIC_EFFORT: Readonly<Record<Effort, { maxTokens: number; thinkingBudget: number | null }>> = Object.freeze({
  low: { maxTokens: 4096, thinkingBudget: null },
  medium: { maxTokens: 8192, thinkingBudget: 4096 },
  high: { maxTokens: 20000, thinkingBudget: 12000 },
});

/** Pixels per scroll "click" of the computer tool. */
const SCROLL_STEP_PX = 100;
/** Transcript length kept in state: the first message and the latest exchanges. */
const MAX_MESSAGES = 41;
const IMAGE_PLACEHOLDER = '[screenshot omitted]';

type Message = BetaMessageParam & { content: BetaContentBlockParam[] };

/** A tool use of the last answer that the next request must answer. */
interface PendingUse extends CallRecord {
  id: string;
  name: string;
}

interface AnthropicState {
  v: 1;
  messages: Message[];
  pending: PendingUse[];
  /** Where the model last put the mouse (screen pixels), for clicks without a coordinate. */
  cursor: { x: number; y: number } | null;
}

interface Geometry {
  os: DesktopOs;
  screenWidth: number;
  screenHeight: number;
  modelWidth: number;
  modelHeight: number;
  /** Screen pixels → model pixels. */
  scale: number;
}

function readState(state: unknown): AnthropicState {
  const s = state as Partial<AnthropicState> | null;
  if (!s || s.v !== 1 || !Array.isArray(s.messages) || !Array.isArray(s.pending)) {
    throw foreignState('anthropic', 'Anthropic');
  }
  return { v: 1, messages: s.messages, pending: s.pending, cursor: s.cursor ?? null };
}

function imageBlock(png: Buffer): BetaImageBlockParam {
  return { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') } };
}

/** Replaces every image in the transcript with a short placeholder. */
function withoutImages(messages: Message[]): Message[] {
  const strip = <T extends BetaContentBlockParam>(block: T): T | BetaTextBlockParam => {
    if (block.type === 'image') return { type: 'text', text: IMAGE_PLACEHOLDER };
    if (block.type === 'tool_result' && Array.isArray(block.content)) {
      return { ...block, content: block.content.map((c) => (c.type === 'image' ? { type: 'text' as const, text: IMAGE_PLACEHOLDER } : c)) };
    }
    return block;
  };
  return messages.map((m) => (m.role === 'user' ? { role: m.role, content: m.content.map(strip) } : m));
}

function text(value: string): BetaTextBlockParam {
  return { type: 'text', text: value };
}

/**
 * The blocks answering the previous answer's tool uses: one `tool_result` per use, then the
 * current screenshot. The screenshot goes inside the last computer use's result when that
 * succeeded; after the results otherwise, because the API refuses anything but text in a
 * result with `is_error: true`.
 */
function toolResults(pending: PendingUse[], outcome: TurnOutcome | null, image: Buffer | null): BetaContentBlockParam[] {
  const computer = pending.filter((p) => p.handled && p.count !== undefined);
  const lastComputer = computer[computer.length - 1];
  let trailing: BetaContentBlockParam[] = [];
  const results = pending.map((p): BetaToolResultBlockParam => {
    const answer = answerCall(p, outcome);
    if (answer.kind === 'text') return { type: 'tool_result', tool_use_id: p.id, is_error: answer.isError, content: [text(answer.text)] };
    const problem = computerProblem(answer.outcome);
    const screen = image ? imageBlock(image) : text('No screenshot is available.');
    if (problem !== null) {
      if (p === lastComputer) trailing = [text('The screen now:'), screen];
      return { type: 'tool_result', tool_use_id: p.id, is_error: true, content: [text(problem)] };
    }
    return { type: 'tool_result', tool_use_id: p.id, is_error: false, content: p === lastComputer ? [screen] : [text('Done.')] };
  });
  return [...results, ...trailing];
}

/** One `computer` tool use → desktop actions, in screen pixels. */
function mapComputerAction(
  input: Record<string, unknown>,
  geo: Geometry,
  cursor: { x: number; y: number } | null,
): { mapped: PlannedActions; cursor: { x: number; y: number } | null } {
  const { mapped, cursor: next } = mapComputerActionPlain(input, geo, cursor);
  // Keys held during a click or scroll come in `text` (e.g. "shift", "cmd").
  const held = typeof input.text === 'string' && HOLDS_KEYS.has(String(input.action)) ? [input.text] : [];
  if (!mapped.ok || held.length === 0) return { mapped, cursor: next };
  const planned = withHeldKeys(mapped.actions, held, geo.os);
  return { mapped: planned, cursor: planned.ok ? next : cursor };
}

/** Actions whose `text` names keys held while they run. */
const HOLDS_KEYS: ReadonlySet<string> = new Set(['left_click', 'right_click', 'double_click', 'middle_click', 'triple_click', 'scroll', 'left_click_drag']);

function mapComputerActionPlain(
  input: Record<string, unknown>,
  geo: Geometry,
  cursor: { x: number; y: number } | null,
): { mapped: PlannedActions; cursor: { x: number; y: number } | null } {
  const toScreen = (value: unknown): { x: number; y: number } | null => {
    if (!Array.isArray(value) || value.length !== 2 || typeof value[0] !== 'number' || typeof value[1] !== 'number') return null;
    return clampPoint(value[0] / geo.scale, value[1] / geo.scale, geo.screenWidth, geo.screenHeight);
  };
  const action = typeof input.action === 'string' ? input.action : '';
  const point = toScreen(input.coordinate);
  const at = point ?? cursor;
  const fail = (error: string) => ({ mapped: { ok: false as const, error }, cursor });
  const ok = (actions: DesktopAction[], next = cursor) => ({ mapped: { ok: true as const, actions }, cursor: next });
  switch (action) {
    case 'screenshot':
      return ok([{ type: 'screenshot' }]);
    case 'left_click':
    case 'right_click':
    case 'double_click': {
      if (!at) return fail(`${action} needs a coordinate`);
      const click: DesktopAction = { type: 'click', x: at.x, y: at.y };
      if (action === 'right_click') click.button = 'right';
      if (action === 'double_click') click.double = true;
      return ok([click], at);
    }
    case 'mouse_move':
      // Nothing on these computers reacts to hovering; the model still gets a fresh screenshot.
      if (!point) return fail('mouse_move needs a coordinate');
      return ok([{ type: 'screenshot' }], point);
    case 'left_click_drag': {
      const from = toScreen(input.start_coordinate) ?? cursor;
      if (!from || !point) return fail('left_click_drag needs start_coordinate and coordinate');
      return ok([{ type: 'drag', from, to: point }], point);
    }
    case 'type': {
      if (typeof input.text !== 'string') return fail('type needs text');
      return ok([{ type: 'type', text: input.text }]);
    }
    case 'key': {
      if (typeof input.text !== 'string') return fail('key needs text');
      // xdotool syntax: combos joined by "+", several separated by spaces.
      const combos = input.text.split(/\s+/).map((c) => normalizeCombo(c, geo.os)).filter((c): c is string => c !== null);
      if (combos.length === 0) return fail('key needs a key name');
      return ok(combos.map((keys) => ({ type: 'key', keys })));
    }
    case 'scroll': {
      const where = at ?? screenCentre(geo.screenWidth, geo.screenHeight);
      const amount = typeof input.scroll_amount === 'number' && input.scroll_amount > 0 ? input.scroll_amount : 3;
      const px = Math.round(amount * SCROLL_STEP_PX);
      const { dx, dy } = scrollDelta(input.scroll_direction, px, px);
      if (dx === 0 && dy === 0) return fail('scroll needs scroll_direction up, down, left or right');
      return ok([{ type: 'scroll', x: where.x, y: where.y, dx, dy }], where);
    }
    case 'wait': {
      const seconds = typeof input.duration === 'number' && input.duration > 0 ? Math.min(input.duration, 60) : 1;
      return ok([{ type: 'wait', ms: Math.round(seconds * 1000) }]);
    }
    default:
      return fail(`The action "${action}" is not available on this computer; use left_click, double_click, right_click, left_click_drag, type, key, scroll, wait or screenshot.`);
  }
}

interface Interpretation {
  /** The move to return, or null when the model must be told what went wrong and asked again. */
  move: ModelMove | null;
  pending: PendingUse[];
  cursor: { x: number; y: number } | null;
  thought: string | null;
  /** When `move` is null: the user message answering the model. */
  feedback?: BetaContentBlockParam[];
}

function interpret(response: BetaMessage, input: ModelTurnInput, geo: Geometry, cursor: { x: number; y: number } | null): Interpretation {
  const texts = response.content
    .filter((b): b is Extract<BetaContentBlock, { type: 'text' }> => b.type === 'text')
    .map((b) => b.text.trim())
    .filter((t) => t !== '');
  const thought = thoughtOf(texts);
  const uses = response.content
    .filter((b): b is Extract<BetaContentBlock, { type: 'tool_use' }> => b.type === 'tool_use')
    .map((b) => ({ id: b.id, name: b.name, input: (b.input && typeof b.input === 'object' ? b.input : {}) as Record<string, unknown> }));

  if (uses.length === 0) {
    if (response.stop_reason === 'refusal') {
      return { move: { kind: 'fail', reason: 'The model declined to go on with this task.' }, pending: [], cursor, thought };
    }
    if (response.stop_reason === 'max_tokens' || response.stop_reason === 'pause_turn') {
      return { move: null, pending: [], cursor, thought, feedback: [text('Go on.')] };
    }
    return { move: { kind: 'done', summary: thought ?? 'Done.' }, pending: [], cursor, thought };
  }

  let position = cursor;
  const reduced = reduceCalls(
    uses.map((use) => {
      if (use.name !== 'computer') return { call: use, request: agentToolRequest(use.name, use.input, input.tools, `There is no tool named "${use.name}".`) };
      const { mapped, cursor: next } = mapComputerAction(use.input ?? {}, geo, position);
      position = next;
      return { call: use, request: computerRequest(mapped) };
    }),
  );
  const pending = reduced.calls.map(({ call, record }): PendingUse => ({ id: call.id, name: call.name, ...record }));
  if (!reduced.move) return { move: null, pending: [], cursor: position, thought, feedback: toolResults(pending, null, null) };
  return { move: reduced.move, pending, cursor: position, thought };
}

function readResponse(body: BetaMessage): BetaMessage {
  if (!body || !Array.isArray(body.content)) {
    throw new ModelError('Anthropic API answered without a content list', {
      code: 'invalid_response',
      retryable: false,
      backend: 'anthropic',
    });
  }
  return body;
}

/** Anthropic Messages API backend (`x-api-key`, base URL without `/v1`), on Anthropic's SDK. */
export class AnthropicBackend implements ModelBackend {
  readonly id = 'anthropic' as const;
  readonly readsScreens = true;
  private readonly client: Anthropic;

  constructor(options: VendorBackendOptions) {
    this.client = new Anthropic(sdkClientOptions(options, ANTHROPIC_DEFAULT_BASE_URL));
  }

  /** The scope check: one plain Messages request (no tools) whose answer is a JSON verdict. */
  async judgeScope(input: ScopeJudgeInput, signal?: AbortSignal): Promise<ScopeVerdict> {
    const body = {
      model: input.model,
      max_tokens: 400,
      system: SCOPE_JUDGE_INSTRUCTIONS,
      messages: [{ role: 'user', content: scopeJudgeQuestion(input) }],
    } satisfies MessageCreateParamsNonStreaming;
    const response = await this.call(body, input.model, signal);
    return readScopeAnswer(anthropicText(response), input);
  }

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnOutput> {
    const fit = fitWithin(input.display.width, input.display.height, MODEL_MAX_WIDTH, MODEL_MAX_HEIGHT);
    const geo: Geometry = {
      os: desktopOs(input.display.os),
      screenWidth: input.display.width,
      screenHeight: input.display.height,
      modelWidth: fit.width,
      modelHeight: fit.height,
      scale: fit.scale,
    };
    const image = input.screenshot ? await resizePng(input.screenshot, fit.width, fit.height) : null;

    let messages: Message[];
    let cursor: { x: number; y: number } | null = null;
    if (input.state === null || input.state === undefined) {
      messages = [{ role: 'user', content: [text(input.prompt), ...(image ? [imageBlock(image)] : [])] }];
    } else {
      const state = readState(input.state);
      cursor = state.cursor;
      const answer =
        state.pending.length > 0
          ? toolResults(state.pending, input.lastOutcome, image)
          : [text(outcomeText(input.lastOutcome).text), ...(image ? [imageBlock(image)] : [])];
      messages = trimmedTranscript([...state.messages, { role: 'user', content: answer }], MAX_MESSAGES);
    }

    const tally = new TurnTally();
    for (let request = 1; request <= MAX_REQUESTS_PER_TURN; request++) {
      const response = readResponse(await this.call(anthropicRequestBody(input, geo, messages), input.model, signal));
      tally.count(response.usage?.input_tokens ?? 0, response.usage?.output_tokens ?? 0);
      // The API refuses an empty assistant message; an empty answer is simply asked for again.
      if (response.content.length === 0 && request < MAX_REQUESTS_PER_TURN) continue;
      // The API takes its own blocks back (thinking blocks keep their signatures).
      messages.push({ role: 'assistant', content: response.content as unknown as BetaContentBlockParam[] });
      const result = interpret(response, input, geo, cursor);
      cursor = result.cursor;
      tally.heard(result.thought);
      if (result.move) {
        const state: AnthropicState = { v: 1, messages: withoutImages(messages), pending: result.pending, cursor };
        return tally.output(state, result.move, null);
      }
      messages.push({ role: 'user', content: result.feedback ?? [text('Go on.')] });
    }
    return tally.gaveUp({ v: 1, messages: withoutImages(messages), pending: [], cursor } satisfies AnthropicState);
  }

  private async call(body: MessageCreateParamsNonStreaming, model: string, signal?: AbortSignal): Promise<BetaMessage> {
    try {
      return await this.client.beta.messages.create(body, { signal });
    } catch (error) {
      throw toModelError('anthropic', error, signal, model);
    }
  }
}

/** The request for one turn, typed by Anthropic's SDK. */
export function anthropicRequestBody(input: ModelTurnInput, geo: { modelWidth: number; modelHeight: number }, messages: BetaMessageParam[]): MessageCreateParamsNonStreaming {
  const effort = ANTHROPIC_EFFORT[input.effort] ?? ANTHROPIC_EFFORT.low;
  const profile = anthropicProfile(input.model);
  const tools: BetaToolUnion[] = [
    { type: profile.tool, name: 'computer', display_width_px: geo.modelWidth, display_height_px: geo.modelHeight },
    ...agentToolDefinitions(input.tools).map((t): BetaToolUnion => ({ name: t.name, description: t.description, input_schema: { ...t.parameters } })),
  ];
  const body: MessageCreateParamsNonStreaming = {
    model: input.model,
    max_tokens: effort.maxTokens,
    tools,
    messages,
    betas: [profile.beta],
  };
  if (input.system.trim() !== '') body.system = input.system;
  if (profile.thinking === 'adaptive') {
    body.thinking = { type: 'adaptive' };
    body.output_config = { effort: input.effort };
  } else if (effort.thinkingBudget !== null) {
    body.thinking = { type: 'enabled', budget_tokens: effort.thinkingBudget };
  }
  return body;
}
