/**
 * What the three vendor backends (anthropic.ts, openai.ts, gemini.ts) share beneath their wire
 * formats. A reply holds calls (computer actions or the agent's own tools); `reduceCalls` turns
 * them into the one move the task makes and a record per call, which the backend keeps in its
 * state; on the next request `answerCall` says what each call came to, from the move's outcome,
 * for the backend to write in its vendor's shape. `TurnTally` gathers a turn's requests (at most
 * `MAX_REQUESTS_PER_TURN`) into its output.
 */
import type { DesktopAction } from '../desktop/protocol';
import { agentToolCallToMove, NOT_CARRIED_OUT, outcomeText } from './agent-tools';
import { callOutcome, describeActions, type CallOutcome, type PlannedActions } from './desktop-helpers';
import {
  ModelError,
  type ModelBackendId,
  type ModelMove,
  type ModelTools,
  type ModelTurnOutput,
  type ModelUsage,
  type TurnOutcome,
} from './model.types';

/** Requests within one turn when the model only asks for what cannot be done (told why each time). */
export const MAX_REQUESTS_PER_TURN = 3;

/** What one call of a reply asks for, as the backend read it from its vendor's format. */
export type CallRequest =
  /** Desktop actions; `safety` holds the vendor's safety checks on them, as a person should read them. */
  | { kind: 'computer'; actions: DesktopAction[]; safety?: string[] }
  /** One of the agent's own tools (a question, an approval, a file, the end…). */
  | { kind: 'tool'; move: ModelMove }
  /** Nothing that can be done: the model is told `error`. */
  | { kind: 'error'; error: string };

/** A computer call's desktop actions as a request, or the reason they cannot be done. */
export function computerRequest(planned: PlannedActions, safety?: string[]): CallRequest {
  if (!planned.ok) return { kind: 'error', error: planned.error };
  return safety ? { kind: 'computer', actions: planned.actions, safety } : { kind: 'computer', actions: planned.actions };
}

/** A call of one of the agent's tools as a request; `unknownTool` is what the model is told for a name that is none. */
export function agentToolRequest(name: string, args: unknown, tools: ModelTools, unknownTool: string): CallRequest {
  const call = agentToolCallToMove(name, args, tools);
  if (call === null) return { kind: 'error', error: unknownTool };
  return call.ok ? { kind: 'tool', move: call.move } : { kind: 'error', error: call.error };
}

/**
 * What became of one call of a reply: the backend keeps it in its state (beside the vendor's
 * call id) and answers the call with it on the next request.
 */
export interface CallRecord {
  /** Carried out in this move (else answered with `error` or `NOT_CARRIED_OUT`). */
  handled: boolean;
  /** For computer calls carried out: the first of the move's actions it became, and how many. */
  first?: number;
  count?: number;
  /** Answered with this error without running anything. */
  error?: string;
}

export interface ReducedReply<Call> {
  /** The move to make, or null when no call can be done: the model is answered and asked again. */
  move: ModelMove | null;
  /** Each call with its record, in the reply's order; none after a move that ends the task. */
  calls: Array<{ call: Call; record: CallRecord }>;
  /** The safety checks of the computer calls carried out, joined; null when none. */
  safety: string | null;
}

/**
 * Reduces a reply's calls to one move. The first call that can be done leads: when it is a
 * computer call, every computer call of the reply runs, their actions in order as one move; when
 * it is one of the agent's tools, that call alone is made. The others are answered as not carried
 * out (or with their own error).
 */
