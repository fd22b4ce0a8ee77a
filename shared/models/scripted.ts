/**
 * The scripted model (docs/simulator.md, docs/models.md): a model backend that follows a script written in the
 * task prompt, one step per turn. It serves every model id when no vendor key is configured (or
 * when `DESKHAND_SCRIPTED_MODELS=1`), so that tests, evals and demos run the whole service for
 * real without a vendor. docs/models.md lists the decisions taken where the spec is silent.
 */
import { GUARDRAIL_CATEGORIES, type DesktopAction, type GuardrailCategory, type Observation } from '../desktop/protocol';
import { asSentence } from '../guardrails/engine';
import {
  centre,
  desktopOs,
  findLabel,
  navigateActions,
  normalizeCombo,
  openAppActions,
  type DesktopOs,
} from './desktop-helpers';
import {
  ModelError,
  type ModelBackend,
  type ModelMove,
  type ModelTurnInput,
  type ModelTurnOutput,
  type ScopeVerdict,
  type TurnOutcome,
} from './model.types';

/** One parsed line of a script. `line` is 1-based, as an editor shows it. */
export type ScriptStep = { line: number } & (
  | { kind: 'open'; app: string }
  | { kind: 'go'; address: string }
  | { kind: 'click'; label: string }
  | { kind: 'click_at'; x: number; y: number }
  | { kind: 'type'; text: string }
  | { kind: 'key'; combos: string[] }
  | { kind: 'drag'; from: string; to: string }
  | { kind: 'ask'; question: string; options: string[] }
  | { kind: 'request_approval'; what: string; category: GuardrailCategory | null }
  | { kind: 'safety'; reason: string }
  | { kind: 'tool'; name: string; args: Record<string, unknown> }
  | { kind: 'file'; op: 'list' | 'read' | 'write' | 'delete' | 'search'; path?: string; text?: string; query?: string }
  | { kind: 'sleep'; seconds: number }
  | { kind: 'done'; summary: string }
  | { kind: 'fail'; reason: string }
  | { kind: 'repeat' }
);

export class ScriptParseError extends Error {
  override readonly name = 'ScriptParseError';
  constructor(
    readonly line: number,
    detail: string,
  ) {
    super(`Script error on line ${line}: ${detail}`);
  }
}

interface Token {
  value: string;
  quoted: boolean;
}

/** Splits the arguments of a line into bare words and double-quoted strings (`\"`, `\\`, `\n`). */
function tokenize(text: string, line: number): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const ch = text[i];
    if (ch === ' ' || ch === '\t') {
      i++;
      continue;
    }
    if (ch === '"') {
      let value = '';
      i++;
      let closed = false;
      while (i < text.length) {
        const c = text[i];
        if (c === '\\' && i + 1 < text.length) {
          const next = text[i + 1];
          if (next === '"' || next === '\\') value += next;
          else if (next === 'n') value += '\n';
          else value += c + next;
          i += 2;
          continue;
        }
        if (c === '"') {
          closed = true;
          i++;
          break;
        }
        value += c;
        i++;
      }
      if (!closed) throw new ScriptParseError(line, 'a quoted string is not closed (missing ")');
      if (i < text.length && text[i] !== ' ' && text[i] !== '\t') {
        throw new ScriptParseError(line, 'put a space after a closing quote');
      }
      tokens.push({ value, quoted: true });
      continue;
    }
    let value = '';
    while (i < text.length && text[i] !== ' ' && text[i] !== '\t') {
      if (text[i] === '"') throw new ScriptParseError(line, 'a quote must start a new word');
      value += text[i];
      i++;
    }
    tokens.push({ value, quoted: false });
  }
  return tokens;
}

function quoted(tokens: Token[], index: number, line: number, usage: string): string {
  const token = tokens[index];
  if (!token || !token.quoted) throw new ScriptParseError(line, `expected ${usage}`);
  return token.value;
}

function expectCount(tokens: Token[], count: number, line: number, usage: string): void {
  if (tokens.length !== count) throw new ScriptParseError(line, `expected ${usage}`);
}

/** A path: a bare word or a quoted string. */
function pathArg(tokens: Token[], index: number, line: number, usage: string): string {
  const token = tokens[index];
  if (!token || token.value === '') throw new ScriptParseError(line, `expected ${usage}`);
  return token.value;
}

