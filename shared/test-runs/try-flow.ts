import type { Knex } from '../db/knex';
import type { Logger } from '../logger';
import type { JobQueues } from '../queues/job-queues';
import { jobId } from '../queues/job-queues';
import { QUEUE_NAMES } from '../queues/catalog';
import type { SessionsService } from '../sessions/sessions.service';
import type { CreateTaskInput, CreatedTask } from '../tasks/create-task';
import type { TaskChangeObserver } from '../tasks/task-change';
import type { RespondInput, AnsweredBy } from '../tasks/loop/answers';
import type { TaskRow } from '../tasks/task-rows';
import { findTaskById } from '../tasks/tasks.repository';
import { useFreeSlotsSoon, type MachinesService } from '../machines/machines.service';
import { machineEnded, type CommandRow, type MachineRow } from '../machines/machine-rows';
import { latestCommand } from '../machines/machines.repository';
import type { CaseSnapshot, CustomerSpec, TryRow } from './test-run-rows';
import { findRun, findTry, findTryWithRun, freeSlotsFor, type RunOfTry, hasOpenTries, runsWithoutOpenTries, nextQueuedTry, openTryIds, quietRunningTries, runCase, runsWaitingFairly, updateRun, updateTry } from './test-runs.repository';

/** What the simulated customer does (shared/evals/customer.ts). */
export interface CustomerBehaviour {
  answer(input: { customer: CustomerSpec; question: string; options: string[] }): Promise<{ answer: string }>;
  /** The secret's value when the request asks the customer to type one (its label in it); else null. */
  secretToType(customer: CustomerSpec, request: string): string | null;
  /** `does_steps`: the label a question asks the customer to click; else null. */
  stepToClick(customer: CustomerSpec, question: string): string | null;
}

/** The rubric judge (shared/evals/judge.ts). */
export interface RubricJudgeLike {
  judge(input: { rubric: string; prompt: string; result: string | null; status: string; events: Array<{ type: string; message: string }>; lastScreenText: string }): Promise<NonNullable<TryRow['rubric']>>;
}

export interface TryFlowDeps {
  db: Knex;
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
/** A running try this quiet is advanced by the sweep. */
const SWEEP_QUIET_MS = 30_000;

type AfterCommit = () => Promise<unknown> | void;

/**
 * How tries are scheduled and carried out (docs/evals.md, "Test runs"): a fair pass starts
 * queued tries while runners have free slots (the org and the run with fewest tries running go
 * first); each try then gets a fresh machine from its fixed disk, runs the setup script, runs
 * the agent's task on the machine with the simulated customer at it and the operator's policy,
 * runs the check script and asks the judge, and lets the machine go. Every step is taken by
 * `advance` under the try's row lock, from what PostgreSQL records, in worker-evals; only the
 * judge is asked with no transaction open (`judge`), its verdict then recorded under the lock.
 */
export class TryFlow {
  constructor(private readonly deps: TryFlowDeps) {}

  /** Queues a scheduling pass, which gives waiting machines their slots first (`useFreeSlotsSoon`); passes asked for while one waits are one. */
  scheduleSoon(): Promise<void> {
    return useFreeSlotsSoon(this.deps.queues);
  }

  advanceSoon(tryId: string, why: string): Promise<boolean> {
    return queueTryAdvance(this.deps.queues, tryId, why);
  }

  /**
   * Starts queued tries while runners have room, fairly across orgs and runs. Each started try's
   * machine is placed while the next try starts (a run's first tries start one after another, and
   * its slots fill sooner so). Returns how many started.
   */
  async schedule(): Promise<number> {
    let started = 0;
    const placing: Array<Promise<void>> = [];
    try {
      for (;;) {
        let startedThisPass = 0;
        for (const run of await runsWaitingFairly(this.deps.db, 100)) {
          const machineId = await this.startNext(run.id);
          if (!machineId) continue;
          startedThisPass += 1;
          // Its machine takes the slot counted free for it, in this job: no second hop through the
          // queue. A machine not yet placed counts as waiting, so the tries started meanwhile never
          // count its slot twice.
          placing.push(this.deps.machines.placeNow(machineId));
        }
        started += startedThisPass;
        if (!startedThisPass) return started;
      }
    } finally {
      await Promise.all(placing);
    }
  }

