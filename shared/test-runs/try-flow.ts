import type { Knex } from '../db/knex';
import type { Clock } from '../clock';
import type { Logger } from '../logger';
import type { JobQueues } from '../queues/job-queues';
import type { SessionsService } from '../sessions/sessions.service';
import type { CreateTaskInput, CreatedTask } from '../tasks/create-task';
import type { TaskChangeObserver } from '../tasks/task-change';
import type { RespondInput, AnsweredBy } from '../tasks/loop/answers';
import type { TaskRow } from '../tasks/task-rows';
import { findTaskById, readLatestEvents } from '../tasks/tasks.repository';
import type { MachinesService } from '../machines/machines.service';
import { machineEnded, type CommandRow, type MachineRow } from '../machines/machine-rows';
import { latestCommand } from '../machines/machines.repository';
import type { CaseSnapshot, TryRow } from './test-run-rows';
import { findRun, findTry, findTryWithRun, type RunOfTry, hasOpenTries, runsWithoutOpenTries, openTryIds, runCase, triesNeedingAttention, updateRun, updateTry } from './test-runs.repository';
import { CustomerAtTheMachine, type CustomerBehaviour } from './simulated-customer';
import { queueTryAdvance, TryScheduler } from './try-scheduling';
import { moveTry, tryStateEntry, type TryAct } from './try-transitions';

export type { CustomerBehaviour } from './simulated-customer';

/** The rubric judge (shared/evals/judge.ts). */
export interface RubricJudgeLike {
  judge(input: { rubric: string; prompt: string; result: string | null; status: string; events: Array<{ type: string; message: string }>; lastScreenText: string }): Promise<NonNullable<TryRow['rubric']>>;
}

export interface TryFlowDeps {
  db: Knex;
  /** Now, for the flow's own time rules (a machine waiting too long, a try's duration) and its job ids. */
  clock: Clock;
  queues: JobQueues;
  logger: Logger;
  machines: MachinesService;
  sessions: Pick<SessionsService, 'getRow'>;
  createTask: (trx: Knex.Transaction, input: CreateTaskInput) => Promise<CreatedTask & { afterCommit: () => Promise<unknown> }>;
  respond: (taskId: string, orgId: string, input: RespondInput, answeredBy: AnsweredBy) => Promise<unknown>;
  stopTask: (taskId: string, orgId: string, reason: string) => Promise<unknown>;
  customer: CustomerBehaviour;
  judge: RubricJudgeLike;
  offlineAfterMs: number;
}

/** Infrastructure retries a try gets (a runner died, a machine did not start, its setup failed) before it is `error`. */
export const MAX_INFRA_RETRIES = 2;
/** How long a setup or check script may run. */
const SCRIPT_TIMEOUT_MS = 10 * 60_000;
const OUTPUT_TAIL = 4_000;
/** A try's machine waiting this long for a runner (its runner went meanwhile) goes back to the queue. */
const MACHINE_WAIT_MS = 60_000;
/** A running try whose awaited change is this old and did not move it is advanced by the sweep. */
const SWEEP_QUIET_MS = 30_000;
/** The transcript the rubric judge reads: the task's last events. */
const JUDGED_EVENTS = 200;

type AfterCommit = () => Promise<unknown> | void;

/**
 * How tries are carried out (docs/evals.md, "Test runs"): `TryScheduler` starts queued tries
 * while runners have free slots; each try then gets a fresh machine from its fixed disk, runs the
 * setup script, runs the agent's task on the machine with the simulated customer at it and the
 * operator's policy (`CustomerAtTheMachine`), runs the check script and asks the judge, and lets
 * the machine go. Its states, the act that advances each and the moves between them are
 * `TRY_TRANSITIONS` (try-transitions.ts). Every step is taken by `advance` under the try's row
 * lock, from what PostgreSQL records, in worker-evals; only the judge is asked with no
 * transaction open (`judge`), its verdict then recorded under the lock.
 */
export class TryFlow {
  private readonly scheduler: TryScheduler;
  private readonly customerAtTheMachine: CustomerAtTheMachine;
  /** What `advance` does in each state, by the name `TRY_TRANSITIONS` gives it; those of states that use the machine are called once it runs (`step`). */
  private readonly acts: Readonly<Record<TryAct, (trx: Knex.Transaction, at: TryAt, after: AfterCommit[]) => Promise<void>>>;

