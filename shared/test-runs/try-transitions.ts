import type { Knex } from '../db/knex';
import type { TryPhase, TryRow, TryStatus } from './test-run-rows';
import { updateTry } from './test-runs.repository';

/**
 * A try's place in its flow is its `phase` while it runs: what it waits for next. These are all
 * the states there are, what `TryFlow.advance` does in each when told of a change, and every move
 * the flow makes between them; `moveTry` is the one place the flow sets a try's `status` and
 * `phase`, and it refuses a move that is not in the table.
 *
 * | state   | waits for                                   | the act that advances it | a try gets there by                     |
 * |---------|---------------------------------------------|--------------------------|-----------------------------------------|
 * | queued  | a free slot (the scheduling pass)           | none: `TryScheduler`     | being created; an infrastructure retry; its machine waiting too long |
 * | machine | its machine to run                          | `afterMachine`           | the scheduler starting it               |
 * | setup   | the setup script's answer                   | `afterSetup`             | `afterMachine`, when the case has a setup script |
 * | task    | the agent's task to end (the simulated customer answers meanwhile) | `duringTask` | `afterMachine`, `afterSetup` |
 * | check   | the check script's answer                   | `afterCheck`             | `duringTask`, when the case has a check script |
 * | judge   | the rubric judge (no machine needed)        | `askJudge`               | `duringTask`, `afterCheck`, when the case has a rubric |
 * | done    | nothing: ended (`passed`, `failed`, `error`, `cancelled`) | none       | `end`, from any running state           |
 *
 * From any state that uses its machine the try may go back to `queued` (an infrastructure
 * retry, or a machine no runner took in time) or end (the run was cancelled, the retries ran
 * out). A queued try of a cancelled run is skipped by the run's cancel (`cancelQueuedTries`),
 * which is no move of the flow.
 */
export type TryState = 'queued' | TryPhase;

/** What `TryFlow.advance` does in a state (`TryFlow`'s acts, by name). */
export type TryAct = 'afterMachine' | 'afterSetup' | 'duringTask' | 'afterCheck' | 'askJudge';

interface TryStateEntry {
  /** The try's status in this state; `ended` for `done`, whose status is the outcome. */
  readonly status: 'queued' | 'running' | 'ended';
  /** The act that advances a try in this state; null when the flow does not (queued, ended). */
  readonly act: TryAct | null;
  /** Whether the act needs the try's machine running (the judge reads the transcript only). */
  readonly usesMachine: boolean;
  readonly next: readonly TryState[];
}

/** Any state that uses a machine may lose it (back to the queue) or end. */
const REQUEUED_OR_ENDED: readonly TryState[] = ['queued', 'done'];

/** The allowed states and moves of a try (see above). */
export const TRY_TRANSITIONS: Readonly<Record<TryState, TryStateEntry>> = Object.freeze({
  queued: { status: 'queued', act: null, usesMachine: false, next: ['machine'] },
  machine: { status: 'running', act: 'afterMachine', usesMachine: true, next: ['setup', 'task', ...REQUEUED_OR_ENDED] },
  setup: { status: 'running', act: 'afterSetup', usesMachine: true, next: ['task', ...REQUEUED_OR_ENDED] },
  task: { status: 'running', act: 'duringTask', usesMachine: true, next: ['check', 'judge', ...REQUEUED_OR_ENDED] },
  check: { status: 'running', act: 'afterCheck', usesMachine: true, next: ['judge', ...REQUEUED_OR_ENDED] },
  judge: { status: 'running', act: 'askJudge', usesMachine: false, next: ['done'] },
  done: { status: 'ended', act: null, usesMachine: false, next: [] },
});

/** The state a row is in, named as in the table (a running try's phase; not necessarily one of the table's). */
export function stateOfTry(row: Pick<TryRow, 'status' | 'phase'>): string {
  if (row.status === 'queued') return 'queued';
  if (row.status !== 'running') return 'done';
  return row.phase ?? 'running';
}

/** The table's entry for the row's state; undefined for a state the table does not know. */
export function tryStateEntry(row: Pick<TryRow, 'status' | 'phase'>): TryStateEntry | undefined {
  return (TRY_TRANSITIONS as Record<string, TryStateEntry | undefined>)[stateOfTry(row)];
}

/** A move the table does not allow: a bug in the flow, never the caller's doing. */
export class IllegalTryMove extends Error {
  override readonly name = 'IllegalTryMove';
  constructor(
    readonly from: string,
    readonly to: TryState,
  ) {
    super(`A try may not move from ${from} to ${to}`);
  }
}

/**
 * The fields that move a try from the row's state to `to` (its `status` and `phase`, with
 * `fields`); throws `IllegalTryMove` unless the table allows the move. A move to `done` takes its
 * status (the outcome) from `fields`.
 */
export function tryMove(row: Pick<TryRow, 'status' | 'phase'>, to: TryState, fields: Partial<TryRow> = {}): Partial<TryRow> {
  const from = stateOfTry(row);
  if (!tryStateEntry(row)?.next.includes(to)) throw new IllegalTryMove(from, to);
  if (to === 'done') {
    if (!fields.status || fields.status === 'queued' || fields.status === 'running') throw new IllegalTryMove(from, to);
    return { ...fields, phase: 'done' };
  }
  const status = TRY_TRANSITIONS[to].status as Extract<TryStatus, 'queued' | 'running'>;
  return { ...fields, status, phase: to === 'queued' ? null : to };
}

/** Moves the try of `row` (as read under its lock) to state `to`, with the other fields the move writes: `tryMove`, written. */
export async function moveTry(trx: Knex.Transaction, row: TryRow, to: TryState, fields: Partial<TryRow> = {}): Promise<TryRow> {
  return updateTry(trx, row.id, tryMove(row, to, fields));
}
