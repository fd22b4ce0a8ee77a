import type { Knex } from '../db/knex';
import type { Logger } from '../logger';
import type { JobQueues } from '../queues/job-queues';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import { newId, randomString } from '../ids';
import type { SessionsService } from '../sessions/sessions.service';
import type { RunnerLink } from '../runners/runner-link';
import { machineEnded, type CommandAnswer, type CommandRow, type CommandType, type Disk, type MachineOwnerKind, type MachineRow } from './machine-rows';
import {
  findMachine,
  insertCommand,
  insertMachine,
  insertMachineLockingRunners,
  letGoMachine,
  isRunnerOnline,
  liveMachinesOn,
  lockCandidateRunners,
  lockOldestWaitingFor,
  lockRunnerIfOnline,
  type CommandMove,
  type NewMachineRow,
  lostRunnerIds,
  overdueCommandIds,
  placeOnFreeRunner,
  setTellOwnerWhenRunning,
  settleCommand,
  unansweredCommands,
  updateMachine,
  waitingMachineIds,
} from './machines.repository';

/** A machine's owner is told after each change of it (`why`): made (unless it said otherwise), failed, a command answered; not its destroy, which it asked for. */
export type NotifyOwner = (machine: Pick<MachineRow, 'id' | 'owner_kind' | 'owner_id'>, why: string) => Promise<void>;

export interface MachinesDeps {
  db: Knex;
  queues: JobQueues;
  link: RunnerLink;
  sessions: Pick<SessionsService, 'createMachineSession' | 'endMachineSession'>;
  logger: Logger;
  notifyOwner: NotifyOwner;
  /** Silence after which a connected runner reads offline; also how long a runner that dropped its connection has to come back before its machines are lost. */
  offlineAfterMs: number;
  /** How long a runner has to make a machine (boot and connect it). */
  bootTimeoutMs: number;
}

/** What a machine is asked for. */
export interface MachineRequest {
  orgId: string;
  owner: { kind: MachineOwnerKind; id: string };
  disk: Disk;
  os: string;
  /** A state disk lives on one runner: the machine can be made only there. */
  pinnedRunnerId?: string | null;
  /** For the machine session's audit row ("start state ss_… (script)"). */
  label: string;
  /**
   * False when the owner has nothing to do once the machine runs (an open start state, used
   * through its live view): its make's success is not told. Its failure, and every other
   * change, is. True when left out.
   */
  tellOwnerWhenRunning?: boolean;
}

/** Deadlines of the commands that do not carry their own. */
const SAVE_TIMEOUT_MS = 60_000;
const DESTROY_TIMEOUT_MS = 60_000;
const INPUT_TIMEOUT_MS = 30_000;
/** A script's deadline is its own timeout plus this, for the runner to answer. */
const SCRIPT_GRACE_MS = 30_000;
/** Waiting machines looked at by one placement pass. */
const PLACE_BATCH = 100;
/** Overdue commands timed out by one look. */
const OVERDUE_BATCH = 500;

/**
 * Machines on runners (docs/runners.md): which runner makes one (the service counts slots and
 * never asks for more than are free), the commands about it (each a row, sent through the web
 * process that holds the runner's connection, answered or timed out), and what happens when a
 * runner goes. Its owner (a start state, a try) is told of every change but the destroy it asked
 * for, and decides what comes next; this service decides nothing for it.
 */
export class MachinesService {
  constructor(private readonly deps: MachinesDeps) {}

  /**
   * Records a machine waiting for a slot, with the machine session it will pair with, in the
   * caller's transaction. Call `placeNow` once it commits.
   */
  async request(trx: Knex.Transaction, input: MachineRequest): Promise<MachineRow> {
    return insertMachine(trx, await this.newMachine(trx, input));
  }

  /**
   * `request`, then `place`, in the caller's transaction: the machine is recorded with the
   * runners that could make it locked (one statement), then placed on one with a free slot. Its
   * make, to `send` once that transaction commits, or null when it waits for a slot. The runners
   * stay locked until the commit.
   */
  async requestPlaced(trx: Knex.Transaction, input: MachineRequest): Promise<{ machine: MachineRow; make: CommandRow | null }> {
    const { machine, runnerIds } = await insertMachineLockingRunners(trx, await this.newMachine(trx, input), this.deps.offlineAfterMs);
    const make = runnerIds.length ? await placeOnFreeRunner(trx, machine.id, runnerIds, this.newMake()) : undefined;
    return { machine, make: make ?? null };
  }

