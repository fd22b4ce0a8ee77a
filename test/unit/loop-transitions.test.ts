import { expect } from 'chai';
import { TaskChange } from '../../shared/tasks/task-change';
import type { TaskRow } from '../../shared/tasks/task-rows';
import { assertTransition, enterState, IllegalTransition, LOOP_TRANSITIONS, stateOf, waitsFor, type LoopState } from '../../shared/tasks/loop/transitions';

const STATES = Object.keys(LOOP_TRANSITIONS) as LoopState[];
const ENDS: LoopState[] = ['completed', 'failed', 'stopped'];

/**
 * Every move the loop's code makes, written down apart from the table (by the function making
 * it), so that a move added to the code without the table, or dropped from the table while the
 * code still makes it, fails here before it fails a task.
 */
const LOOP_MOVES: Array<[string, string, LoopState]> = [
  ['begin: the agent has a scope', 'queued/model', 'queued/scope'],
  ['begin: the task starts', 'queued/model', 'running/model'],
  ['begin after the scope judge said in scope', 'queued/scope', 'running/model'],
  ['begin: the computer is gone or cannot run the task', 'queued/model', 'failed'],
  ['scopeJudged: off scope', 'queued/scope', 'failed'],
  ['stop before it began', 'queued/model', 'stopped'],
  ['stop during the scope check', 'queued/scope', 'stopped'],
  ['dispatch: the first look at the screen', 'running/model', 'running/computer'],
  ['scheduleStep: a move that needs no computer (file, refused, empty)', 'running/model', 'running/model'],
  ['scheduleStep: the agent sleeps', 'running/model', 'running/sleep'],
  ['openQuestion / openApproval from a model turn', 'running/model', 'running/person'],
  ['callTool from a model turn', 'running/model', 'running/tool'],
  ['finish: the agent is done', 'running/model', 'completed'],
  ['finish: a limit, the model failed, the agent gave up', 'running/model', 'failed'],
  ['a model turn after a sleep sends an action', 'running/sleep', 'running/computer'],
  ['a model turn after a sleep needs no computer', 'running/sleep', 'running/model'],
  ['a model turn after a sleep sleeps again', 'running/sleep', 'running/sleep'],
  ['a model turn after a sleep calls a tool', 'running/sleep', 'running/tool'],
  ['a model turn after a sleep asks', 'running/sleep', 'running/person'],
  ['a model turn after a sleep is done', 'running/sleep', 'completed'],
  ['receiveResult: the next step', 'running/computer', 'running/model'],
  ['receiveResult: the screen check asks', 'running/computer', 'running/person'],
  ['receiveResult: the screen check stops / act timeout', 'running/computer', 'failed'],
  ['stop while an action is out', 'running/computer', 'stopped'],
  ['applyAnswer: the next step', 'running/person', 'running/model'],
  ['applyAnswer: an approved action is sent', 'running/person', 'running/computer'],
  ['applyAnswer: an approved tool is called', 'running/person', 'running/tool'],
  ['applyAnswer: an approved move asks again', 'running/person', 'running/person'],
  ['applyAnswer: an approved move sleeps', 'running/person', 'running/sleep'],
  ['applyAnswer: an approved move is done', 'running/person', 'completed'],
  ['applyAnswer: a safety check denied', 'running/person', 'failed'],
  ['toolCallFinished', 'running/tool', 'running/model'],
  ['the sweep: past the running-time limit while a tool runs', 'running/tool', 'failed'],
  ['stop while a tool runs', 'running/tool', 'stopped'],
];

const row = (status: TaskRow['status'], phase: TaskRow['phase']): TaskRow => ({ id: 'task_1', status, phase, cursor: 0 }) as unknown as TaskRow;
const fromState = (state: LoopState) => ({ status: LOOP_TRANSITIONS[state].status, phase: LOOP_TRANSITIONS[state].phase });