  /**
   * The run's next try started in a transaction of its own: the id of its machine, or null. A
   * run whose next try cannot start is logged and passed over, so that it holds up no other run.
   */
  private async startNext(runId: string): Promise<string | null> {
    try {
      return await this.deps.db.transaction((trx) => this.startNextIn(trx, runId));
    } catch (error) {
      this.deps.logger.warn({ err: error, run: runId }, 'could not start the next try of a run; the other runs go on');
      return null;
    }
  }

  /** `startNext` in the caller's transaction: the id of the machine requested for the try, to place once it commits; null when none started. */
  private async startNextIn(trx: Knex.Transaction, runId: string): Promise<string | null> {
    const next = await nextQueuedTry(trx, runId);
    if (!next) return null;
    const run = (await findRun(trx, null, runId))!;
    if (run.status !== 'queued' && run.status !== 'running') return null;
    const snapshot = (await runCase(trx, runId, next.position))!.snapshot;
    const free = await freeSlotsFor(trx, { orgId: run.org_id, image: snapshot.disk.image, pinnedRunnerId: snapshot.pinned_runner_id }, this.deps.offlineAfterMs);
    if (free <= 0) return null;
    const machineId = await this.startOnMachine(trx, run, next, snapshot);
    if (run.status === 'queued') await updateRun(trx, runId, { status: 'running', started_at: trx.fn.now() as never });
    return machineId;
  }

  /**
   * A try ended in the caller's transaction and let its machine go: the fairest run's next try
   * starts in the same transaction. Its machine waits for the slot the ended try's machine holds
   * until that machine is destroyed, whose settle hands the slot straight over
   * (`MachinesService.settle`): the slot never stands idle while tries wait. Returns a machine to
   * place once the transaction commits (it may fit a free slot elsewhere), or null.
   */
  private async startFairestIn(trx: Knex.Transaction): Promise<string | null> {
    for (const run of await runsWaitingFairly(trx, 100)) {
      const machineId = await this.startNextIn(trx, run.id);
      if (machineId) return machineId;
    }
    return null;
  }

  /**
   * `startFairestIn` for a try that ended, in a savepoint of its transaction: a next try that
   * cannot start (logged) is left to the scheduling pass queued after the commit, and the ended
   * try's end stands.
   */
  private async startNextAfterEnd(trx: Knex.Transaction, endedTryId: string): Promise<string | null> {
    try {
      return await trx.transaction((savepoint) => this.startFairestIn(savepoint));
    } catch (error) {
      this.deps.logger.warn({ err: error, try: endedTryId }, 'could not start the next try as this one ended; the scheduling pass will');
      return null;
    }
  }

  /** A fresh machine for the try (its first, or after an infrastructure failure). */
  private async startOnMachine(trx: Knex.Transaction, run: RunOfTry, row: TryRow, snapshot: CaseSnapshot): Promise<string> {
    const machine = await this.deps.machines.request(trx, {
      orgId: run.org_id,
      owner: { kind: 'try', id: row.id },
      disk: snapshot.disk,
      os: snapshot.os,
      pinnedRunnerId: snapshot.pinned_runner_id,
      label: `try ${row.attempt} of ${row.test_case_id} in ${run.id}`,
    });
    await updateTry(trx, row.id, { status: 'running', phase: 'machine', machine_id: machine.id, task_id: null, runner_id: null, started_at: (row.started_at ?? trx.fn.now()) as never });
    return machine.id;
  }

  /** The run was cancelled: its running tries stop (their tasks stopped, machines let go). */
  async cancelRun(runId: string): Promise<void> {
    for (const id of await openTryIds(this.deps.db, runId, 'running')) await this.advance(id);
  }

