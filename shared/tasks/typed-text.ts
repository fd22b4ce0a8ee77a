import type { DesktopAction, Observation } from '../desktop/protocol';
import type { ModelMove } from '../models/model.types';

/**
 * Typed text may be a secret: on Windows and in Mac apps before 1.0.20 the service cannot see a
 * password field, so a password the agent types because a person asked it to looks like any
 * other text. The text is kept only where it is needed to act: in the task's `queued_actions`
 * (the actions of the model's move still to run, which is what any worker, or a reconnect,
 * sends to the computer) from the model's turn until the computer answers that action, or the
 * task ends. Everything else stored or sent (task events, approval items, webhooks, traces, the
 * older API, narration, logs) carries its length and where it went (docs/guardrails.md, "Typed
 * text").
 */

/** A type action as kept outside `queued_actions`: how many characters, never the text. */
export interface TypedWithoutText {
  type: 'type';
  chars: number;
}

/** An action as recorded in events and approval items. */
export type RecordedAction = Exclude<DesktopAction, { type: 'type' }> | TypedWithoutText;

/** Where typed text went, as the screen before it told: the app with the focus and the focused field (null when the app cannot tell). */
export interface TypedTarget {
  app: string | null;
  field: string | null;
  role: string | null;
}

/** `action` without its typed text (any other action as it is). */
export function withoutTypedText(action: DesktopAction | RecordedAction): RecordedAction {
  if (action.type !== 'type') return action;
  return { type: 'type', chars: 'chars' in action ? action.chars : action.text.length };
}

/** Where text typed on `observation` goes. */
export function typedTarget(observation: Observation | null): TypedTarget {
  return { app: observation?.focused_app ?? null, field: observation?.focused?.label || null, role: observation?.focused?.role ?? null };
}

/** "Type 8 characters into Password (Safari)": the action event's message. */
export function describeTyping(chars: number, target: TypedTarget): string {
  const into = target.field ? ` into ${target.field}` : '';
  const app = target.app ? ` (${target.app})` : '';
  return `Type ${chars} character${chars === 1 ? '' : 's'}${into}${app}`;
}

/** A move as an approval item keeps it: its type actions without their text (the text waits in `queued_actions`). */
export function moveWithoutTypedText(move: ModelMove): ModelMove {
  if (move.kind !== 'actions') return move;
  return { ...move, actions: move.actions.map(withoutTypedText) as unknown as DesktopAction[] };
}

/** Whether a recorded action still lacks the text it needs to run. */
function lacksText(action: DesktopAction | RecordedAction): action is TypedWithoutText {
  return action.type === 'type' && typeof (action as { text?: unknown }).text !== 'string';
}

/**
 * The action an approved approval item runs: its own (an item written before typed text was
 * kept out of items has the text), else the first queued action, which is the one held for the
 * approval, as long as it matches. Null when it does not (the approval then cannot run it).
 */
export function actionToRun(recorded: DesktopAction | RecordedAction, queued: readonly DesktopAction[]): DesktopAction | null {
  if (!lacksText(recorded)) return recorded as DesktopAction;
  const held = queued[0];
  return held?.type === 'type' && held.text.length === recorded.chars ? held : null;
}

/**
 * The move an approved safety check applies: its type actions get their text back from
 * `queued` (where it waited, in the same order). Null when they do not match.
 */
export function moveToApply(recorded: ModelMove, queued: readonly DesktopAction[]): ModelMove | null {
  if (recorded.kind !== 'actions' || !recorded.actions.some(lacksText)) return recorded;
  if (queued.length !== recorded.actions.length) return null;
  const actions: DesktopAction[] = [];
  for (let n = 0; n < queued.length; n++) {
    const action = recorded.actions[n]!;
    const run = lacksText(action) ? actionToRun(action, [queued[n]!]) : action;
    if (!run || run.type !== queued[n]!.type) return null;
    actions.push(run);
  }
  return { ...recorded, actions };
}

/** The typed texts of a move worth hiding from what the model says about it (one or two characters are not a secret, and hiding them would garble the sentence). */
export function typedTexts(move: ModelMove): string[] {
  if (move.kind !== 'actions') return [];
  return move.actions.flatMap((action) => (action.type === 'type' && action.text.trim().length >= 3 ? [action.text, action.text.trim()] : []));
}

/**
 * `said` (the model's thought or step, shown to people and kept in the events) with every
 * occurrence of a text its move types replaced by `•••`: a real model may narrate "typing
 * hunter2 into the password field".
 */
export function maskTypedText(said: string, texts: readonly string[]): string {
  let masked = said;
  for (const text of [...texts].sort((a, b) => b.length - a.length)) {
    if (text.length > 0) masked = masked.split(text).join('•••');
  }
  return masked;
}