  /**
   * From now on the owner hears when the machine runs (an open state asked to save before its
   * machine started), in the caller's transaction. The machine's row is locked by it, so an answer
   * to its make settled meanwhile is told with the change, or seen as running by the owner's next
   * look once this commits.
   */
  async tellOwnerWhenRunning(trx: Knex.Transaction, machineId: string): Promise<void> {
    await setTellOwnerWhenRunning(trx, machineId);
  }

  /** A new machine's row, its machine session recorded. */
  private async newMachine(trx: Knex.Transaction, input: MachineRequest): Promise<NewMachineRow> {
    const { code } = await this.deps.sessions.createMachineSession(trx, { orgId: input.orgId, label: input.label });
    return {
      id: newId('mc'),
      org_id: input.orgId,
      owner_kind: input.owner.kind,
      owner_id: input.owner.id,
      disk: input.disk,
      image: input.disk.image,
      os: input.os,
      pinned_runner_id: input.pinnedRunnerId ?? null,
      session_code: code,
      tell_owner_when_running: input.tellOwnerWhenRunning ?? true,
    };
  }

  /** Queues the pass that gives free slots out (`useFreeSlotsSoon`, worker-evals). */
  placeSoon(): Promise<void> {
    return useFreeSlotsSoon(this.deps.queues);
  }

  /**
   * Places a machine this process just recorded, here and now: its make goes out without a hop
   * through the queue when a runner has a free slot. One not placed (every slot taken, another
   * request having won the slot meanwhile, or the placement failing) is left to the pass that
   * gives free slots out. Never rejects: the machine is recorded, and the sweep places it at worst.
   */
  async placeNow(machineId: string): Promise<void> {
    try {
      if (await this.place(machineId)) return;
    } catch (error) {
      this.deps.logger.warn({ err: error, machine: machineId }, 'could not place a machine just recorded; the placement pass will');
    }
    await this.placeSoon();
  }

  /**
   * Places waiting machines, oldest first, each on the runner with the most free slots (the
   * org's own before cloud ones). A machine no runner can take now stays waiting. Returns how
   * many were placed.
   */
  async placeWaiting(): Promise<number> {
    let placed = 0;
    for (const id of await waitingMachineIds(this.deps.db, PLACE_BATCH)) {
      if (await this.place(id)) placed += 1;
    }
    return placed;
  }

  /** Places one waiting machine; false when no runner has a free slot for it now. */
  async place(machineId: string): Promise<boolean> {
    const sent = await this.deps.db.transaction(async (trx) => {
      // Runners first, then the machine: the order a slot's hand-over takes them in (`settle`),
      // so that neither waits on the other in a circle.
      const locked = await lockCandidateRunners(trx, machineId, this.deps.offlineAfterMs);
      return locked.length ? placeOnFreeRunner(trx, machineId, locked, this.newMake()) : undefined;
    });
    if (!sent) return false;
    this.send(sent);
    return true;
  }

  /** A make's id and deadline (the runner has `bootTimeoutMs` to boot and connect the machine). */
  private newMake() {
    return { id: newId('cmd'), deadlineMs: this.deps.bootTimeoutMs };
  }

  /**
   * A slot of the runner came free in the caller's transaction (its machine destroyed or failed):
   * the oldest waiting machine that fits the runner takes it in the same transaction, so the slot
   * is never seen idle while a machine waits for one. Two statements: the runner locked, then the
   * machine picked if a slot is free. Its make, to send after the commit; null when none waits
   * (or the runner is offline, or still full).
   */
  private async handOverSlot(trx: Knex.Transaction, runnerId: string): Promise<CommandRow | null> {
    if (!(await lockRunnerIfOnline(trx, runnerId, this.deps.offlineAfterMs))) return null;
    const machine = await lockOldestWaitingFor(trx, runnerId);
    return machine ? ((await placeOnFreeRunner(trx, machine.id, [runnerId], this.newMake())) ?? null) : null;
  }

  /** Runs a script in the machine's shell; the owner hears when it is answered. */
  async runScript(machine: MachineRow, script: string, timeoutMs: number, trx?: Knex.Transaction): Promise<CommandRow> {
    return this.command(trx, machine, 'machine.run', { script, timeout_ms: timeoutMs }, timeoutMs + SCRIPT_GRACE_MS);
  }

  /** Does something on the machine as the person at it (`machine.input`). */
  async input(machine: MachineRow, input: Record<string, unknown>, trx?: Knex.Transaction): Promise<CommandRow> {
    return this.command(trx, machine, 'machine.input', { input }, INPUT_TIMEOUT_MS);
  }