  /** The sweep: running tries whose machine or task ended unnoticed, or quiet too long; and a scheduling pass. */
  async sweep(): Promise<number> {
    const ids = await quietRunningTries(this.deps.db, SWEEP_QUIET_MS, 200);
    for (const id of ids) await this.advance(id);
    // Runs whose tries all ended but which are still running (none should be: see completeIfDone).
    const finished = await runsWithoutOpenTries(this.deps.db, 100);
    for (const runId of finished) await this.deps.db.transaction((trx) => completeIfDone(trx, runId));
    return ids.length + finished.length + (await this.schedule());
  }

  async advance(tryId: string): Promise<void> {
    const after: AfterCommit[] = [];
    await this.deps.db.transaction(async (trx) => {
      const at = await runningTryAt(trx, tryId);
      if (at) await this.step(trx, at, after);
    });
    for (const work of after) await work();
  }

  private async step(trx: Knex.Transaction, at: TryAt, after: AfterCommit[]): Promise<void> {
    const { row, run, machine } = at;
    if (run.status === 'cancelled') {
      await this.end(trx, at, { status: 'cancelled', error: 'The run was cancelled' }, after);
      if (row.task_id) after.push(() => this.deps.stopTask(row.task_id!, run.org_id, 'The test run was cancelled').catch(() => undefined));
      return;
    }
    if (row.phase === 'judge') {
      // The machine has done its part (the check's result is recorded): the judge reads the
      // transcript, so losing the machine now loses nothing. A judging cut short (the process
      // went, the judge failed) is asked again.
      after.push(() => this.judge(at.row.id));
      return;
    }
    if (!machine) return;
    if (machineEnded(machine.status)) {
      if (row.phase !== 'done') await this.infrastructureFailed(trx, at, `The machine was lost: ${machine.error ?? 'it stopped'}`, after);
      return;
    }
    if (machine.status === 'waiting' && Date.now() - machine.created_at.getTime() > MACHINE_WAIT_MS) {
      // Its runner went between the scheduler's count and the placement: back in the queue (not
      // an infrastructure retry), for the scheduler to start again when a slot is free.
      after.push(() => this.deps.machines.release(machine.id, 'No runner took the machine in time'), () => this.scheduleSoon());
      await updateTry(trx, row.id, { status: 'queued', phase: null, machine_id: null });
      return;
    }
    if (machine.status !== 'running') return;
    switch (row.phase) {
      case 'machine':
        return this.afterMachine(trx, at, machine, after);
      case 'setup':
        return this.afterSetup(trx, at, machine, after);
      case 'task':
        return this.duringTask(trx, at, machine, after);
      case 'check':
        return this.afterCheck(trx, at, machine, after);
      default:
    }
  }