function parseNumber(value: string | undefined, line: number, what: string): number {
  if (value === undefined || !/^\d+(\.\d+)?$/.test(value)) {
    throw new ScriptParseError(line, `${what} must be a number, got ${value === undefined ? 'nothing' : `"${value}"`}`);
  }
  return Number(value);
}

function parseLine(command: string, rest: string, line: number): ScriptStep {
  switch (command) {
    case 'open': {
      const tokens = tokenize(rest, line);
      // `open App Store` and `open "App Store"` both name one app.
      const app = tokens.length === 1 ? tokens[0].value : tokens.every((t) => !t.quoted) ? rest.trim() : '';
      if (app === '') throw new ScriptParseError(line, 'expected open APP, like open Browser');
      return { line, kind: 'open', app };
    }
    case 'go': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'go HOST[/PATH], like go shop.example.com');
      return { line, kind: 'go', address: tokens[0].value };
    }
    case 'click': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'click "LABEL"');
      return { line, kind: 'click', label: quoted(tokens, 0, line, 'click "LABEL"') };
    }
    case 'click_at': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 2, line, 'click_at X Y, like click_at 100 200');
      return {
        line,
        kind: 'click_at',
        x: Math.round(parseNumber(tokens[0].value, line, 'X')),
        y: Math.round(parseNumber(tokens[1].value, line, 'Y')),
      };
    }
    case 'type': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'type "TEXT"');
      return { line, kind: 'type', text: quoted(tokens, 0, line, 'type "TEXT"') };
    }
    case 'key': {
      const tokens = tokenize(rest, line);
      if (tokens.length === 0) throw new ScriptParseError(line, 'expected key COMBO, like key cmd+enter');
      return { line, kind: 'key', combos: tokens.map((t) => t.value) };
    }
    case 'drag': {
      const tokens = tokenize(rest, line);
      const usage = 'drag "LABEL" to "LABEL"';
      if (tokens.length !== 3 || tokens[1].quoted || tokens[1].value.toLowerCase() !== 'to') {
        throw new ScriptParseError(line, `expected ${usage}`);
      }
      return { line, kind: 'drag', from: quoted(tokens, 0, line, usage), to: quoted(tokens, 2, line, usage) };
    }
    case 'ask': {
      const tokens = tokenize(rest, line);
      const usage = 'ask "QUESTION" "OPTION" …';
      if (tokens.length === 0 || tokens.some((t) => !t.quoted)) throw new ScriptParseError(line, `expected ${usage}`);
      return { line, kind: 'ask', question: tokens[0].value, options: tokens.slice(1).map((t) => t.value) };
    }
    case 'request_approval': {
      const tokens = tokenize(rest, line);
      const usage = 'request_approval "WHAT" [CATEGORY]';
      if (tokens.length < 1 || tokens.length > 2) throw new ScriptParseError(line, `expected ${usage}`);
      const what = quoted(tokens, 0, line, usage);
      let category: GuardrailCategory | null = null;
      if (tokens.length === 2) {
        const name = tokens[1].value.toLowerCase();
        if (!(GUARDRAIL_CATEGORIES as readonly string[]).includes(name)) {
          throw new ScriptParseError(
            line,
            `unknown category "${tokens[1].value}" (one of ${GUARDRAIL_CATEGORIES.join(', ')})`,
          );
        }
        category = name as GuardrailCategory;
      }
      return { line, kind: 'request_approval', what, category };
    }
    case 'safety': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'safety "REASON"');
      return { line, kind: 'safety', reason: quoted(tokens, 0, line, 'safety "REASON"') };
    }
    case 'tool': {
      const match = /^(\S+)(?:\s+([\s\S]*))?$/.exec(rest.trim());
      if (!match) throw new ScriptParseError(line, 'expected tool NAME {JSON}');
      const raw = (match[2] ?? '{}').trim();
      let args: unknown;
      try {
        args = JSON.parse(raw);
      } catch (err) {
        throw new ScriptParseError(line, `the arguments are not valid JSON (${(err as Error).message})`);
      }
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        throw new ScriptParseError(line, 'the arguments must be a JSON object, like {"id": 1}');
      }
      return { line, kind: 'tool', name: match[1], args: args as Record<string, unknown> };
    }
    case 'file': {
      const tokens = tokenize(rest, line);
      const op = tokens[0]?.quoted ? '' : (tokens[0]?.value ?? '').toLowerCase();
      switch (op) {
        case 'write': {
          const usage = 'file write PATH "TEXT"';
          expectCount(tokens, 3, line, usage);
          return { line, kind: 'file', op, path: pathArg(tokens, 1, line, usage), text: quoted(tokens, 2, line, usage) };
        }
        case 'read':
        case 'delete': {
          const usage = `file ${op} PATH`;
          expectCount(tokens, 2, line, usage);
          return { line, kind: 'file', op, path: pathArg(tokens, 1, line, usage) };
        }
        case 'list': {
          if (tokens.length > 2) throw new ScriptParseError(line, 'expected file list [PATH]');
          return tokens.length === 2
            ? { line, kind: 'file', op, path: pathArg(tokens, 1, line, 'file list [PATH]') }
            : { line, kind: 'file', op };
        }
        case 'search': {
          const usage = 'file search "QUERY"';
          expectCount(tokens, 2, line, usage);
          return { line, kind: 'file', op, query: quoted(tokens, 1, line, usage) };
        }
        default:
          throw new ScriptParseError(line, 'expected file write PATH "TEXT", file read PATH or file delete PATH');
      }
    }
    case 'sleep': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'sleep SECONDS, like sleep 5');
      return { line, kind: 'sleep', seconds: parseNumber(tokens[0].value, line, 'SECONDS') };
    }
    case 'done': {
      const tokens = tokenize(rest, line);
      if (tokens.length === 0) return { line, kind: 'done', summary: 'Done.' };
      expectCount(tokens, 1, line, 'done "SUMMARY"');
      return { line, kind: 'done', summary: quoted(tokens, 0, line, 'done "SUMMARY"') };
    }
    case 'fail': {
      const tokens = tokenize(rest, line);
      expectCount(tokens, 1, line, 'fail "REASON"');
      return { line, kind: 'fail', reason: quoted(tokens, 0, line, 'fail "REASON"') };
    }
    case 'repeat': {
      if (rest.trim() !== '') throw new ScriptParseError(line, 'repeat takes nothing after it');
      return { line, kind: 'repeat' };
    }
    default:
      throw new ScriptParseError(line, `unknown step "${command}"`);
  }
}

