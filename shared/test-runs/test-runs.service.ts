import type { Knex } from '../db/knex';
import type { Caller } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import type { AgentService, AgentVersionChoice } from '../agents/agents.service';
import { osOfImage } from '../machines/machine-rows';
import { findStartState, visibleImages } from '../start-states/start-states.repository';
import { stateDisk } from '../start-states/start-state-rows';
import { compareCase, summarise, type CaseSummary, type CompareLabel, type RunSummary } from './summary';
import { toTestRun, toTry, type TestRun, type Try } from './test-run-object';
import type { CaseSnapshot, CustomerSpec, RunCaseRow, TestRunRow } from './test-run-rows';
import {
  cancelQueuedTries,
  findLiveCases,
  findLiveSet,
  findRun,
  insertRun,
  insertRunCases,
  insertTries,
  listRuns,
  listTries,
  runCases,
  setCases,
  tryStatuses,
  updateRun,
  type CaseRow,
} from './test-runs.repository';

export interface TestRunsDeps {
  db: Knex;
  agents: Pick<AgentService, 'resolveForTask'>;
  /** Queues a scheduling pass (`TryFlow.scheduleSoon`). */
  scheduleSoon: () => Promise<unknown>;
  /** Stops a run's running tries (`TryFlow.cancelRun`), after the run is marked cancelled. */
  cancelTries: (runId: string) => Promise<unknown>;
}

export interface CreateTestRunInput {
  test_set_id?: string;
  test_case_ids?: string[];
  agent_id?: string;
  agent_version?: AgentVersionChoice;
  repeat?: number;
  metadata?: Record<string, string>;
}

/** A run's tries at most: 500 cases × 20. */
export const MAX_TRIES_PER_RUN = 10_000;
const DEFAULT_LIMITS = { minutes: 30, steps: 150 };

/**
 * Test runs (docs/evals.md, "Test runs"): made from a set or a list of cases against one agent
 * version, each case fixed as it is now (its start state's version included), then tried by
 * worker-evals (`TryFlow`); read with their summary, their tries, cancelled, compared.
 */
export class TestRunsService {
  constructor(private readonly deps: TestRunsDeps) {}

  async create(caller: Caller, input: CreateTestRunInput, requestId?: string): Promise<TestRun> {
    if ((input.test_set_id === undefined) === (input.test_case_ids === undefined)) throw invalidRequest('Give exactly one of test_set_id and test_case_ids');
    const agent = await this.resolveAgent(caller.orgId, input);
    const planned = await this.plannedCases(caller.orgId, input);
    const tries = planned.reduce((sum, item) => sum + item.repeat, 0);
    if (tries > MAX_TRIES_PER_RUN) throw invalidRequest(`This run would make ${tries} tries; a run makes at most ${MAX_TRIES_PER_RUN} (cases × repeat)`);
    const images = await visibleImages(this.deps.db, caller.orgId);
    const snapshots = await Promise.all(planned.map(async (item, index) => this.snapshot(caller.orgId, item.row, item.customer, images.map((image) => image.image), index)));
    const run = await this.deps.db.transaction(async (trx) => {
      const row = await insertRun(trx, {
        id: newId('tr'),
        org_id: caller.orgId,
        test_set_id: input.test_set_id ?? null,
        agent_id: agent.agent_id,
        agent_version: agent.version,
        draft: agent.draft,
        agent,
        repeat: input.repeat ?? null,
        status: 'queued',
        metadata: input.metadata ?? {},
      });
      const cases: RunCaseRow[] = planned.map((item, position) => ({ run_id: row.id, position, test_case_id: item.row.id, key: item.row.key, repeat: item.repeat, snapshot: snapshots[position]! }));
      await insertRunCases(trx, cases);
      await insertTries(
        trx,
        cases.flatMap((item) =>
          Array.from({ length: item.repeat }, (_, i) => ({ id: newId('try'), org_id: caller.orgId, run_id: row.id, position: item.position, test_case_id: item.test_case_id, attempt: i + 1, start_state_version: item.snapshot.start_state_version })),
        ),
      );
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_run.created', objectType: 'test_run', objectId: row.id, data: { agent_id: agent.agent_id, agent_version: agent.version, draft: agent.draft, cases: cases.length, tries }, requestId });
      return row;
    });
    await this.deps.scheduleSoon();
    return this.get(caller.orgId, run.id);
  }

