import { DesktopEvents, type ActMessage, type DesktopAction, type GuardrailCategory, type ResultMessage } from '../../desktop/protocol';
import { describeAction } from '../../desktop/describe-action';
import { judgeAction, type AddressBarBuffer, type Decision } from '../../guardrails/engine';
import { checkNewScreen, type NewScreenCheck } from '../../guardrails/screen-check';
import { randomString } from '../../ids';
import { changeTaskIfUnchanged, changeTaskLocked, type TaskChange } from '../task-change';
import { isDone } from '../task-object';
import type { TaskRow } from '../task-rows';
import { readTaskForChange } from '../tasks.repository';
import { describeTyping, typedTarget, withoutTypedText } from '../typed-text';
import { finish } from './ending';
import type { DeclaredCategory } from './guard-state';
import type { TaskLoopDeps } from './loop-deps';
import { openApproval } from './questions';
import { scheduleStep } from './scheduling';
import { enterState, waitsFor } from './transitions';

/*
 * Actions and their results: each queued action of a move is judged by the guardrails, then sent
 * to the computer (running/computer), held for an approval, or refused; the computer's result
 * comes back through `receiveResult`, and the screen it shows may be checked.
 */

/** A guardrail decision as the loop acts on it: the engine's, or one its agent's own request settled. */
export type LoopDecision = Omit<Decision, 'rule'> & { rule: Decision['rule'] | 'approved_request' | 'denied_request' };

/**
 * Settles a step's `confirm` with the agent's own approval request made for it (the request
 * named the step's category and was decided): approved, the step runs without a second
 * approval; denied, the step is refused, even where its category needs no approval, because
 * someone said no to it. Blocks and the person's typing stay as the engine decided.
 */
export function judgeWithDeclared(decision: Decision, declared: DeclaredCategory | null, addressBar: AddressBarBuffer | null): LoopDecision {
  if (!declared || decision.category !== declared.category) return decision;
  const asked = `the agent asked for approval of this step (${declared.category})`;
  if (declared.decision === 'deny' && (decision.verdict === 'confirm' || decision.verdict === 'run')) {
    return { ...decision, verdict: 'block', rule: 'denied_request', reason: `Refused: ${asked} and it was denied.`, addressBar };
  }
  if (declared.decision === 'approve' && decision.verdict === 'confirm' && decision.rule === 'confirm_category') {
    return { ...decision, verdict: 'run', rule: 'approved_request', reason: `Runs without asking again: ${asked} and it was approved.` };
  }
  return decision;
}

/** The action a running task waits for the computer to answer (the first queued one, until its result comes), as it was sent. */
export function awaitedAct(row: Pick<TaskRow, 'id' | 'status' | 'phase' | 'awaiting_act_id' | 'queued_actions'>): ActMessage | null {
  const action = row.queued_actions[0];
  return waitsFor(row) === 'computer' && row.awaiting_act_id && action ? { task_id: row.id, act_id: row.awaiting_act_id, action } : null;
}

/** Remembers the category the agent's approval request named, for its next turn's actions. */
export function declare(change: TaskChange, category: GuardrailCategory, decision: 'approve' | 'deny'): void {
  change.set({ guard_state: { ...change.row.guard_state, declared: { category, decision } } });
}