/**
 * Parses a script: one step per line; blank lines and lines starting with `#` are skipped; the
 * step's name is case-insensitive. Throws `ScriptParseError` naming the first bad line.
 */
export function parseScript(prompt: string): ScriptStep[] {
  const steps: ScriptStep[] = [];
  const lines = prompt.split(/\r?\n/);
  lines.forEach((raw, index) => {
    const text = raw.trim();
    if (text === '' || text.startsWith('#')) return;
    const match = /^(\S+)([\s\S]*)$/.exec(text);
    if (!match) return;
    steps.push(parseLine(match[1].toLowerCase(), match[2], index + 1));
  });
  return steps;
}

/** What the scripted model keeps between turns. */
interface ScriptState {
  v: 1;
  /** Index of the next step to run. */
  next: number;
  /** The last answer received, for `{answer}`; null before any. */
  answer: string | null;
}

function readState(state: unknown): ScriptState {
  if (state === null || state === undefined) return { v: 1, next: 0, answer: null };
  const s = state as Partial<ScriptState>;
  if (typeof s !== 'object' || s.v !== 1 || typeof s.next !== 'number' || !Number.isInteger(s.next) || s.next < 0) {
    throw new ModelError('The scripted model was given a state it did not write', {
      code: 'invalid_input',
      retryable: false,
      backend: 'scripted',
    });
  }
  return { v: 1, next: s.next, answer: typeof s.answer === 'string' ? s.answer : null };
}

/** `{answer}` is left as it is until an answer has been received. */
function substitute(text: string, answer: string | null): string {
  return answer === null ? text : text.split('{answer}').join(answer);
}

function substituteDeep(value: unknown, answer: string | null): unknown {
  if (typeof value === 'string') return substitute(value, answer);
  if (Array.isArray(value)) return value.map((v) => substituteDeep(v, answer));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, substituteDeep(v, answer)]));
  }
  return value;
}

