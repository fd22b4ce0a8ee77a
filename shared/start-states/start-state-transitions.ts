import type { StartStateMethod, StartStateRow, StartStateStatus } from './start-state-rows';

/**
 * A start state's statuses, what `StartStateFlow.advance` does in each once its machine runs,
 * and the moves the flow makes between them; `startStateMove` gives the fields of a move and
 * refuses one that is not in the table. (The service makes the others: a state is created
 * `building` or `open`, a ready one is opened, an open one is asked to save.)
 *
 * | status   | waits for                                              | the act that advances it, by method | the flow moves it to |
 * |----------|--------------------------------------------------------|-------------------------------------|----------------------|
 * | building | its script (`script`) or its agent's task (`instruction`), then the save of its disk | `scriptStep`, `instructionStep` | `ready` (saved), `failed` |
 * | open     | a person at its machine to ask for a save, or its `view_expires_at` (then it closes) | none                | `ready` or `failed` (its last saved version, or none) |
 * | saving   | the save of its machine's disk                          | `saveStep`                          | `ready` (saved, or its last saved version), `failed` |
 * | ready    | nothing: a machine still attached is let go             | none                                | none                 |
 * | failed   | nothing: likewise                                       | none                                | none                 |
 *
 * Before its act, every state whose machine has ended goes to `machineGone` (a build gets a new
 * machine, up to its attempts; an open or saving state returns to its last saved version).
 */
export type StartStateAct = 'scriptStep' | 'instructionStep' | 'saveStep';

interface StartStateEntry {
  /** Nothing runs for the state any more: a live machine still attached is let go. */
  readonly ended: boolean;
  /** The state closes once its `view_expires_at` has passed. */
  readonly closesAtViewExpiry: boolean;
  /** What advances a state with a running machine, by the state's method. */
  readonly acts: Readonly<Partial<Record<StartStateMethod, StartStateAct>>>;
  readonly next: readonly StartStateStatus[];
}

const SAVED_OR_NOT: readonly StartStateStatus[] = ['ready', 'failed'];

/** The start state's statuses and the flow's moves between them (see above). */
export const START_STATE_TRANSITIONS: Readonly<Record<StartStateStatus, StartStateEntry>> = Object.freeze({
  building: { ended: false, closesAtViewExpiry: false, acts: { script: 'scriptStep', instruction: 'instructionStep' }, next: SAVED_OR_NOT },
  open: { ended: false, closesAtViewExpiry: true, acts: {}, next: SAVED_OR_NOT },
  saving: { ended: false, closesAtViewExpiry: false, acts: { hand: 'saveStep', script: 'saveStep', instruction: 'saveStep' }, next: SAVED_OR_NOT },
  ready: { ended: true, closesAtViewExpiry: false, acts: {}, next: [] },
  failed: { ended: true, closesAtViewExpiry: false, acts: {}, next: [] },
});

/** A move the table does not allow: a bug in the flow, never the caller's doing. */
export class IllegalStartStateMove extends Error {
  override readonly name = 'IllegalStartStateMove';
  constructor(
    readonly from: StartStateStatus,
    readonly to: StartStateStatus,
  ) {
    super(`The start state flow may not move a state from ${from} to ${to}`);
  }
}

/** The state's `status` after the move to `to`; throws `IllegalStartStateMove` unless the table allows it. */
export function startStateMove(state: Pick<StartStateRow, 'status'>, to: StartStateStatus): { status: StartStateStatus } {
  if (!START_STATE_TRANSITIONS[state.status]?.next.includes(to)) throw new IllegalStartStateMove(state.status, to);
  return { status: to };
}