  async get(orgId: string, runId: string): Promise<TestRun> {
    const run = await findRun(this.deps.db, orgId, runId);
    if (!run) throw notFound(`No test run ${runId}`);
    const { cases, summary } = await this.summary(run.id);
    return toTestRun(run, cases.length, summary);
  }

  async list(orgId: string, filter: { agentId?: string; testSetId?: string }, page: PageRequest): Promise<Page<TestRun>> {
    const rows = await listRuns(this.deps.db, orgId, filter, page, (row) => row);
    const data = await Promise.all(rows.data.map(async (row) => {
      const { cases, summary } = await this.summary(row.id);
      return toTestRun(row, cases.length, summary);
    }));
    return { ...rows, data };
  }

  async tries(orgId: string, runId: string, page: PageRequest): Promise<Page<Try>> {
    const run = await findRun(this.deps.db, orgId, runId);
    if (!run) throw notFound(`No test run ${runId}`);
    const cases = new Map((await runCases(this.deps.db, runId)).map((item) => [item.position, item]));
    return listTries(this.deps.db, runId, page, (row) => toTry(row, cases.get(row.position)));
  }

  /** Stops its running tries and skips the queued ones: `cancelled`. A run already over is 409 `not_running`. */
  async cancel(caller: Caller, runId: string, requestId?: string): Promise<TestRun> {
    await this.deps.db.transaction(async (trx) => {
      const run = await findRun(trx, caller.orgId, runId, true);
      if (!run) throw notFound(`No test run ${runId}`);
      if (run.status === 'completed' || run.status === 'cancelled') throw conflict(`Test run ${runId} is ${run.status}`, 'not_running');
      await updateRun(trx, runId, { status: 'cancelled', ended_at: trx.fn.now() as never });
      await cancelQueuedTries(trx, runId);
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_run.cancelled', objectType: 'test_run', objectId: runId, requestId });
    });
    await this.deps.cancelTries(runId);
    return this.get(caller.orgId, runId);
  }

  /** `runId` (the new run) against `withId` (the baseline), case by case. */
  async compare(orgId: string, runId: string, withId: string): Promise<Record<string, unknown>> {
    // Both looked up at once, answered in one order: the run in the path first (404), then `with` (400), whichever finishes first.
    const [own, other] = await Promise.allSettled([this.get(orgId, runId), this.get(orgId, withId)]);
    if (own.status === 'rejected') throw own.reason;
    if (other.status === 'rejected') {
      throw other.reason instanceof ApiError && other.reason.status === 404 ? invalidRequest(`with: no test run ${withId}`) : other.reason;
    }
    const [current, baseline] = [own.value, other.value];
    const byCase = (summary: RunSummary) => new Map(summary.cases.map((item) => [item.test_case_id, item]));
    const now = byCase(current.summary);
    const before = byCase(baseline.summary);
    const ids = [...new Set([...now.keys(), ...before.keys()])];
    const cases = ids.map((id) => {
      const a: CaseSummary | undefined = now.get(id);
      const b: CaseSummary | undefined = before.get(id);
      return { test_case_id: id, key: a?.key ?? b?.key ?? null, pass_rate: a?.pass_rate ?? null, baseline_pass_rate: b?.pass_rate ?? null, label: compareCase(a, b) };
    });
    const totals: Record<CompareLabel, number> = { regressed: 0, improved: 0, unchanged: 0, flaky: 0 };
    for (const item of cases) if (item.label) totals[item.label] += 1;
    return {
      object: 'test_run_comparison',
      test_run_id: runId,
      with: withId,
      pass_rate: current.summary.pass_rate,
      baseline_pass_rate: baseline.summary.pass_rate,
      cases,
      totals,
    };
  }