export function reduceCalls<Call>(calls: Array<{ call: Call; request: CallRequest }>): ReducedReply<Call> {
  const error = (request: CallRequest): Pick<CallRecord, 'error'> => (request.kind === 'error' ? { error: request.error } : {});
  const leader = calls.find((c) => c.request.kind !== 'error');
  if (!leader) return { move: null, calls: calls.map(({ call, request }) => ({ call, record: { handled: false, ...error(request) } })), safety: null };

  if (leader.request.kind === 'computer') {
    const actions: DesktopAction[] = [];
    const safety: string[] = [];
    const records = calls.map(({ call, request }) => {
      if (request.kind !== 'computer') return { call, record: { handled: false, ...error(request) } };
      const record: CallRecord = { handled: true, first: actions.length, count: request.actions.length };
      actions.push(...request.actions);
      safety.push(...(request.safety ?? []));
      return { call, record };
    });
    return { move: { kind: 'actions', actions, step: describeActions(actions) }, calls: records, safety: safety.length > 0 ? safety.join(' ') : null };
  }

  const move = (leader.request as Extract<CallRequest, { kind: 'tool' }>).move;
  const ends = move.kind === 'done' || move.kind === 'fail';
  return {
    move,
    calls: ends ? [] : calls.map((c) => ({ call: c.call, record: { handled: c === leader, ...error(c.request) } })),
    safety: null,
  };
}

/** What one call of the previous reply came to, for the next request to tell the model. */
export type CallAnswer =
  /** The call's result as text: its error when it was not run, or what the agent's tool gave. */
  | { kind: 'text'; text: string; isError: boolean }
  /** Its desktop actions were run (or refused by the guardrails or a person). */
  | { kind: 'computer'; outcome: CallOutcome };

/**
 * What a call of the previous reply came to, from the outcome of the move it was part of: a call
 * carried out as computer actions gets the outcome of its own actions (`first`, `count`).
 */
export function answerCall(record: CallRecord, outcome: TurnOutcome | null): CallAnswer {
  if (record.error !== undefined) return { kind: 'text', text: record.error, isError: true };
  if (!record.handled) return { kind: 'text', text: NOT_CARRIED_OUT, isError: true };
  if (record.count === undefined) return { kind: 'text', ...outcomeText(outcome) };
  return { kind: 'computer', outcome: callOutcome(outcome, record.first ?? 0, record.count) };
}

/**
 * What went wrong with a computer call's actions, as the model reads it: why they were refused,
 * or which failed (after `failedLead`); null when all went well.
 */
export function computerProblem(call: CallOutcome, failedLead = 'Failed'): string | null {
  return call.refused ?? (call.failures ? `${failedLead}: ${call.failures}.` : null);
}

/** What the model said in a reply, or else its reasoning; null when neither holds text. */
export function thoughtOf(said: string[], reasoning: string[] = []): string | null {
  return said.length > 0 ? said.join('\n') : reasoning.length > 0 ? reasoning.join('\n') : null;
}

/**
 * A transcript cut to at most `max` entries: the first (the task's prompt) and the latest, whole
 * exchanges (model, user) dropped from the oldest on.
 */
export function trimmedTranscript<T>(entries: T[], max: number): T[] {
  if (entries.length <= max) return entries;
  const pairs = Math.ceil((entries.length - max) / 2) * 2;
  return [entries[0]!, ...entries.slice(1 + pairs)];
}

/** Thrown when a backend is handed a state that another backend (or nothing) wrote. */
export function foreignState(backend: ModelBackendId, vendor: string): ModelError {
  return new ModelError(`The ${vendor} backend was given a state it did not write`, { code: 'invalid_input', retryable: false, backend });
}

/** A turn's usage and thoughts, gathered over its requests, and its output from them. */
export class TurnTally {
  /** Summed over the turn's requests; the output hands on this object. */
  readonly usage: ModelUsage = { input_tokens: 0, output_tokens: 0 };
  private readonly thoughts: string[] = [];

  count(inputTokens: number, outputTokens: number): void {
    this.usage.input_tokens += inputTokens;
    this.usage.output_tokens += outputTokens;
  }

  heard(thought: string | null): void {
    if (thought) this.thoughts.push(thought);
  }

  output(state: unknown, move: ModelMove, safety: string | null): ModelTurnOutput {
    return { state, thought: this.thoughts.join('\n') || null, move, safety, usage: this.usage };
  }

  /** The output once every request of the turn went on calls that cannot be done. */
  gaveUp(state: unknown): ModelTurnOutput {
    return this.output(state, { kind: 'fail', reason: 'The model kept asking for steps that cannot be carried out on this computer.' }, null);
  }
}