  /** Keeps the machine's disk as a state version on its runner. */
  async save(machine: MachineRow, disk: Disk, trx?: Knex.Transaction): Promise<CommandRow> {
    return this.command(trx, machine, 'machine.save', { disk }, SAVE_TIMEOUT_MS);
  }

  /**
   * Lets the machine go: a running one is destroyed on its runner (its slot is free once the
   * runner says so), a waiting one is dropped at once. Its session ends either way.
   */
  async release(machineId: string, reason: string): Promise<void> {
    const released = await this.deps.db.transaction((trx) => this.releaseIn(trx, machineId));
    await released(reason);
  }

  /**
   * `release` in the caller's transaction: the machine's change is written there, and what it
   * returns sends the destroy and ends the session once that transaction has committed.
   */
  async releaseIn(trx: Knex.Transaction, machineId: string): Promise<(reason: string) => Promise<void>> {
    // One statement: a machine on its runner stops there, its destroy recorded; a waiting one is
    // dropped at once; one stopping or ended already is left.
    const letGo = await letGoMachine(trx, machineId, { id: newId('cmd'), args: {}, deadlineMs: DESTROY_TIMEOUT_MS });
    return async (reason) => {
      if (!letGo) return;
      // The runner first: ending the session (its own transaction) need not hold the destroy up.
      if (letGo.command) this.send(letGo.command);
      await this.endSession(letGo.machine, reason);
    };
  }

  /** Deletes every saved version of a state on the runner that keeps them. */
  async deleteDisks(runnerId: string, stateId: string): Promise<void> {
    const command = await insertCommand(this.deps.db, { id: newId('cmd'), runner_id: runnerId, machine_id: null, type: 'disk.delete', args: { state: stateId }, deadlineMs: DESTROY_TIMEOUT_MS });
    this.send(command);
  }

  /**
   * A runner's answer (`runner:done`, from the connection that holds `runnerId`). An answer to a
   * command already settled (answered twice, or timed out) changes nothing.
   */
  async answered(runnerId: string, answer: CommandAnswer): Promise<void> {
    const outcome = answer.ok
      ? { status: 'done' as const, result: answer.result, error_code: null, error: null }
      : { status: 'failed' as const, result: answer.result ?? null, error_code: answer.error.code, error: answer.error.message };
    await this.settle(answer.command_id, outcome, runnerId);
  }

  /** A command's deadline passed: unanswered, it fails with `timeout`. */
  async timedOut(commandId: string): Promise<void> {
    await this.settle(commandId, { status: 'failed', result: null, error_code: 'timeout', error: 'The runner did not answer in time' });
  }

  /**
   * Every command past its deadline and still unanswered fails with `timeout` (worker-evals looks
   * every second, the sweep as well). Returns how many did.
   */
  async timeOutOverdue(): Promise<number> {
    const overdue = await overdueCommandIds(this.deps.db, OVERDUE_BATCH);
    for (const commandId of overdue) await this.timedOut(commandId);
    return overdue.length;
  }

  /**
   * A runner connected (a hello): what it says it runs is reconciled with what the service
   * placed on it, and what it was not told is sent again.
   */
  async runnerConnected(runnerId: string, reported: readonly string[]): Promise<void> {
    const running = new Set(reported);
    const live = await liveMachinesOn(this.deps.db, runnerId);
    const liveIds = new Set(live.map((machine) => machine.id));
    // Machines the service placed there that the runner no longer has (it restarted): lost. One
    // still starting may not have reached it yet: its make is sent again below.
    for (const machine of live) {
      if (!running.has(machine.id) && machine.status !== 'starting') await this.lose(machine.id, `Runner ${runnerId} restarted and no longer has the machine`);
    }
    // Machines it runs that the service does not want there (failed over, or released meanwhile).
    for (const id of running) {
      if (!liveIds.has(id)) this.deps.link.command(runnerId, { command_id: newId('cmd'), type: 'machine.destroy', machine_id: id, args: {} });
    }
    for (const command of await unansweredCommands(this.deps.db, runnerId)) this.deps.link.command(runnerId, wire(command));
    await this.placeSoon();
  }

  /**
   * A runner's connection closed: unless it is back within `offlineAfterMs`, its machines are
   * lost (a check is queued for then).
   */
  async runnerGone(runnerId: string): Promise<void> {
    await this.deps.queues.enqueueOrLeaveToSweep(QUEUE_NAMES.evals, 'runner-check', { runner_id: runnerId }, {
      jobId: jobId('runner-check', runnerId, Date.now()),
      delay: this.deps.offlineAfterMs,
    });
  }