/** What went wrong with the previous turn, as a sentence; null when it went well. */
function failureOf(outcome: TurnOutcome | null): string | null {
  if (!outcome) return null;
  switch (outcome.kind) {
    case 'actions': {
      const failed = outcome.results.find((r) => !r.ok);
      return failed ? `The last step failed: ${failed.error ?? 'the computer could not do it'}.` : null;
    }
    case 'refused':
      return `The last step was refused: ${asSentence(outcome.reason)}`;
    case 'approval':
      return outcome.decision === 'deny' ? 'The request was denied.' : null;
    case 'tool':
    case 'file':
      return outcome.ok ? null : `The last step failed: ${outcome.text}`;
    default:
      return null;
  }
}

interface Built {
  move: ModelMove;
  thought: string | null;
}

function actionsMove(actions: DesktopAction[], step: string, thought: string): Built {
  return { move: { kind: 'actions', actions, step }, thought };
}

/**
 * A step the model cannot carry out on the screen it sees (no such label, no address bar, no
 * taskbar or launcher button). A vision model would look again rather than click blindly, so the move is a
 * plain screenshot; the step and the thought say what failed, and the script goes on.
 */
function notFound(step: string, why: string): Built {
  return actionsMove([{ type: 'screenshot' }], `${step} (failed: ${why})`, `I cannot do that: ${why}.`);
}

function buildMove(step: ScriptStep, os: DesktopOs, observation: Observation | null, answer: string | null): Built {
  const sub = (text: string) => substitute(text, answer);
  switch (step.kind) {
    case 'open': {
      const app = sub(step.app);
      const planned = openAppActions(app, os, observation);
      if (!planned.ok) return notFound(`Open ${app}`, planned.error);
      return actionsMove(planned.actions, `Open ${app}`, `Opening ${app}.`);
    }
    case 'go': {
      const address = sub(step.address);
      const planned = navigateActions(address, os, observation, false);
      if (!planned.ok) return notFound(`Go to ${address}`, planned.error);
      return actionsMove(planned.actions, `Go to ${address}`, `Going to ${address}.`);
    }
    case 'click': {
      const label = sub(step.label);
      const rect = findLabel(observation, label);
      if (!rect) return notFound(`Click "${label}"`, `no "${label}" on the screen`);
      return actionsMove([{ type: 'click', ...centre(rect) }], `Click "${label}"`, `Clicking "${label}".`);
    }
    case 'click_at':
      return actionsMove(
        [{ type: 'click', x: step.x, y: step.y }],
        `Click at ${step.x}, ${step.y}`,
        `Clicking at ${step.x}, ${step.y}.`,
      );
    case 'type': {
      const text = sub(step.text);
      // The step text is shown to people and kept in the event log; the typed text may be a secret.
      return actionsMove([{ type: 'type', text }], `Type ${text.length} characters`, 'Typing.');
    }
    case 'key': {
      const combos = step.combos.map((c) => normalizeCombo(sub(c), os) ?? c);
      return actionsMove(
        combos.map((keys) => ({ type: 'key', keys })),
        `Press ${combos.join(', ')}`,
        `Pressing ${combos.join(', ')}.`,
      );
    }
    case 'drag': {
      const from = sub(step.from);
      const to = sub(step.to);
      const a = findLabel(observation, from);
      const b = findLabel(observation, to);
      const name = `Drag "${from}" to "${to}"`;
      if (!a) return notFound(name, `no "${from}" on the screen`);
      if (!b) return notFound(name, `no "${to}" on the screen`);
      return actionsMove([{ type: 'drag', from: centre(a), to: centre(b) }], name, `Dragging "${from}" to "${to}".`);
    }
    case 'ask': {
      const question = sub(step.question);
      return { move: { kind: 'ask', question, options: step.options.map(sub) }, thought: `Asking: ${question}` };
    }
    case 'request_approval': {
      const what = sub(step.what);
      return {
        move: { kind: 'request_approval', what, category: step.category },
        thought: `Asking for approval: ${what}`,
      };
    }
    case 'tool':
      return {
        move: { kind: 'tool', name: step.name, arguments: substituteDeep(step.args, answer) as Record<string, unknown> },
        thought: `Calling ${step.name}.`,
      };
    case 'file': {
      const move: ModelMove = { kind: 'file', op: step.op };
      if (step.path !== undefined) move.path = sub(step.path);
      if (step.text !== undefined) move.text = sub(step.text);
      if (step.query !== undefined) move.query = sub(step.query);
      const target = move.path ?? move.query ?? 'my files';
      return { move, thought: `File ${step.op}: ${target}.` };
    }
    case 'sleep':
      return { move: { kind: 'sleep', seconds: step.seconds }, thought: `Thinking for ${step.seconds} s.` };
    case 'done': {
      const summary = sub(step.summary);
      return { move: { kind: 'done', summary }, thought: null };
    }
    case 'fail':
      return { move: { kind: 'fail', reason: sub(step.reason) }, thought: null };
    case 'safety':
    case 'repeat':
      throw new Error(`${step.kind} is not a turn of its own`);
  }
}