  /** The machine runs: the setup script, or straight to the task (either records the runner it runs on). */
  private async afterMachine(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    if (at.snapshot.setup_script) {
      const command = await this.deps.machines.runScript(machine, at.snapshot.setup_script, SCRIPT_TIMEOUT_MS, trx);
      await updateTry(trx, at.row.id, { phase: 'setup', runner_id: machine.runner_id });
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
    await updateTry(trx, row.id, { phase: 'task', task_id: created.row.id, runner_id: machine.runner_id });
    after.push(created.afterCommit);
  }

  /** While the task runs: the operator's policy and the customer act on what is pending; when it ends, the check. */
  private async duringTask(trx: Knex.Transaction, at: TryAt, machine: MachineRow, after: AfterCommit[]): Promise<void> {
    const task = at.row.task_id ? await findTaskById(trx, at.row.task_id) : undefined;
    if (!task) return;
    if (task.status === 'queued' || task.status === 'running') {
      if (task.pending) after.push(() => this.actOnPending(at, machine, task));
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
      await updateTry(trx, at.row.id, { phase: 'check' });
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
      await updateTry(trx, at.row.id, { phase: 'judge', check, steps: task.steps });
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
    const events = await this.deps.db('task_events').where({ task_id: task.id }).orderBy('cursor', 'desc').limit(200).select('type', 'message');
    const rubric = await this.deps.judge.judge({
      rubric: snapshot.rubric!,
      prompt: task.prompt,
      result: task.result,
      status: task.status,
      events: events.reverse(),
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
    await updateTry(trx, row.id, { status: 'queued', phase: null, machine_id: null, task_id: null, runner_id: null, infra_retries: row.infra_retries + 1, error: why });
    after.push(() => this.scheduleSoon());
  }

  /** The try ends: its machine goes, the run completes when it was the last. */
  private async end(trx: Knex.Transaction, at: TryAt, outcome: Partial<TryRow>, after: AfterCommit[], releaseMachine = true): Promise<void> {
    const { row, run } = at;
    const started = row.started_at ?? new Date();
    await updateTry(trx, row.id, { ...outcome, phase: 'done', ended_at: trx.fn.now() as never, duration_ms: Date.now() - started.getTime() });
    // Its machine is let go in this transaction: the destroy goes out as soon as it commits.
    if (releaseMachine && row.machine_id) {
      const released = await this.deps.machines.releaseIn(trx, row.machine_id);
      after.push(() => released('The try is over'));
    }
    const next = await this.startNextAfterEnd(trx, row.id);
    if (next) after.push(() => this.deps.machines.place(next));
    // Last: the run's row lock is held only for the commit that follows.
    await completeIfDone(trx, run.id);
    after.push(() => this.scheduleSoon());
  }

  /**
   * A question or approval is open. The operator's policy decides approvals at once (`approve`,
   * `deny`); with `none` the customer may approve one shown to them (`clicks_admin_prompts`). A
   * question shown to the customer is answered: by typing a secret it names into the focused
   * field, by clicking what it asks to click (`does_steps`), or from the facts.
   */
  private async actOnPending(at: TryAt, machine: MachineRow, task: TaskRow): Promise<void> {
    const pending = task.pending!;
    const { snapshot, run } = at;
    const customer = snapshot.customer;
    const respond = (input: RespondInput, by: AnsweredBy) => this.deps.respond(task.id, run.org_id, input, by).catch((error: Error) => this.deps.logger.info({ try: at.row.id, err: error }, 'answer not taken'));
    if (pending.type === 'approval') {
      if (snapshot.approvals === 'approve' || snapshot.approvals === 'deny') return void (await respond({ approval_id: pending.approval_id, decision: snapshot.approvals }, 'operator'));
      if (customer?.clicks_admin_prompts && pending.customer_can_approve) await respond({ approval_id: pending.approval_id, decision: 'approve' }, 'customer');
      return;
    }
    if (!customer || !pending.customer_can_answer) return;
    const secret = this.deps.customer.secretToType(customer, pending.question);
    if (secret !== null) {
      await this.deps.machines.input(machine, { type: 'type', text: secret });
      await respond({ question_id: pending.question_id, answer: 'I typed it in.' }, 'customer');
      return;
    }
    const label = customer.does_steps ? this.deps.customer.stepToClick(customer, pending.question) : null;
    if (label !== null) {
      await this.deps.machines.input(machine, { type: 'click_label', label });
      await respond({ question_id: pending.question_id, answer: 'Done' }, 'customer');
      return;
    }
    const { answer } = await this.deps.customer.answer({ customer, question: pending.question, options: pending.options });
    await respond({ question_id: pending.question_id, answer }, 'customer');
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

function queueTryAdvance(queues: JobQueues, tryId: string, why: string): Promise<boolean> {
  return queues.enqueueOrLeaveToSweep(QUEUE_NAMES.evals, 'try-advance', { try_id: tryId }, { jobId: jobId('try', tryId, why.replace(/:/g, '-'), Date.now()) });
}

/** After a try's task changes with something open or ends: the try advances (its metadata names it). */
export function tryTasks(deps: { queues: JobQueues }): TaskChangeObserver {
  return {
    name: 'try-tasks',
    async taskChanged({ row, events }) {
      const tryId = row.metadata?.try_id;
      if (!tryId || !events.length) return;
      const ended = row.status === 'completed' || row.status === 'failed' || row.status === 'stopped';
      if (ended || row.pending) await queueTryAdvance(deps.queues, tryId, `task-${row.cursor}`);
    },
  };
}