  /** The delayed check after a runner's connection closed (and the sweep's): a runner still offline has lost its work. */
  async checkRunner(runnerId: string): Promise<void> {
    if (await isRunnerOnline(this.deps.db, runnerId, this.deps.offlineAfterMs)) return;
    await this.runnerLost(runnerId, `Runner ${runnerId} went offline`);
  }

  /**
   * A runner is gone for good (revoked, or offline too long): every command it owes fails with
   * `runner_lost` and every machine on it is lost; their owners are told, and move the work elsewhere.
   */
  async runnerLost(runnerId: string, reason: string): Promise<void> {
    for (const command of await unansweredCommands(this.deps.db, runnerId)) {
      await this.settle(command.id, { status: 'failed', result: null, error_code: 'runner_lost', error: reason });
    }
    for (const machine of await liveMachinesOn(this.deps.db, runnerId)) await this.lose(machine.id, reason);
  }

  /** The sweep: runners gone without a goodbye, commands past their deadline, machines waiting for a slot. */
  async sweep(): Promise<number> {
    let acted = 0;
    for (const runnerId of await lostRunnerIds(this.deps.db, this.deps.offlineAfterMs)) {
      await this.runnerLost(runnerId, `Runner ${runnerId} went offline`);
      acted += 1;
    }
    acted += await this.timeOutOverdue();
    return acted + (await this.placeWaiting());
  }

  /** The machine, read through `db` (a transaction's, when in one). */
  async get(machineId: string, db: Knex | Knex.Transaction = this.deps.db): Promise<MachineRow | undefined> {
    return findMachine(db, machineId);
  }

  /** Settles a command and applies it to its machine, in one transaction; then tells the owner. */
  private async settle(commandId: string, outcome: Parameters<typeof settleCommand>[2], fromRunner?: string): Promise<void> {
    // Settled once, by the runner it was sent to: a repeat or a stranger's answer changes nothing.
    const moves = MOVING_TYPES.flatMap((type) => machineChange({ type, ...outcome }) ?? []);
    // Most answers are one statement; one that would free a slot while machines wait for one is
    // left to the transaction below, which hands the slot over with it.
    const alone = await settleCommand(this.deps.db, commandId, outcome, fromRunner, moves, { unlessSlotWanted: true });
    const applied = alone ? { command: alone.command, machine: alone.machine, handedOver: null } : await this.deps.db.transaction(async (trx) => {
      const settled = await settleCommand(trx, commandId, outcome, fromRunner, moves, { unlessSlotWanted: false });
      if (!settled) return null;
      const { command, machine, moved } = settled;
      // A slot freed while machines wait goes to one of them now. When none waits, a machine
      // recorded meanwhile is placed by the pass queued below, which sees this commit.
      const freed = moved !== undefined && machineEnded(moved.status);
      return { command, machine, handedOver: freed && settled.machinesWait ? await this.handOverSlot(trx, command.runner_id) : null };
    });
    if (!applied) return;
    const { command, machine, handedOver } = applied;
    if (handedOver) this.send(handedOver);
    if (command.status === 'failed') this.deps.logger.warn({ command: command.id, type: command.type, runner: command.runner_id, code: command.error_code, error: command.error }, 'runner command failed');
    // The change is committed: the runner hears so first (its acknowledgement is written in this
    // turn of the event loop), and the rest goes out in the next. A notice that does not (a process
    // gone meanwhile) is made up for by the sweep, which looks at the rows.
    setImmediate(() => {
      if (machine) this.tellOfChange(command, machine, handedOver !== null).catch((error: unknown) => this.deps.logger.warn({ err: error, machine: machine.id }, 'could not tell what a machine change means; the sweep will'));
    });
  }

  /** After a settled command changed its machine: its owner is told, and a slot it freed is offered to what waits for one. */
  private async tellOfChange(command: CommandRow, machine: MachineRow, handedOver: boolean): Promise<void> {
    const told: Array<Promise<unknown>> = [this.tellOwner(machine, `${command.type}:${command.id}`, command.type)];
    if (machineEnded(machine.status)) {
      // A make that timed out may still finish on the runner later: it is told to destroy it.
      if (command.type === 'machine.make' && command.error_code === 'timeout') this.deps.link.command(command.runner_id, { command_id: newId('cmd'), type: 'machine.destroy', machine_id: machine.id, args: {} });
      // Its slot is free (or it never got one) and no waiting machine took it over: machines and
      // tries waiting for one may go now.
      if (!handedOver) told.push(this.placeSoon());
      // A destroyed machine's session ended when it was let go (`release`); a failed make's ends now.
      if (machine.status === 'failed') told.push(this.endSession(machine, machine.error ?? 'The machine could not be made'));
    }
    await Promise.all(told);
  }