/** Judges the next queued action and sends it, holds it for an approval, or refuses it. */
export async function sendNextAction(deps: TaskLoopDeps, change: TaskChange): Promise<void> {
  const row = change.row;
  const action = row.queued_actions[0]!;
  const guard = row.guard_state;
  const decision: LoopDecision =
    action.type === 'screenshot' || action.type === 'wait'
      ? { verdict: 'run', rule: 'allowed', category: null, app: null, site: null, reason: 'Looking changes nothing.', addressBar: guard.addressBar ?? null }
      : judgeWithDeclared(
          judgeAction({
            guardrails: row.agent_config.guardrails,
            device: guard.device!,
            capabilities: guard.capabilities!,
            observation: row.observation,
            action,
            addressBar: guard.addressBar ?? null,
            declaredCategory: guard.stepDeclared?.category ?? null,
            secrets: row.secrets ?? undefined,
          }),
          guard.stepDeclared ?? null,
          guard.addressBar ?? null,
        );
  switch (decision.verdict) {
    case 'run':
      if (decision.rule === 'approved_request') {
        change.event('guardrail', decision.reason, { verdict: 'run', rule: decision.rule, category: decision.category, app: decision.app, site: decision.site });
      }
      dispatch(deps, change, action, decision.addressBar);
      return;
    case 'block':
      change.event('guardrail', decision.reason, { verdict: 'block', rule: decision.rule, category: decision.category, app: decision.app, site: decision.site });
      change.set({
        queued_actions: [],
        last_outcome: { kind: 'refused', reason: decision.reason, results: row.turn_results },
        turn_results: [],
      });
      scheduleStep(deps.queues, change);
      return;
    case 'confirm':
      change.event('guardrail', decision.reason, { verdict: 'confirm', rule: decision.rule, category: decision.category, app: decision.app, site: decision.site });
      await openApproval(
        deps,
        change,
        { kind: 'action', what: decision.reason, action: withoutTypedText(action), category: decision.category, rule: decision.rule, addressBar: decision.addressBar },
        'normal',
      );
      return;
    case 'person_types': {
      change.event('guardrail', decision.reason, { verdict: 'person_types', rule: decision.rule, secret_kind: decision.secret_kind ?? null });
      // The id of this prompt for the person to type the secret (the protocol's `request_id`).
      const secretPromptId = `sec_${randomString(12)}`;
      const field = decision.field ?? 'the field';
      const text = action.type === 'type' ? action.text : '';
      change.after(() => deps.link.show(row.session_id, { kind: 'type_secret', task_id: row.id, request_id: secretPromptId, field, text }));
      change.set({
        queued_actions: [],
        guard_state: { ...guard, addressBar: decision.addressBar },
        last_outcome: { kind: 'refused', reason: decision.reason, results: row.turn_results },
        turn_results: [],
      });
      scheduleStep(deps.queues, change);
      return;
    }
  }
}

/** Sends one action to the computer; its result comes back through `receiveResult`. */
export function dispatch(deps: Pick<TaskLoopDeps, 'link'>, change: TaskChange, action: DesktopAction, addressBar: AddressBarBuffer | null): void {
  const row = change.row;
  const actId = `act_${randomString(16)}`;
  enterState(change, 'running/computer', {
    awaiting_act_id: actId,
    phase_since: change.now,
    guard_state: { ...row.guard_state, pendingAddressBar: addressBar },
  });
  // Typed text goes to the computer only: the event says how much and where (shared/tasks/typed-text.ts).
  if (action.type === 'type') {
    const target = typedTarget(row.observation);
    // `at`: the middle of the focused field, so that a replay can mark where the text went (null when the app cannot tell).
    const field = row.observation?.focused?.bounds;
    const at = field ? { x: Math.round(field.x + field.width / 2), y: Math.round(field.y + field.height / 2) } : null;
    change.event('action', describeTyping(action.text.length, target), { act_id: actId, action: withoutTypedText(action), target, at });
  } else {
    change.event('action', describeAction(action), { act_id: actId, action });
  }
  const message: ActMessage = { task_id: row.id, act_id: actId, action };
  // An action the computer never answers is found by the reconcile sweep (phase 'computer'
  // for longer than the act timeout), which costs nothing per action. The message carries ids
  // and the action only: the result's change reads the task (`receiveResult`).
  change.after(() => deps.link.send(row.session_id, DesktopEvents.act, message));
}

/**
 * The computer's answer to an action (the web process holding its connection calls this). The
 * task is read once, without the lock, and the result stored if nobody changed the task since;
 * otherwise (or when storing it opens an approval or ends the task, which take the lock) it is
 * stored under the lock, checked again against the newest row.
 */