describe('the task loop\'s transition table', () => {
  it('names every (status, phase) as stateOf does, and moves only to states of the table', () => {
    for (const state of STATES) {
      expect(stateOf(fromState(state))).to.equal(state);
      for (const next of LOOP_TRANSITIONS[state].next) expect(STATES, `${state} → ${next}`).to.include(next);
    }
  });

  it('allows every move the loop makes', () => {
    for (const [what, from, to] of LOOP_MOVES) expect(() => assertTransition(from, to), what).to.not.throw();
  });

  it('allows no move the loop does not make', () => {
    const made = new Set(LOOP_MOVES.map(([, from, to]) => `${from} → ${to}`));
    for (const from of STATES) {
      for (const to of LOOP_TRANSITIONS[from].next) {
        // Stopping and failing are possible from every state that has not ended; listed above by example.
        if (to === 'stopped' || to === 'failed') continue;
        expect(made.has(`${from} → ${to}`), `${from} → ${to} is in the table but no move of the loop's`).to.equal(true);
      }
    }
  });

  it('lets every task that has not ended fail or stop, and nothing leave an end', () => {
    for (const state of STATES) {
      if (ENDS.includes(state)) {
        expect(LOOP_TRANSITIONS[state].next, state).to.deep.equal([]);
        expect(LOOP_TRANSITIONS[state].waitsFor).to.equal(null);
      } else {
        expect(LOOP_TRANSITIONS[state].next, state).to.include.members(['failed', 'stopped']);
      }
    }
  });

  it('reaches every state from a new task, and completes only from a move of the agent', () => {
    const seen = new Set<LoopState>(['queued/model']);
    const queue: LoopState[] = ['queued/model'];
    while (queue.length) for (const next of LOOP_TRANSITIONS[queue.shift()!].next) if (!seen.has(next)) seen.add(next) && queue.push(next);
    expect([...seen].sort()).to.deep.equal([...STATES].sort());
    const completing = STATES.filter((state) => LOOP_TRANSITIONS[state].next.includes('completed'));
    expect(completing.sort()).to.deep.equal(['running/model', 'running/person', 'running/sleep']);
  });

  it('refuses moves that are not in it', () => {
    const refused: Array<[string, LoopState]> = [
      ['completed', 'running/model'],
      ['failed', 'stopped'],
      ['queued/model', 'completed'],
      ['queued/model', 'running/computer'],
      ['running/computer', 'running/computer'],
      ['running/computer', 'completed'],
      ['running/tool', 'running/person'],
      ['running/model', 'queued/model'],
      ['queued/person', 'running/model'],
    ];
    for (const [from, to] of refused) expect(() => assertTransition(from, to), `${from} → ${to}`).to.throw(IllegalTransition);
  });

  it('says what a task waits for', () => {
    expect(waitsFor(row('queued', 'model'))).to.equal('step');
    expect(waitsFor(row('queued', 'scope'))).to.equal('scope');
    expect(waitsFor(row('running', 'sleep'))).to.equal('step');
    expect(waitsFor(row('running', 'computer'))).to.equal('computer');
    expect(waitsFor(row('running', 'person'))).to.equal('person');
    expect(waitsFor(row('running', 'tool'))).to.equal('tool');
    expect(waitsFor(row('failed', null))).to.equal(null);
    // A state the table does not know waits for nothing: no step, act or sweep acts on it.
    expect(waitsFor(row('queued', 'computer'))).to.equal(null);
  });

  describe('enterState', () => {
    const now = new Date('2026-11-25T12:00:00Z');

    it('sets status and phase with the move\'s fields', () => {
      const change = new TaskChange(null, row('queued', 'model'), now, '');
      enterState(change, 'running/model', { started_at: now });
      expect(change.row).to.include({ status: 'running', phase: 'model', started_at: now });
      enterState(change, 'running/computer', { awaiting_act_id: 'act_1' });
      expect(change.row).to.include({ status: 'running', phase: 'computer', awaiting_act_id: 'act_1' });
      enterState(change, 'failed', { error: 'gone' });
      expect(change.row).to.include({ status: 'failed', phase: null, error: 'gone' });
    });

    it('refuses a move not in the table and changes nothing', () => {
      const change = new TaskChange(null, row('completed', null), now, '');
      expect(() => enterState(change, 'running/model', { current_job_id: 'step-task_1-9' })).to.throw(IllegalTransition, 'from completed to running/model');
      expect(change.empty).to.equal(true);
      expect(change.row).to.include({ status: 'completed', phase: null });
    });
  });
});