  /** A live machine is gone with its runner: failed, its slot freed, its owner told. */
  private async lose(machineId: string, reason: string): Promise<void> {
    const machine = await this.deps.db.transaction(async (trx) => {
      const current = await findMachine(trx, machineId, true);
      if (!current || !['starting', 'running', 'stopping'].includes(current.status)) return null;
      const status = current.status === 'stopping' ? 'destroyed' : 'failed';
      return updateMachine(trx, machineId, { status, error: status === 'failed' ? reason : current.error, ended_at: trx.fn.now() as never });
    });
    if (!machine) return;
    this.deps.logger.warn({ machine: machine.id, runner: machine.runner_id, reason }, 'machine lost');
    await this.endSession(machine, reason);
    await this.placeSoon();
    await this.tellOwner(machine, `lost:${machine.id}`);
  }

  /**
   * The owner hears of its machine's change, but for two: its destroy (only the owner lets a
   * machine go, `release`, and it changed its own record in that same transaction) and, when it
   * said so (`tellOwnerWhenRunning`), its make's success. Neither asks anything of it; their jobs
   * would find nothing to do. `by`: the command that changed it, if one did.
   */
  private async tellOwner(machine: MachineRow, why: string, by?: CommandType): Promise<void> {
    if (machine.status === 'destroyed') return;
    if (by === 'machine.make' && machine.status === 'running' && !machine.tell_owner_when_running) return;
    await this.deps.notifyOwner(machine, why);
  }

  private async command(trx: Knex.Transaction | undefined, machine: MachineRow, type: CommandType, args: Record<string, unknown>, deadlineMs: number): Promise<CommandRow> {
    const command = await this.insert(trx ?? this.deps.db, machine, type, args, deadlineMs);
    // In the caller's transaction, the caller sends it after the commit (`send`).
    if (!trx) this.send(command);
    return command;
  }

  private insert(db: Knex | Knex.Transaction, machine: MachineRow, type: CommandType, args: Record<string, unknown>, deadlineMs: number): Promise<CommandRow> {
    if (!machine.runner_id) throw new Error(`machine ${machine.id} is on no runner`);
    return insertCommand(db, { id: newId('cmd'), runner_id: machine.runner_id, machine_id: machine.id, type, args, deadlineMs });
  }

  /** Sends a recorded command to its runner. Its deadline is in its row (`timeOutOverdue`). */
  send(command: CommandRow): void {
    this.deps.link.command(command.runner_id, wire(command));
  }

  private async endSession(machine: MachineRow, reason: string): Promise<void> {
    await this.deps.sessions.endMachineSession(machine.org_id, machine.session_code, { reason }).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, machine: machine.id }, 'could not end the machine session');
    });
  }
}

/** The commands whose answers move their machines (`machineChange`). */
const MOVING_TYPES = ['machine.make', 'machine.destroy'] as const;

/**
 * What the answer to a command does to its machine: the status the machine must be in for it to
 * apply, and the change. A make moves a starting machine to running (or failed); a destroy, done
 * or not, frees a stopping machine's slot (the runner is told again to destroy it if it reports
 * the machine after a reconnect). Scripts, saves and inputs change nothing of the machine.
 */
function machineChange(command: Pick<CommandRow, 'type' | 'status' | 'error_code' | 'error'>): CommandMove | null {
  const { type } = command;
  if (type === 'machine.make' && command.status === 'done') return { type, from: 'starting', to: 'running' };
  if (type === 'machine.make') return { type, from: 'starting', to: 'failed', error: `The runner could not make the machine (${command.error_code}): ${command.error}` };
  if (type === 'machine.destroy') return { type, from: 'stopping', to: 'destroyed' };
  return null;
}

/** A command as the runner receives it (`runner:command`). */
function wire(command: CommandRow) {
  return { command_id: command.id, type: command.type, machine_id: command.machine_id, args: command.args };
}

/**
 * Queues the pass that gives free slots out (worker-evals' `use-free-slots`): waiting machines
 * first, oldest first, then queued tries. At most one pass runs and one waits: a request during a
 * pass is the pass after it.
 */
export async function useFreeSlotsSoon(queues: JobQueues): Promise<void> {
  await queues.enqueueOrLeaveToSweep(QUEUE_NAMES.evals, 'use-free-slots', {}, {
    jobId: jobId('free-slots', Date.now(), randomString(6)),
    deduplication: { id: 'use-free-slots', keepLastIfActive: true },
    removeOnComplete: true,
  });
}