  private async summary(runId: string): Promise<{ cases: RunCaseRow[]; summary: RunSummary }> {
    const [cases, statuses] = await Promise.all([runCases(this.deps.db, runId), tryStatuses(this.deps.db, runId)]);
    const tallies = cases.map((item) => ({ test_case_id: item.test_case_id, key: item.key, repeat: item.repeat, statuses: statuses.filter((s) => s.position === item.position).map((s) => s.status) }));
    return { cases, summary: summarise(tallies) };
  }

  /** The agent version the run tries: the same rule as a task's `agent_version` (`AgentService.resolveForTask`). */
  private async resolveAgent(orgId: string, input: CreateTestRunInput) {
    return this.deps.agents.resolveForTask(orgId, input.agent_id ?? 'default', input.agent_version ?? 'published');
  }

  /** The cases in order with their repeat and customer: the run's repeat, else the case's in the set, else the set's, else 1. */
  private async plannedCases(orgId: string, input: CreateTestRunInput): Promise<Array<{ row: CaseRow; repeat: number; customer: CustomerSpec | null }>> {
    if (input.test_case_ids) {
      const rows = await findLiveCases(this.deps.db, orgId, input.test_case_ids);
      const byId = new Map(rows.map((row) => [row.id, row]));
      return input.test_case_ids.map((id, index) => {
        const row = byId.get(id);
        if (!row) throw invalidRequest(`test_case_ids[${index}]: no test case ${id}`);
        return { row, repeat: input.repeat ?? 1, customer: (row.customer as CustomerSpec | null) ?? null };
      });
    }
    const set = await findLiveSet(this.deps.db, orgId, input.test_set_id!);
    if (!set) throw invalidRequest(`test_set_id: no test set ${input.test_set_id}`);
    const members = await setCases(this.deps.db, set.id);
    if (!members.length) throw invalidRequest(`test_set_id: test set ${set.id} has no cases`);
    const rows = new Map((await findLiveCases(this.deps.db, orgId, members.map((member) => member.test_case_id))).map((row) => [row.id, row]));
    return members
      .filter((member) => rows.has(member.test_case_id))
      .map((member) => {
        const row = rows.get(member.test_case_id)!;
        return { row, repeat: input.repeat ?? member.repeat ?? set.repeat, customer: ((row.customer ?? set.customer) as CustomerSpec | null) ?? null };
      });
  }

  /** A case as this run will try it: its start state fixed at its version now. */
  private async snapshot(orgId: string, row: CaseRow, customer: CustomerSpec | null, images: string[], index: number): Promise<CaseSnapshot> {
    let disk: CaseSnapshot['disk'];
    let version = 0;
    let pinned: string | null = null;
    let image: string;
    if (row.start_state.startsWith('ss_')) {
      const state = await findStartState(this.deps.db, orgId, row.start_state);
      if (!state) throw invalidRequest(`test case ${row.id} (index ${index}): start_state ${row.start_state} no longer exists`);
      if (state.version < 1) throw invalidRequest(`test case ${row.id} (index ${index}): start_state ${row.start_state} has no saved version yet (it is ${state.status})`);
      version = state.version;
      disk = stateDisk(state, state.version);
      pinned = state.runner_id;
      image = state.image;
    } else {
      if (!images.includes(row.start_state)) throw invalidRequest(`test case ${row.id} (index ${index}): no runner has the image ${row.start_state}`);
      image = row.start_state;
      disk = { image };
    }
    return {
      name: row.name,
      prompt: row.prompt,
      start_state: row.start_state,
      start_state_version: version,
      disk,
      os: osOfImage(image),
      pinned_runner_id: pinned,
      setup_script: row.setup_script,
      check_script: row.success?.check_script ?? null,
      rubric: row.success?.rubric ?? null,
      customer,
      approvals: row.operator?.approvals ?? 'none',
      limits: { minutes: row.limits?.minutes ?? DEFAULT_LIMITS.minutes, steps: row.limits?.steps ?? DEFAULT_LIMITS.steps },
    };
  }
}

export type { TestRunRow };