  constructor(private readonly deps: TryFlowDeps) {
    this.scheduler = new TryScheduler(deps);
    this.customerAtTheMachine = new CustomerAtTheMachine(deps);
    this.acts = Object.freeze({
      afterMachine: (trx, at, after) => this.afterMachine(trx, at, at.machine!, after),
      afterSetup: (trx, at, after) => this.afterSetup(trx, at, at.machine!, after),
      duringTask: (trx, at, after) => this.duringTask(trx, at, at.machine!, after),
      afterCheck: (trx, at, after) => this.afterCheck(trx, at, at.machine!, after),
      // The machine has done its part (the check's result is recorded): the judge reads the
      // transcript, so losing the machine now loses nothing. A judging cut short (the process
      // went, the judge failed) is asked again.
      askJudge: async (_trx, at, after) => void after.push(() => this.judge(at.row.id)),
    });
  }

  /** Queues a scheduling pass (`TryScheduler.scheduleSoon`). */
  scheduleSoon(): Promise<void> {
    return this.scheduler.scheduleSoon();
  }

  /** Queues the try's `advance` (after a change of its machine). */
  advanceSoon(tryId: string, why: string): Promise<boolean> {
    return queueTryAdvance(this.deps.queues, this.deps.clock, tryId, why);
  }

  /** A scheduling pass (`TryScheduler.schedule`): how many tries started. */
  schedule(): Promise<number> {
    return this.scheduler.schedule();
  }

  /** The run was cancelled: its running tries stop (their tasks stopped, machines let go). */
  async cancelRun(runId: string): Promise<void> {
    for (const id of await openTryIds(this.deps.db, runId, 'running')) await this.advance(id);
  }

  /**
   * The sweep: running tries left behind by a change they were never told of (their machine ran
   * or ended, waited too long, a script answered, their task ended) or running too long; then a
   * scheduling pass.
   */
  async sweep(): Promise<number> {
    const ids = await triesNeedingAttention(this.deps.db, { quietMs: SWEEP_QUIET_MS, machineWaitMs: MACHINE_WAIT_MS, limit: 200 });
    for (const id of ids) await this.advance(id);
    // Runs whose tries all ended but which are still running (none should be: see completeIfDone).
    const finished = await runsWithoutOpenTries(this.deps.db, 100);
    for (const runId of finished) await this.deps.db.transaction((trx) => completeIfDone(trx, runId));
    return ids.length + finished.length + (await this.schedule());
  }

  /** Takes the next step of a running try (`step`) under its row lock; what the step leaves for after the commit runs then. A try not running is left. */
  async advance(tryId: string): Promise<void> {
    const after: AfterCommit[] = [];
    await this.deps.db.transaction(async (trx) => {
      const at = await runningTryAt(trx, tryId);
      if (at) await this.step(trx, at, after);
    });
    for (const work of after) await work();
  }

  /**
   * One step of a running try: a cancelled run ends it; otherwise the act of its state
   * (`TRY_TRANSITIONS`), after the checks every state that uses the machine shares: a machine
   * lost is an infrastructure failure, one no runner took in time sends the try back to the
   * queue, one not running yet leaves the try as it is.
   */
  private async step(trx: Knex.Transaction, at: TryAt, after: AfterCommit[]): Promise<void> {
    const { row, run, machine } = at;
    if (run.status === 'cancelled') {
      await this.end(trx, at, { status: 'cancelled', error: 'The run was cancelled' }, after);
      if (row.task_id) after.push(() => this.deps.stopTask(row.task_id!, run.org_id, 'The test run was cancelled').catch(() => undefined));
      return;
    }
    const state = tryStateEntry(row);
    if (state?.act && !state.usesMachine) return this.acts[state.act](trx, at, after);
    if (!machine) return;
    if (machineEnded(machine.status)) {
      if (row.phase !== 'done') await this.infrastructureFailed(trx, at, `The machine was lost: ${machine.error ?? 'it stopped'}`, after);
      return;
    }
    if (machine.status === 'waiting' && this.deps.clock.now().getTime() - machine.created_at.getTime() > MACHINE_WAIT_MS) {
      // Its runner went between the scheduler's count and the placement: back in the queue (not
      // an infrastructure retry), for the scheduler to start again when a slot is free.
      after.push(() => this.deps.machines.release(machine.id, 'No runner took the machine in time'), () => this.scheduleSoon());
      await moveTry(trx, row, 'queued', { machine_id: null });
      return;
    }
    if (machine.status !== 'running') return;
    if (state?.act) await this.acts[state.act](trx, at, after);
  }

