import type { Capabilities, DesktopAction, DeviceInfo, GuardrailCategory } from '../../desktop/protocol';
import type { AddressBarBuffer } from '../../guardrails/engine';
import type { ModelMove } from '../../models/model.types';
import type { RecordedAction } from '../typed-text';

/**
 * The agent's own approval request names the category of its next step; on Windows and before
 * app 1.0.20 it is the only source of categories. It is consumed by the next model turn.
 */
export interface DeclaredCategory {
  category: GuardrailCategory;
  decision: 'approve' | 'deny';
}

/**
 * What the guardrails judge a task's actions with besides the action, kept between actions: the
 * computer the task began on (its device and capabilities) and what the guardrails have learnt
 * since (the address bar as typed, the scope verdict, declared categories, a safety approval).
 * `{}` until the task begins. Its column keeps its older name, `tasks.guard_state`: renaming a
 * column under running processes breaks the ones still on the old code.
 */
export interface GuardrailContext {
  /** The computer the task began on (from its session's hello). */
  device?: DeviceInfo;
  capabilities?: Capabilities;
  addressBar?: AddressBarBuffer | null;
  /** The buffer to keep once the action out now has run. */
  pendingAddressBar?: AddressBarBuffer | null;
  /** Set once the scope check (`guardrails.scope`) found the task in scope. */
  scope?: 'in_scope';
  /** The category the agent named in its latest approval request, and how that was decided. */
  declared?: DeclaredCategory | null;
  /** The declaration the actions of the current turn are judged with (see `judgeWithDeclared`). */
  stepDeclared?: DeclaredCategory | null;
  /** A person approved the safety check the model raised on its current move (told to the model once). */
  safetyApproved?: boolean;
}

/** What an approval item holds so that the loop can carry on once it is decided (`task_items.detail`). */
export type ApprovalDetail =
  /** `action` without typed text: that waits in `queued_actions` (shared/tasks/typed-text.ts). */
  | { kind: 'action'; what: string; action: DesktopAction | RecordedAction; category: GuardrailCategory | null; rule: string; addressBar: AddressBarBuffer | null }
  | { kind: 'agent_request'; what: string; category: GuardrailCategory | null }
  | { kind: 'tool'; what: string; tool: string; arguments: Record<string, unknown> }
  | { kind: 'safety_check'; what: string; move: ModelMove }
  /** The screen check found text aimed at the agent, or could not check a new screen. */
  | { kind: 'safety_check'; rule: 'screen_check'; what: string; reason: string };

/** What a question item holds (`task_items.detail`). */
export interface QuestionDetail {
  question: string;
  options: string[];
}
