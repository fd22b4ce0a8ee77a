import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { JobQueues } from '../queues/job-queues';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import type { AgentService } from '../agents/agents.service';
import type { SessionsService } from '../sessions/sessions.service';
import type { CreateTaskInput, CreatedTask } from '../tasks/create-task';
import { findTaskById } from '../tasks/tasks.repository';
import type { TaskChangeObserver } from '../tasks/task-change';
import type { MachinesService } from '../machines/machines.service';
import { machineEnded, type CommandRow, type MachineRow } from '../machines/machine-rows';
import { latestCommand } from '../machines/machines.repository';
import { findRunnerLabels } from '../runners/runners.repository';
import { findStartStateById, findStartStateByTask, openStatesPastTheirTime, startStatesNeedingAttention, updateStartState } from './start-states.repository';
import { stateDisk, type StartStateRow } from './start-state-rows';
import { START_STATE_TRANSITIONS, startStateMove, type StartStateAct } from './start-state-transitions';

export interface StartStateFlowDeps {
  db: Knex;
  /** Now, for an open state's `view_expires_at` and the flow's job ids. */
  clock: Clock;
  queues: JobQueues;
  logger: Logger;
  machines: MachinesService;
  agents: Pick<AgentService, 'resolveForTask'>;
  sessions: Pick<SessionsService, 'getRow'>;
  createTask: (trx: Knex.Transaction, input: CreateTaskInput) => Promise<CreatedTask & { afterCommit: () => Promise<unknown> }>;
}

/** How long a start state's setup script may run. */
export const SETUP_SCRIPT_TIMEOUT_MS = 10 * 60_000;
/** Machines a build gets before it fails (one lost with its runner is replaced). */
const MACHINE_ATTEMPTS = 3;
/** A build or save this quiet is advanced by the sweep (its job may have been lost). */
const SWEEP_QUIET_MS = 30_000;
/** Open states closed by one look (`closeExpired`). */
const CLOSE_BATCH = 100;
/** The end of a script's output kept in a failed state's `error`. */
const OUTPUT_TAIL = 2_000;

/** What a step of the flow does once its transaction commits (send a command, release a machine…). */
type AfterCommit = () => Promise<unknown> | void;

/**
 * How a start state gets from one status to the next (docs/evals.md, "Start states"): each time
 * its machine changes, a command about it is answered, its task ends or its open machine's time
 * is up, `advance` reads where things are and takes the next step, under the state's row lock.
 * The statuses, the act that advances each and the flow's moves between them are
 * `START_STATE_TRANSITIONS` (start-state-transitions.ts).
 * Runs in worker-evals (`start-state-advance` jobs, and a look every second for open states past
 * their time), so it may be told the same thing twice: every step looks at what is recorded
 * before acting.
 */
export class StartStateFlow {
  /** What `advance` does for a state whose machine runs, by the name `START_STATE_TRANSITIONS` gives it. */
  private readonly acts: Readonly<Record<StartStateAct, (trx: Knex.Transaction, state: StartStateRow, machine: MachineRow, after: AfterCommit[]) => Promise<void>>>;

  constructor(private readonly deps: StartStateFlowDeps) {
    this.acts = Object.freeze({
      scriptStep: (trx, state, machine, after) => this.scriptStep(trx, state, machine, after),
      instructionStep: (trx, state, machine, after) => this.instructionStep(trx, state, machine, after),
      saveStep: (trx, state, machine, after) => this.saveStep(trx, state, machine, after),
    });
  }

  /** Queues an `advance` (after a machine change, a request, an open machine's time). */
  advanceSoon(stateId: string, why: string, delayMs = 0): Promise<unknown> {
    return queueAdvance(this.deps.queues, this.deps.clock, stateId, why, delayMs);
  }

  /**
   * Open states past their `view_expires_at` close, oldest first (worker-evals looks every
   * second; the sweep looks too). Returns how many were looked at.
   */
  async closeExpired(): Promise<number> {
    const ids = await openStatesPastTheirTime(this.deps.db, CLOSE_BATCH);
    for (const id of ids) {
      // One that cannot close now does not hold up the others; the next look tries it again.
      await this.advance(id).catch((error: unknown) => this.deps.logger.warn({ err: error, start_state: id }, 'could not close an open start state past its time'));
    }
    return ids.length;
  }

  /** The sweep: open machines past their time, states whose machine or task ended unnoticed, and quiet builds and saves. */
  async sweep(): Promise<number> {
    const ids = await startStatesNeedingAttention(this.deps.db, SWEEP_QUIET_MS, 200);
    for (const id of ids) await this.advance(id);
    return ids.length;
  }

  /** Takes the state's next step (`step`) under its row lock, unless a look without the lock answers it; what the step leaves for after the commit runs then. */
  async advance(stateId: string): Promise<void> {
    if (await this.answeredWithoutLock(stateId)) return;
    const after: AfterCommit[] = [];
    await this.deps.db.transaction(async (trx) => {
      const state = await findStartStateById(trx, stateId, true);
      if (!state) return;
      const machine = state.machine_id ? await this.deps.machines.get(state.machine_id, trx) : undefined;
      await this.step(trx, state, machine, after);
    });
    for (const work of after) await work();
  }