  /** The machine runs: the setup script, or straight to the task (either records the runner it runs on). */
  private async afterMachine(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    if (at.snapshot.setup_script) {
      const command = await this.deps.machines.runScript(machine, at.snapshot.setup_script, SCRIPT_TIMEOUT_MS, trx);
      await moveTry(trx, at.row, 'setup', { runner_id: machine.runner_id });
      after.push(() => this.deps.machines.send(command));
      return;
    }
    await this.startTask(trx, at, machine, after);
  }

  /** Setup done: exit 0 starts the task; anything else is an infrastructure failure (retried, then `error`). */
  private async afterSetup(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const run = await latestCommand(trx, machine.id, 'machine.run');
    if (!run || run.status === 'sent') return;
    if (run.status === 'done' && run.result?.exit_code === 0) {
      await this.startTask(trx, at, machine, after);
      return;
    }
    const cutShort = scriptCutShort(run);
    if (cutShort) return this.infrastructureFailed(trx, at, `The setup script did not finish on the machine (${cutShort})`, after);
    const output = typeof run.result?.output === 'string' ? run.result.output.slice(-OUTPUT_TAIL) : '';
    const why = run.status === 'failed' ? `${run.error_code}: ${run.error}` : `exit status ${String(run.result?.exit_code)}`;
    await this.infrastructureFailed(trx, at, `The setup script failed (${why})${output ? `:\n${output}` : ''}`, after);
  }

  private async startTask(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const { row, run, snapshot } = at;
    const session = await this.deps.sessions.getRow(run.org_id, machine.session_code, trx);
    const secrets = Object.values(snapshot.customer?.facts ?? {}).flatMap((fact) => (typeof fact === 'object' && fact ? [fact.secret] : []));
    const created = await this.deps.createTask(trx, {
      session,
      agent: run.agent,
      prompt: snapshot.prompt,
      limits: snapshot.limits,
      secrets,
      actor: null,
      metadata: { test_run_id: run.id, try_id: row.id, test_case_id: row.test_case_id },
    });
    await moveTry(trx, row, 'task', { task_id: created.row.id, runner_id: machine.runner_id });
    after.push(created.afterCommit);
  }

  /** While the task runs: the operator's policy and the customer act on what is pending; when it ends, the check. */
  private async duringTask(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const task = at.row.task_id ? await findTaskById(trx, at.row.task_id) : undefined;
    if (!task) return;
    if (task.status === 'queued' || task.status === 'running') {
      if (task.pending) after.push(() => this.customerAtTheMachine.actOnPending({ tryId: at.row.id, orgId: at.run.org_id, snapshot: at.snapshot, machine, task }));
      return;
    }
    // A task that failed while its machine was away (its runner died, or its connection did not
    // come back in time) failed for want of a machine, not by the agent: the try moves to a new
    // machine. Its runner's loss may be noticed only later: the session says so now.
    if (task.status === 'failed' && (await this.deps.sessions.getRow(at.run.org_id, machine.session_code, trx)).status !== 'connected') {
      return this.infrastructureFailed(trx, at, `The machine disconnected during the task (${task.error ?? 'the task failed'})`, after);
    }
    await updateTry(trx, at.row.id, { steps: task.steps });
    if (at.snapshot.check_script) {
      const command = await this.deps.machines.runScript(machine, at.snapshot.check_script, SCRIPT_TIMEOUT_MS, trx);
      await moveTry(trx, at.row, 'check');
      after.push(() => this.deps.machines.send(command));
      return;
    }
    await this.score(trx, at, task, null, after);
  }