export async function receiveResult(deps: TaskLoopDeps, sessionCode: string, message: ResultMessage): Promise<{ ok: boolean }> {
  const result = message.result;
  const screenshot = Buffer.isBuffer(result.screenshot) ? result.screenshot : Buffer.from(result.screenshot as unknown as Uint8Array);
  const awaited = (row: TaskRow) => row.session_id === sessionCode && row.awaiting_act_id === message.act_id && !isDone(row.status);
  const seen = await readTaskForChange(deps.db, message.task_id);
  if (!seen || !awaited(seen)) return { ok: false };
  const store = async (change: TaskChange): Promise<boolean> => {
    const row = change.row;
    if (!awaited(row)) return false;
    const seq = row.frames + 1;
    change.frame({ task_id: row.id, seq, width: result.observation.width, height: result.observation.height, png: screenshot, created_at: change.now });
    const guard = row.guard_state;
    const results = [...row.turn_results, result.ok ? { ok: true } : { ok: false, error: result.error ?? 'The action failed' }];
    const remaining = row.queued_actions.slice(1);
    change.set({
      frames: seq,
      actions: row.actions + 1,
      observation: result.observation,
      awaiting_act_id: null,
      guard_state: { ...guard, addressBar: guard.pendingAddressBar ?? null, pendingAddressBar: null },
      turn_results: results,
      queued_actions: result.ok ? remaining : [],
    });
    change.event('action_result', result.ok ? 'Done' : `Failed: ${result.error ?? 'the action failed'}`, {
      act_id: message.act_id,
      ok: result.ok,
      error: result.error ?? null,
      frame: seq,
      // The screen's size in the coordinates actions use, which a replay needs to place marks on the frame (its PNG may have more pixels).
      screen: { width: result.observation.width, height: result.observation.height },
    });
    if (!result.ok || remaining.length === 0) {
      // The first look at the screen is not a move of the model's: nothing to report on it.
      change.set({ queued_actions: [], turn_results: [], last_outcome: row.steps === 0 ? null : { kind: 'actions', results } });
    }
    const screen = row.agent_config.guardrails.screen_check ? checkNewScreen(row.observation, result.observation) : null;
    if (screen && screen.outcome !== 'clean') {
      await screenCheckFailed(deps, change, screen);
      return true;
    }
    scheduleStep(deps.queues, change);
    return true;
  };
  const { value } = (await changeTaskIfUnchanged(deps, seen, store)) ?? (await changeTaskLocked(deps, message.task_id, store));
  return { ok: value };
}

/**
 * The screen check found text aimed at the agent on a new app, window or site, or could not
 * read the new screen. As with the model's safety checks (`safety_checks`): ask for an
 * approval with `risk: high` whose denial stops the task, or stop it at once (also in
 * unattended mode, where nobody can approve).
 */
async function screenCheckFailed(deps: TaskLoopDeps, change: TaskChange, screen: Exclude<NewScreenCheck, { outcome: 'clean' }>): Promise<void> {
  const guardrails = change.row.agent_config.guardrails;
  const { part } = screen;
  const where = `${part.title || part.app}${part.site ? ` (${part.site})` : part.title && part.title !== part.app ? ` in ${part.app}` : ''}`;
  const reason =
    screen.outcome === 'found'
      ? `${where} shows text that tries to instruct the agent ("${screen.phrase}")`
      : `${where} could not be checked for text that tries to instruct the agent: ${screen.why}`;
  const stop = guardrails.mode === 'unattended' || guardrails.safety_checks === 'stop';
  change.event('guardrail', `Screen check: ${reason}.`, {
    verdict: stop ? 'block' : 'confirm',
    rule: 'screen_check',
    category: null,
    finding: screen.outcome,
    pattern: screen.outcome === 'found' ? screen.pattern : null,
    app: part.app,
    site: part.site,
    title: part.title,
  });
  if (stop) {
    await finish(deps, change, 'failed', `Stopped by the screen check: ${reason}`);
    return;
  }
  await openApproval(deps, change, { kind: 'safety_check', rule: 'screen_check', what: `Screen check: ${reason}. Let the agent go on?`, reason }, 'high');
}