  /**
   * Told of a change that asks nothing of it, a state is answered from two reads, without taking
   * its row's lock from a request; true when it was. Two such states: one done with (deleted,
   * ready or failed) whose machine has ended (it was just destroyed), and an open one whose
   * machine is live and whose time is not up (`closeExpired` closes it then). Neither changes
   * back without queuing an advance of its own.
   */
  private async answeredWithoutLock(stateId: string): Promise<boolean> {
    const state = await findStartStateById(this.deps.db, stateId);
    if (!state?.machine_id) return false;
    const done = state.deleted_at !== null || state.status === 'ready' || state.status === 'failed';
    const openInTime = state.status === 'open' && state.view_expires_at !== null && state.view_expires_at.getTime() > this.deps.clock.now().getTime();
    if (!done && !openInTime) return false;
    const machine = await this.deps.machines.get(state.machine_id);
    return machine !== undefined && (done ? machineEnded(machine.status) : isLive(machine));
  }

  /**
   * One step: a state done with lets a live machine go; an open one past its time closes; a lost
   * machine is `machineGone`; with its machine running, the act of its status and method
   * (`START_STATE_TRANSITIONS`).
   */
  private async step(trx: Knex.Transaction, state: StartStateRow, machine: MachineRow | undefined, after: AfterCommit[]): Promise<void> {
    const release = (reason: string) => machine && after.push(() => this.deps.machines.release(machine.id, reason));
    const entry = START_STATE_TRANSITIONS[state.status];
    if (state.deleted_at || entry.ended) {
      // Nothing is running for it any more; a machine still attached is let go.
      if (machine && isLive(machine)) release('The start state no longer needs its machine');
      return;
    }
    if (!machine) return;
    if (entry.closesAtViewExpiry && state.view_expires_at && state.view_expires_at.getTime() <= this.deps.clock.now().getTime()) {
      release('The open machine was not saved in time');
      await this.revert(trx, state, 'The open machine closed unsaved at view.expires_at', 'start_state.closed');
      return;
    }
    if (machineEnded(machine.status)) {
      await this.machineGone(trx, state, machine, after);
      return;
    }
    if (machine.status !== 'running') return;
    const act = entry.acts[state.method];
    if (act) await this.acts[act](trx, state, machine, after);
  }

  /** A script build: run the script, then save what it made as version 1 (or fail with its exit status and output). */
  private async scriptStep(trx: Knex.Transaction, state: StartStateRow, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const run = await latestCommand(trx, machine.id, 'machine.run');
    if (!run) {
      const command = await this.deps.machines.runScript(machine, state.script ?? '', SETUP_SCRIPT_TIMEOUT_MS, trx);
      after.push(() => this.deps.machines.send(command));
      return;
    }
    if (run.status === 'sent') return;
    const exitCode = run.result?.exit_code;
    if (run.status === 'done' && exitCode === 0) {
      await this.saveStep(trx, state, machine, after);
      return;
    }
    after.push(() => this.deps.machines.release(machine.id, 'The setup script failed'));
    await this.fail(trx, state, scriptFailure(run));
  }

  /** An instruction build: an agent task carries it out on the machine; completed, the machine is saved. */
  private async instructionStep(trx: Knex.Transaction, state: StartStateRow, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    if (!state.task_id) {
      try {
        const agent = await this.deps.agents.resolveForTask(state.org_id, state.agent_id ?? 'default', 'published', trx);
        const session = await this.deps.sessions.getRow(state.org_id, machine.session_code, trx);
        const created = await this.deps.createTask(trx, { session, agent, prompt: state.instruction ?? '', actor: null, metadata: { start_state_id: state.id } });
        await updateStartState(trx, state.id, { task_id: created.row.id });
        after.push(created.afterCommit);
      } catch (error) {
        after.push(() => this.deps.machines.release(machine.id, 'The instruction could not start'));
        await this.fail(trx, state, `The instruction's task could not start: ${(error as Error).message}`);
      }
      return;
    }
    const task = await findTaskById(trx, state.task_id);
    if (!task || task.status === 'queued' || task.status === 'running') return;
    if (task.status === 'completed') {
      await this.saveStep(trx, state, machine, after);
      return;
    }
    after.push(() => this.deps.machines.release(machine.id, 'The instruction\'s task did not complete'));
    await this.fail(trx, state, `The instruction's task ${task.id} ${task.status}: ${task.error ?? 'stopped before it finished'}`);
  }