  private async afterCheck(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const run = await latestCommand(trx, machine.id, 'machine.run');
    if (!run || run.status === 'sent') return;
    // A check that never reached an exit status (its runner lost, no answer in time, the machine
    // gone from its runner) says nothing of the agent: the try runs again, it is not failed.
    const cutShort = scriptCutShort(run);
    if (cutShort) return this.infrastructureFailed(trx, at, `The check script did not finish on the machine (${cutShort})`, after);
    const task = (await findTaskById(trx, at.row.task_id!))!;
    await this.score(trx, at, task, checkOf(run), after);
  }

  /**
   * The check's verdict and the judge's: both must pass when the case has both. A case with a
   * rubric goes to phase `judge` with its check recorded; the judge is asked once this
   * transaction commits (`judge`), holding no transaction and no lock while a model answers.
   */
  private async score(trx: Knex.Transaction, at: TryAt, task: TaskRow, check: TryRow['check'], after: AfterCommit[]): Promise<void> {
    if (at.snapshot.rubric) {
      await moveTry(trx, at.row, 'judge', { check, steps: task.steps });
      after.push(() => this.judge(at.row.id));
      return;
    }
    await this.end(trx, at, { status: passed(check, null) ? 'passed' : 'failed', check, rubric: null, steps: task.steps, error: null }, after);
  }

  /**
   * Asks the rubric judge about a try in phase `judge` (a vendor model may take seconds: no
   * transaction is open meanwhile), then ends the try with both verdicts under its row lock,
   * unless it moved on meanwhile (cancelled, or judged by a call made at the same time). A judge
   * that fails leaves the phase as it is: the sweep asks again.
   */
  private async judge(tryId: string): Promise<void> {
    const row = await findTry(this.deps.db, tryId);
    if (row?.status !== 'running' || row.phase !== 'judge' || !row.task_id) return;
    const snapshot = (await runCase(this.deps.db, row.run_id, row.position))!.snapshot;
    const task = (await findTaskById(this.deps.db, row.task_id))!;
    const events = await readLatestEvents(this.deps.db, task.id, JUDGED_EVENTS);
    const rubric = await this.deps.judge.judge({
      rubric: snapshot.rubric!,
      prompt: task.prompt,
      result: task.result,
      status: task.status,
      events,
      lastScreenText: task.observation?.text ?? '',
    });
    const after: AfterCommit[] = [];
    await this.deps.db.transaction(async (trx) => {
      const at = await runningTryAt(trx, tryId);
      if (at?.row.phase !== 'judge') return;
      await this.end(trx, at, { status: passed(at.row.check, rubric) ? 'passed' : 'failed', rubric, error: null }, after);
    });
    for (const work of after) await work();
  }

  /**
   * A runner died, a machine did not start, its setup failed: tried again on a new machine (not
   * counted as a failure) up to `MAX_INFRA_RETRIES` times, then `error`.
   */
  private async infrastructureFailed(trx: Knex.Transaction, at: TryAt, why: string, after: AfterCommit[]): Promise<void> {
    const { row } = at;
    if (row.task_id) after.push(() => this.deps.stopTask(row.task_id!, at.run.org_id, 'The machine was lost; the try runs again on another').catch(() => undefined));
    if (row.machine_id) {
      const released = await this.deps.machines.releaseIn(trx, row.machine_id);
      after.push(() => released(why));
    }
    if (row.infra_retries >= MAX_INFRA_RETRIES) {
      await this.end(trx, at, { status: 'error', error: `${why} (after ${MAX_INFRA_RETRIES} retries)` }, after, false);
      return;
    }
    this.deps.logger.warn({ try: row.id, reason: why }, 'try retried after an infrastructure failure');
    await moveTry(trx, row, 'queued', { machine_id: null, task_id: null, runner_id: null, infra_retries: row.infra_retries + 1, error: why });
    after.push(() => this.scheduleSoon());
  }