/**
 * The scripted model backend. Stateless: everything it remembers is in `state`
 * (`{ v, next, answer }`).
 */
export class ScriptedBackend implements ModelBackend {
  readonly id = 'scripted' as const;
  /** The scripted model reads the observation's accessibility tree, never pixels. */
  readonly readsScreens = false;

  async turn(input: ModelTurnInput, signal?: AbortSignal): Promise<ModelTurnOutput> {
    if (signal?.aborted) {
      throw new ModelError('The model call was aborted', { code: 'aborted', retryable: false, backend: 'scripted' });
    }
    return scriptedTurn(input);
  }
}

/** One turn of the scripted model, synchronously (the backend's `turn` wraps it). */
export function scriptedTurn(input: ModelTurnInput): ModelTurnOutput {
  const state = readState(input.state);
  let steps: ScriptStep[];
  try {
    steps = parseScript(input.prompt);
  } catch (err) {
    if (!(err instanceof ScriptParseError)) throw err;
    return {
      state,
      thought: null,
      move: { kind: 'fail', reason: err.message },
      safety: null,
    };
  }

  const answer = input.lastOutcome?.kind === 'answer' ? input.lastOutcome.answer : state.answer;
  const os = desktopOs(input.display.os);
  let next = state.next;
  let safety: string | null = null;
  let repeats = 0;
  let built: Built | null = null;

  while (built === null) {
    if (next >= steps.length) {
      built = { move: { kind: 'done', summary: 'Done.' }, thought: null };
      break;
    }
    const step = steps[next];
    next++;
    if (step.kind === 'repeat') {
      // A second `repeat` within one turn means the script has no step that is a turn.
      if (++repeats > 1) {
        built = {
          move: { kind: 'fail', reason: `Script error on line ${step.line}: repeat without any step to repeat` },
          thought: null,
        };
        break;
      }
      next = 0;
      continue;
    }
    if (step.kind === 'safety') {
      // A safety check belongs to the step it is raised on: the one after it.
      safety = substitute(step.reason, answer);
      continue;
    }
    built = buildMove(step, os, input.observation, answer);
  }

  const failure = failureOf(input.lastOutcome);
  const parts = [failure, built.thought].filter((p): p is string => p !== null && p !== '');
  return {
    state: { v: 1, next, answer } satisfies ScriptState,
    thought: parts.length > 0 ? parts.join(' ') : null,
    move: built.move,
    safety,
  };
}

/** Verdict of a scope check (the guardrails' `scope`); the same shape for every judge. */
export type ScopeJudgement = ScopeVerdict;

/**
 * The scripted model's scope check, for `guardrails.scope`. A prompt line `# scope: off`
 * (or `out`, `off_scope`) makes the task off scope; `# scope: unknown` (or `undecidable`) makes
 * it undecidable; `# scope: in` (or `on`, `in_scope`) in scope. The first such line decides.
 * Without one, every task is in scope. Being a comment, the line does not change the script.
 */
export function judgeScopeScripted(scope: string, prompt: string): ScopeJudgement {
  const what = scope.trim();
  for (const raw of prompt.split(/\r?\n/)) {
    const match = /^\s*#\s*scope\s*:\s*([a-z_]+)\s*$/i.exec(raw);
    if (!match) continue;
    const value = match[1].toLowerCase();
    if (value === 'off' || value === 'out' || value === 'off_scope') {
      return {
        verdict: 'off_scope',
        reason: what === '' ? 'The task is off scope.' : `The task is not about what this agent is for: ${what}`,
      };
    }
    if (value === 'unknown' || value === 'undecidable') {
      return {
        verdict: 'undecidable',
        reason: "The scope check could not decide whether the task fits the agent's scope.",
      };
    }
    if (value === 'in' || value === 'on' || value === 'in_scope') break;
  }
  return { verdict: 'in_scope', reason: "The task fits the agent's scope." };
}
