import { expect } from 'chai';
import type { TryRow } from '../../shared/test-runs/test-run-rows';
import { IllegalTryMove, stateOfTry, TRY_TRANSITIONS, tryMove, tryStateEntry, type TryState } from '../../shared/test-runs/try-transitions';
import { IllegalStartStateMove, START_STATE_TRANSITIONS, startStateMove } from '../../shared/start-states/start-state-transitions';
import type { StartStateStatus } from '../../shared/start-states/start-state-rows';

const TRY_STATES = Object.keys(TRY_TRANSITIONS) as TryState[];

/**
 * Every move the try flow's code makes, written down apart from the table (by the function
 * making it), so that a move added to the code without the table, or dropped from the table
 * while the code still makes it, fails here before it fails a try.
 */
const TRY_MOVES: Array<[string, TryState, TryState]> = [
  ['TryScheduler.startOnMachine', 'queued', 'machine'],
  ['afterMachine: the case has a setup script', 'machine', 'setup'],
  ['afterMachine → startTask: no setup script', 'machine', 'task'],
  ['afterSetup → startTask', 'setup', 'task'],
  ['duringTask: the case has a check script', 'task', 'check'],
  ['duringTask → score: a rubric, no check script', 'task', 'judge'],
  ['duringTask → score → end: neither', 'task', 'done'],
  ['afterCheck → score: a rubric', 'check', 'judge'],
  ['afterCheck → score → end', 'check', 'done'],
  ['judge → end', 'judge', 'done'],
  ['step: the run was cancelled, while the judge reads', 'judge', 'done'],
  ...(['machine', 'setup', 'task', 'check'] as TryState[]).flatMap((from): Array<[string, TryState, TryState]> => [
    [`infrastructureFailed / a machine no runner took in time (${from})`, from, 'queued'],
    [`the run was cancelled, or the retries ran out (${from})`, from, 'done'],
  ]),
];

const runningIn = (phase: TryRow['phase']): Pick<TryRow, 'status' | 'phase'> => ({ status: 'running', phase });
const rowIn = (state: TryState): Pick<TryRow, 'status' | 'phase'> => (state === 'queued' ? { status: 'queued', phase: null } : state === 'done' ? { status: 'passed', phase: 'done' } : runningIn(state));

describe('a try\'s transition table (TRY_TRANSITIONS)', () => {
  it('names each state as stateOfTry does, and moves only to states of the table', () => {
    for (const state of TRY_STATES) {
      expect(stateOfTry(rowIn(state))).to.equal(state);
      for (const next of TRY_TRANSITIONS[state].next) expect(TRY_STATES, `${state} → ${next}`).to.include(next);
    }
  });

  it('allows every move the flow makes, and no other', () => {
    const made = new Set(TRY_MOVES.map(([, from, to]) => `${from} → ${to}`));
    for (const [why, from, to] of TRY_MOVES) expect(() => tryMove(rowIn(from), to, { status: 'passed' }), why).to.not.throw();
    for (const from of TRY_STATES) {
      for (const to of TRY_STATES) {
        if (!made.has(`${from} → ${to}`)) expect(() => tryMove(rowIn(from), to, { status: 'passed' }), `${from} → ${to}`).to.throw(IllegalTryMove);
      }
    }
  });

  it('writes the status and phase of the state moved to; an end takes its status from the outcome', () => {
    expect(tryMove(rowIn('queued'), 'machine', { machine_id: 'mc_1' })).to.deep.equal({ machine_id: 'mc_1', status: 'running', phase: 'machine' });
    expect(tryMove(rowIn('task'), 'queued', { machine_id: null })).to.deep.equal({ machine_id: null, status: 'queued', phase: null });
    expect(tryMove(rowIn('check'), 'done', { status: 'failed' })).to.deep.equal({ status: 'failed', phase: 'done' });
    expect(() => tryMove(rowIn('check'), 'done', {})).to.throw(IllegalTryMove);
  });

  it('has an act for every running state, and only the judge acts without the machine', () => {
    for (const state of TRY_STATES) {
      const entry = TRY_TRANSITIONS[state];
      expect(entry.act !== null, state).to.equal(entry.status === 'running');
      expect(entry.usesMachine, state).to.equal(entry.status === 'running' && state !== 'judge');
    }
    expect(tryStateEntry(runningIn(null))).to.equal(undefined);
  });
});

describe('a start state\'s transition table (START_STATE_TRANSITIONS)', () => {
  const statuses = Object.keys(START_STATE_TRANSITIONS) as StartStateStatus[];
  /** The flow's moves: a save (saveStep), a revert to the last saved version (revert), a failure (fail, machineGone). */
  const made = new Set(['building → ready', 'building → failed', 'open → ready', 'open → failed', 'saving → ready', 'saving → failed']);

  it('allows every move the flow makes, and no other', () => {
    for (const from of statuses) {
      for (const to of statuses) {
        if (made.has(`${from} → ${to}`)) expect(startStateMove({ status: from }, to)).to.deep.equal({ status: to });
        else expect(() => startStateMove({ status: from }, to), `${from} → ${to}`).to.throw(IllegalStartStateMove);
      }
    }
  });

  it('builds by script or instruction, saves whatever the method, and closes only an open state at its time', () => {
    expect(START_STATE_TRANSITIONS.building.acts).to.deep.equal({ script: 'scriptStep', instruction: 'instructionStep' });
    expect(Object.values(START_STATE_TRANSITIONS.saving.acts)).to.deep.equal(['saveStep', 'saveStep', 'saveStep']);
    expect(statuses.filter((status) => START_STATE_TRANSITIONS[status].closesAtViewExpiry)).to.deep.equal(['open']);
    expect(statuses.filter((status) => START_STATE_TRANSITIONS[status].ended)).to.deep.equal(['ready', 'failed']);
  });
});
