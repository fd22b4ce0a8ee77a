import type { TaskPhase, TaskRow, TaskStatus } from '../task-rows';
import type { TaskChange } from '../task-change';

/**
 * A task's place in the loop is its (status, phase): what it waits for next. These are all the
 * states there are, and every move the loop makes between them; `enterState` is the one place
 * the loop sets `status` or `phase`, and it refuses a move that is not in the table.
 *
 * | state            | waits for                                     | a task gets there by                      |
 * |------------------|-----------------------------------------------|-------------------------------------------|
 * | queued/model     | its first step job (`begin`)                  | being created (tasks.service)             |
 * | queued/scope     | the scope judge (`guardrails` queue)          | `begin`, when the agent has a scope       |
 * | running/model    | its next step job: a model turn, or the next queued action | `begin`, `scheduleStep`      |
 * | running/sleep    | a delayed step job (the agent sleeps)         | `scheduleStep(…, 'sleep')`                |
 * | running/computer | the result of the action out (`awaiting_act_id`) | `dispatch`                             |
 * | running/person   | an answer to its question or approval         | `openQuestion`, `openApproval`            |
 * | running/tool     | its HTTP tool call (`tool-calls` queue)       | `callTool`                                |
 * | completed, failed, stopped (phase null) | nothing: ended         | `finish`                                  |
 *
 * Within one change a task may pass through several states (a model turn that queues actions
 * goes running/model → running/computer; an approved safety check may open another approval).
 * `completed` comes only from the agent's own `done` move; `failed` and `stopped` from any
 * state (a limit, the sweep, the computer going away, a Stop).
 */
export type LoopState = 'queued/model' | 'queued/scope' | 'running/model' | 'running/sleep' | 'running/computer' | 'running/person' | 'running/tool' | 'completed' | 'failed' | 'stopped';

/** What a task in a state waits for; null once it ended. */
export type Awaited = 'step' | 'scope' | 'computer' | 'person' | 'tool' | null;

interface StateEntry {
  readonly status: TaskStatus;
  readonly phase: TaskPhase;
  readonly waitsFor: Awaited;
  readonly next: readonly LoopState[];
}

/** Any running state may move to any other (a turn's move, an answer's consequence). */
const RUNNING_ANY: readonly LoopState[] = ['running/model', 'running/sleep', 'running/computer', 'running/person', 'running/tool'];
const ENDED: readonly LoopState[] = [];

/** The allowed states and moves of the task loop (see above). */
export const LOOP_TRANSITIONS: Readonly<Record<LoopState, StateEntry>> = Object.freeze({
  'queued/model': { status: 'queued', phase: 'model', waitsFor: 'step', next: ['queued/scope', 'running/model', 'failed', 'stopped'] },
  'queued/scope': { status: 'queued', phase: 'scope', waitsFor: 'scope', next: ['running/model', 'failed', 'stopped'] },
  'running/model': { status: 'running', phase: 'model', waitsFor: 'step', next: [...RUNNING_ANY, 'completed', 'failed', 'stopped'] },
  'running/sleep': { status: 'running', phase: 'sleep', waitsFor: 'step', next: [...RUNNING_ANY, 'completed', 'failed', 'stopped'] },
  'running/computer': { status: 'running', phase: 'computer', waitsFor: 'computer', next: ['running/model', 'running/person', 'failed', 'stopped'] },
  'running/person': { status: 'running', phase: 'person', waitsFor: 'person', next: [...RUNNING_ANY, 'completed', 'failed', 'stopped'] },
  'running/tool': { status: 'running', phase: 'tool', waitsFor: 'tool', next: ['running/model', 'failed', 'stopped'] },
  completed: { status: 'completed', phase: null, waitsFor: null, next: ENDED },
  failed: { status: 'failed', phase: null, waitsFor: null, next: ENDED },
  stopped: { status: 'stopped', phase: null, waitsFor: null, next: ENDED },
});

/** The state a row is in (its (status, phase) named as in the table; not necessarily one of them). */
export function stateOf(row: Pick<TaskRow, 'status' | 'phase'>): string {
  return row.phase === null || row.status === 'completed' || row.status === 'failed' || row.status === 'stopped' ? row.status : `${row.status}/${row.phase}`;
}

/** What the task waits for, by the table; null for an ended task (or a state the table does not know). */
export function waitsFor(row: Pick<TaskRow, 'status' | 'phase'>): Awaited {
  return (LOOP_TRANSITIONS as Record<string, StateEntry | undefined>)[stateOf(row)]?.waitsFor ?? null;
}

/** A move the table does not allow: a bug in the loop, never the caller's doing. */
export class IllegalTransition extends Error {
  override readonly name = 'IllegalTransition';
  constructor(
    readonly from: string,
    readonly to: LoopState,
  ) {
    super(`The task loop may not move a task from ${from} to ${to}`);
  }
}

/** Throws `IllegalTransition` unless the table allows moving from `from` to `to`. */
export function assertTransition(from: string, to: LoopState): void {
  const entry = (LOOP_TRANSITIONS as Record<string, StateEntry | undefined>)[from];
  if (!entry?.next.includes(to)) throw new IllegalTransition(from, to);
}

/**
 * Moves the task of `change` to state `to`, with the other fields the move writes; the one place
 * the loop sets `status` and `phase`. A move to the state the task is in only sets `fields`
 * when the table allows it (running/model → running/model: a new step job).
 */
export function enterState(change: TaskChange, to: LoopState, fields: Partial<TaskRow> = {}): void {
  assertTransition(stateOf(change.row), to);
  const { status, phase } = LOOP_TRANSITIONS[to];
  change.set(change.row.status === status ? { phase, ...fields } : { status, phase, ...fields });
}