  /** The try ends: its machine goes, the run completes when it was the last. */
  private async end(trx: Knex.Transaction, at: TryAt, outcome: Partial<TryRow>, after: AfterCommit[], releaseMachine = true): Promise<void> {
    const { row, run } = at;
    const now = this.deps.clock.now();
    const started = row.started_at ?? now;
    await moveTry(trx, row, 'done', { ...outcome, ended_at: trx.fn.now() as never, duration_ms: now.getTime() - started.getTime() });
    // Its machine is let go in this transaction: the destroy goes out as soon as it commits.
    if (releaseMachine && row.machine_id) {
      const released = await this.deps.machines.releaseIn(trx, row.machine_id);
      after.push(() => released('The try is over'));
    }
    const next = await this.scheduler.startNextAfterEnd(trx, row.id);
    if (next) after.push(() => this.deps.machines.place(next));
    // Last: the run's row lock is held only for the commit that follows.
    await completeIfDone(trx, run.id);
    after.push(() => this.scheduleSoon());
  }
}

interface TryAt {
  row: TryRow;
  run: RunOfTry;
  snapshot: CaseSnapshot;
  machine: MachineRow | undefined;
}

/** A running try, locked, with its run, its case's snapshot and its machine; undefined when it is not running. */
async function runningTryAt(trx: Knex.Transaction, tryId: string): Promise<TryAt | undefined> {
  const found = await findTryWithRun(trx, tryId);
  return found?.row.status === 'running' ? found : undefined;
}

/**
 * Why a script's command ended without an exit status from the machine's shell (`code: message`),
 * or null when the script ran to one. A script the runner stopped at its own `timeout_ms` has one
 * (124) and counts as run.
 */
function scriptCutShort(command: CommandRow): string | null {
  if (command.status !== 'failed' || typeof command.result?.exit_code === 'number') return null;
  return `${command.error_code}: ${command.error}`;
}

/** What the check printed when both its stdout and its stderr were empty. */
export const CHECK_PRINTED_NOTHING = '(the check script printed nothing on stdout or stderr)';

/**
 * The check's record: its exit status; `output`, what it printed as the runner reports it (stdout
 * then stderr), or a line saying it printed nothing on either; and, when the runner reports the
 * two apart (the reference runner does), `stdout` and `stderr`. Each is kept to its last
 * `OUTPUT_TAIL` characters.
 */
function checkOf(run: CommandRow): NonNullable<TryRow['check']> {
  const result = run.result ?? {};
  const text = (value: unknown) => (typeof value === 'string' ? value.slice(-OUTPUT_TAIL) : undefined);
  const [output, stdout, stderr] = [text(result.output), text(result.stdout), text(result.stderr)];
  return {
    exit_code: typeof result.exit_code === 'number' ? result.exit_code : null,
    output: output || `${stdout ?? ''}${stderr ?? ''}`.slice(-OUTPUT_TAIL) || CHECK_PRINTED_NOTHING,
    ...(stdout !== undefined || stderr !== undefined ? { stdout: stdout ?? '', stderr: stderr ?? '' } : {}),
    ...(run.status === 'failed' ? { error: `${run.error_code}: ${run.error}` } : {}),
  };
}

/** A try passes when its check (if any) exited 0 and its judge (if any) passed it. */
function passed(check: TryRow['check'], rubric: TryRow['rubric']): boolean {
  return (check === null || check.exit_code === 0) && (rubric === null || rubric.passed);
}

/**
 * Completes the run when no try of it is queued or running. Under the run's row lock: two last
 * tries ending at once take it in turn, so the second sees the first ended (without it, each saw
 * the other open and the run stayed `running`).
 */
export async function completeIfDone(trx: Knex.Transaction, runId: string): Promise<void> {
  const run = await findRun(trx, null, runId, true);
  if (run?.status === 'running' && !(await hasOpenTries(trx, runId))) await updateRun(trx, runId, { status: 'completed', ended_at: trx.fn.now() as never });
}

/** After a try's task changes with something open or ends: the try advances (its metadata names it). */
export function tryTasks(deps: { queues: JobQueues; clock: Clock }): TaskChangeObserver {
  return {
    name: 'try-tasks',
    async taskChanged({ row, events }) {
      const tryId = row.metadata?.try_id;
      if (!tryId || !events.length) return;
      const ended = row.status === 'completed' || row.status === 'failed' || row.status === 'stopped';
      if (ended || row.pending) await queueTryAdvance(deps.queues, deps.clock, tryId, `task-${row.cursor}`);
    },
  };
}