  /**
   * Keeps the machine's disk as the next version, then lets the machine go: the state is ready.
   * A save that fails leaves the state at its last saved version.
   */
  private async saveStep(trx: Knex.Transaction, state: StartStateRow, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const next = state.version + 1;
    const save = await latestCommand(trx, machine.id, 'machine.save');
    if (!save) {
      const command = await this.deps.machines.save(machine, stateDisk(state, next), trx);
      after.push(() => this.deps.machines.send(command));
      return;
    }
    if (save.status === 'sent') return;
    after.push(() => this.deps.machines.release(machine.id, 'Saved'));
    if (save.status === 'failed') {
      await this.revert(trx, state, `The machine could not be saved (${save.error_code}): ${save.error}`, 'start_state.save_failed');
      return;
    }
    await updateStartState(trx, state.id, {
      ...startStateMove(state, 'ready'),
      version: next,
      runner_id: machine.runner_id,
      labels: machine.runner_id ? await findRunnerLabels(trx, machine.runner_id) : [],
      error: null,
      machine_id: null,
      view_token: null,
      view_expires_at: null,
    }, { orgId: state.org_id, actor: null, action: 'start_state.saved', objectType: 'start_state', objectId: state.id, data: { version: next, runner_id: machine.runner_id } });
  }

  /**
   * Its machine is gone (lost with its runner, or the runner could not make it). A build gets a
   * new machine (up to `MACHINE_ATTEMPTS`) when its disk is an image any runner may have;
   * otherwise it fails. An open or saving state returns to its last saved version.
   */
  private async machineGone(trx: Knex.Transaction, state: StartStateRow, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const why = machine.error ?? 'The machine stopped';
    if (state.status === 'building' && !machine.pinned_runner_id && state.machine_attempts < MACHINE_ATTEMPTS && !state.task_id) {
      const replacement = await this.deps.machines.request(trx, {
        orgId: state.org_id,
        owner: { kind: 'start_state', id: state.id },
        disk: machine.disk,
        os: machine.os,
        label: `start state ${state.id} (${state.method}), machine ${state.machine_attempts + 1}`,
      });
      await updateStartState(trx, state.id, { machine_id: replacement.id, machine_attempts: state.machine_attempts + 1 });
      after.push(() => this.deps.machines.placeNow(replacement.id));
      this.deps.logger.warn({ start_state: state.id, machine: machine.id, reason: why }, 'start state machine lost; building on a new one');
      return;
    }
    if (state.status === 'building') await this.fail(trx, state, `The machine was lost: ${why}`);
    else await this.revert(trx, state, `The machine was lost: ${why}`, 'start_state.closed');
  }

  /** Back to the last saved version (`ready`), or `failed` when it was never saved; the machine and view are gone. */
  private async revert(trx: Knex.Transaction, state: StartStateRow, why: string, action: string): Promise<void> {
    const { status } = startStateMove(state, state.version > 0 ? 'ready' : 'failed');
    await updateStartState(trx, state.id, { status, error: why, machine_id: null, view_token: null, view_expires_at: null }, { orgId: state.org_id, actor: null, action, objectType: 'start_state', objectId: state.id, data: { status, version: state.version, reason: why } });
  }

  private async fail(trx: Knex.Transaction, state: StartStateRow, why: string): Promise<void> {
    await updateStartState(trx, state.id, { ...startStateMove(state, 'failed'), error: why, machine_id: null, view_token: null, view_expires_at: null }, { orgId: state.org_id, actor: null, action: 'start_state.failed', objectType: 'start_state', objectId: state.id, data: { reason: why } });
  }
}

/** Queues a state's `advance` (worker-evals); what is lost in Redis the sweep finds. */
function queueAdvance(queues: JobQueues, clock: Clock, stateId: string, why: string, delayMs = 0): Promise<boolean> {
  return queues.enqueueOrLeaveToSweep(QUEUE_NAMES.evals, 'start-state-advance', { start_state_id: stateId }, {
    jobId: jobId('start-state', stateId, why.replace(/:/g, '-'), clock.now().getTime()),
    delay: delayMs,
  });
}

/** After a task ends: the start state it was building (if any) advances. */
export function startStateTasks(deps: { db: Knex; queues: JobQueues; clock: Clock }): TaskChangeObserver {
  return {
    name: 'start-state-tasks',
    async taskChanged({ row, events }) {
      if (!events.some((event) => event.type === row.status && (row.status === 'completed' || row.status === 'failed' || row.status === 'stopped'))) return;
      const state = await findStartStateByTask(deps.db, row.id);
      if (state) await queueAdvance(deps.queues, deps.clock, state.id, `task-${row.id}`);
    },
  };
}

const isLive = (machine: MachineRow) => !machineEnded(machine.status);

/** A failed script's `error`: its exit status and the end of its output, or why it did not finish. */
function scriptFailure(run: CommandRow): string {
  const output = typeof run.result?.output === 'string' ? run.result.output.slice(-OUTPUT_TAIL) : '';
  if (run.status === 'failed') return `The setup script did not finish (${run.error_code}): ${run.error}${output ? `\n${output}` : ''}`;
  return `The setup script exited with status ${String(run.result?.exit_code)}${output ? `:\n${output}` : ''}`;
}
