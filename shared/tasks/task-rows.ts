import type { WithIsoTimestamps } from '../db/timestamps';
import type { DesktopAction, Observation } from '../desktop/protocol';
import type { AgentConfig } from '../agents/agent-config';
import type { TurnOutcome, ActionOutcome } from '../models/model.types';
import type { ApprovalDetail, GuardrailContext, QuestionDetail } from './loop/guard-state';

/*
 * The task tables' rows and the shapes stored in them, in a home of their own: the repository
 * reads and writes them, the task object and the loop read them, and none of those needs the other.
 */

export type TaskStatus = 'queued' | 'running' | 'completed' | 'failed' | 'stopped';
/** What the loop waits for: a step job, the computer, a person, a tool call, a sleep; null once ended (shared/tasks/loop/transitions.ts). */
export type TaskPhase = 'model' | 'computer' | 'person' | 'tool' | 'sleep' | 'scope' | null;

/** The open question or approval of a task (`task.pending`). */
export type TaskPending =
  | { type: 'question'; question_id: string; question: string; options: string[]; customer_can_answer: boolean }
  | {
      type: 'approval';
      approval_id: string;
      what: string;
      kind: 'action' | 'agent_request' | 'tool' | 'safety_check';
      category: string | null;
      risk: 'normal' | 'high';
      customer_can_approve: boolean;
      expires_at: string | null;
    };

export interface TaskRow extends Record<string, unknown> {
  seq: number;
  id: string;
  org_id: string;
  session_id: string;
  agent_id: string;
  agent_version: number;
  agent_draft: boolean;
  agent_config: AgentConfig;
  model: string;
  effort: 'low' | 'medium' | 'high';
  prompt: string;
  request_id: string | null;
  metadata: Record<string, string>;
  /** Values the guardrails treat as secrets for this task (shared/tasks/create-task.ts); never shown. */
  secrets: string[] | null;
  status: TaskStatus;
  result: string | null;
  error: string | null;
  pending: TaskPending | null;
  cursor: number;
  steps: number;
  phase: TaskPhase;
  current_job_id: string | null;
  awaiting_act_id: string | null;
  phase_since: Date | null;
  queued_actions: DesktopAction[];
  turn_results: ActionOutcome[];
  last_outcome: TurnOutcome | null;
  model_state: unknown;
  observation: Observation | null;
  /** The guardrails' context: the computer (device, capabilities) and what they learnt since (`GuardrailContext`). */
  guard_state: GuardrailContext;
  frames: number;
  actions: number;
  active_ms: number;
  running_since: Date | null;
  billed_minutes: number | null;
  created_at: Date;
  updated_at: Date;
  started_at: Date | null;
  ended_at: Date | null;
  /** The row version read with it (PostgreSQL's `xmin`), when read for an unlocked change. */
  row_version?: string;
}

/** The columns the spec's Task object is made of (not the loop's working state). */
export const TASK_OBJECT_COLUMNS = [
  'id', 'org_id', 'session_id', 'agent_id', 'agent_version', 'agent_draft', 'request_id', 'status', 'prompt', 'result', 'error',
  'pending', 'cursor', 'metadata', 'created_at', 'updated_at', 'active_ms', 'running_since', 'billed_minutes', 'frames',
] as const;
/** Of those, the timestamps the API shows: its reads have them as its text (shared/db/timestamps.ts). */
export const TASK_OBJECT_TIMESTAMPS = ['created_at', 'updated_at'] as const;
export type TaskObjectRow = WithIsoTimestamps<Pick<TaskRow, (typeof TASK_OBJECT_COLUMNS)[number]>, (typeof TASK_OBJECT_TIMESTAMPS)[number]>;

export interface TaskEventRow {
  task_id: string;
  cursor: number;
  type: string;
  message: string;
  data: Record<string, unknown>;
  ts: Date;
}

/** A recording frame, written with the change that stores the action's result. */
export interface TaskFrameRow {
  task_id: string;
  seq: number;
  width: number;
  height: number;
  png: Buffer;
  created_at: Date;
}

export type TaskItemKind = 'question' | 'approval';

interface TaskItemFields {
  id: string;
  task_id: string;
  state: 'open' | 'answered' | 'closed';
  answered_by: 'customer' | 'operator' | 'timeout' | null;
  answer: string | null;
  decision: 'approve' | 'deny' | null;
  note: string | null;
  created_at: Date;
  answered_at: Date | null;
}

/** What a question or an approval holds: what the loop needs to carry on once it is answered. */
export type TaskItemContent = { kind: 'question'; detail: QuestionDetail } | { kind: 'approval'; detail: ApprovalDetail };

/** A question or an approval of a task. */
export type TaskItemRow = TaskItemFields & TaskItemContent;

/** A new (open) item. */
export type NewTaskItem = Pick<TaskItemFields, 'id' | 'task_id' | 'created_at'> & TaskItemContent;
