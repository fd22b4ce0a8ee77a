import type { Knex } from '../db/knex';
import { paginate, type Page, type PageRequest } from '../pagination';
import type { RunCaseRow, TestRunRow, TryRow, TryStatus } from './test-run-rows';
import type { TestCaseRow } from '../test-cases/test-case-rows';
import type { MachineRow } from '../machines/machine-rows';
import { machineFromJson } from '../machines/machines.repository';

type Db = Knex | Knex.Transaction;

const json = (value: unknown) => JSON.stringify(value) as never;

/** A live case of the org, as the run reads it. */
export type CaseRow = Pick<TestCaseRow, 'id' | 'key' | 'name' | 'prompt' | 'start_state' | 'setup_script' | 'success' | 'customer' | 'operator' | 'limits'>;

export async function findLiveCases(db: Db, orgId: string, ids: string[]): Promise<CaseRow[]> {
  return db('test_cases').where({ org_id: orgId }).whereIn('id', ids).whereNull('deleted_at');
}

export async function findLiveSet(db: Db, orgId: string, id: string): Promise<{ id: string; repeat: number; customer: Record<string, unknown> | null } | undefined> {
  return db('test_sets').where({ org_id: orgId, id }).whereNull('deleted_at').first('id', 'repeat', 'customer');
}

/** A set's cases in order, each with its own repeat (null: the set's). */
export async function setCases(db: Db, setId: string): Promise<Array<{ test_case_id: string; repeat: number | null }>> {
  return db('test_set_cases').where({ test_set_id: setId }).orderBy('position').select('test_case_id', 'repeat');
}

export async function insertRun(db: Db, row: Omit<TestRunRow, 'seq' | 'created_at' | 'started_at' | 'ended_at'>): Promise<TestRunRow> {
  const [inserted] = await db<TestRunRow>('test_runs').insert({ ...row, agent: json(row.agent), metadata: json(row.metadata) }).returning('*');
  return inserted!;
}

export async function insertRunCases(db: Db, rows: RunCaseRow[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 500) {
    await db('test_run_cases').insert(rows.slice(i, i + 500).map((row) => ({ ...row, snapshot: json(row.snapshot) })));
  }
}

export async function insertTries(db: Db, rows: Array<Pick<TryRow, 'id' | 'org_id' | 'run_id' | 'position' | 'test_case_id' | 'attempt' | 'start_state_version'>>): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000) await db('tries').insert(rows.slice(i, i + 1000).map((row) => ({ ...row, status: 'queued' })));
}

export async function findRun(db: Db, orgId: string | null, id: string, lock = false): Promise<TestRunRow | undefined> {
  const query = db<TestRunRow>('test_runs').where({ id }).first();
  if (orgId) query.andWhere({ org_id: orgId });
  return lock ? query.forUpdate() : query;
}

export async function updateRun(db: Db, id: string, changes: Partial<TestRunRow>): Promise<void> {
  await db('test_runs').where({ id }).update(changes);
}

export function listRuns<T>(db: Knex, orgId: string, filter: { agentId?: string; testSetId?: string }, page: PageRequest, toObject: (row: TestRunRow) => T): Promise<Page<T>> {
  const query = db('test_runs').where({ org_id: orgId });
  if (filter.agentId) query.andWhere({ agent_id: filter.agentId });
  if (filter.testSetId) query.andWhere({ test_set_id: filter.testSetId });
  return paginate<TestRunRow & Record<string, unknown>, T>(query, page, toObject);
}

export async function runCases(db: Db, runId: string): Promise<RunCaseRow[]> {
  return db<RunCaseRow>('test_run_cases').where({ run_id: runId }).orderBy('position');
}

export async function runCase(db: Db, runId: string, position: number): Promise<RunCaseRow | undefined> {
  return db<RunCaseRow>('test_run_cases').where({ run_id: runId, position }).first();
}

/** Each case's try statuses, for the summary. */
export async function tryStatuses(db: Db, runId: string): Promise<Array<{ position: number; status: TryStatus }>> {
  return db('tries').where({ run_id: runId }).orderBy(['position', 'attempt']).select('position', 'status');
}

export function listTries<T>(db: Knex, runId: string, page: PageRequest, toObject: (row: TryRow) => T): Promise<Page<T>> {
  return paginate<TryRow & Record<string, unknown>, T>(db('tries').where({ run_id: runId }), page, toObject);
}

/** What a try's step reads of its run. */
export type RunOfTry = Pick<TestRunRow, 'id' | 'org_id' | 'status' | 'agent'>;

/**
 * A try locked, with what its step reads of its run, its case's snapshot and its machine (if
 * any), in one statement (one round trip on each step of each try).
 */
export async function findTryWithRun(db: Knex.Transaction, id: string): Promise<{ row: TryRow; run: RunOfTry; snapshot: RunCaseRow['snapshot']; machine: MachineRow | undefined } | undefined> {
  const found = await db('tries as t')
    .join('test_runs as r', 'r.id', 't.run_id')
    .join('test_run_cases as c', (join) => join.on('c.run_id', '=', 't.run_id').andOn('c.position', '=', 't.position'))
    .leftJoin('machines as m', 'm.id', 't.machine_id')
    .where('t.id', id)
    .forUpdate('t')
    .first('t.*', 'r.org_id as run_org_id', 'r.status as run_status', 'r.agent as run_agent', 'c.snapshot as case_snapshot', db.raw('row_to_json(m) as try_machine'));
  if (!found) return undefined;
  const { run_org_id: orgId, run_status: status, run_agent: agent, case_snapshot: snapshot, try_machine: machine, ...row } = found;
  return { row: row as TryRow, run: { id: row.run_id, org_id: orgId, status, agent }, snapshot, machine: machine ? machineFromJson(machine) : undefined };
}

export async function findTry(db: Db, id: string, lock = false): Promise<TryRow | undefined> {
  const query = db<TryRow>('tries').where({ id }).first();
  return lock ? query.forUpdate() : query;
}

export async function updateTry(db: Db, id: string, changes: Partial<TryRow>): Promise<TryRow> {
  const fields: Record<string, unknown> = { ...changes };
  for (const key of ['check', 'rubric'] as const) if (key in changes) fields[key] = changes[key] === null ? null : json(changes[key]);
  const [row] = await db<TryRow>('tries').where({ id }).update(fields).returning('*');
  return row!;
}

/** Whether the run still has tries queued or running. */
export async function hasOpenTries(db: Db, runId: string): Promise<boolean> {
  return (await db('tries').where({ run_id: runId }).whereIn('status', ['queued', 'running']).first('id')) !== undefined;
}

/** The run's queued tries are skipped: `cancelled`, ended now (its running tries are stopped one by one, `TryFlow.cancelRun`). */
export async function cancelQueuedTries(db: Db, runId: string): Promise<void> {
  await db('tries').where({ run_id: runId, status: 'queued' }).update({ status: 'cancelled', ended_at: db.fn.now() });
}

/** Running tries of a run (to cancel them). */
export async function openTryIds(db: Db, runId: string, status: TryStatus): Promise<string[]> {
  return (await db('tries').where({ run_id: runId, status }).select('id')).map((row: { id: string }) => row.id);
}

/**
 * Runs with queued tries, fairest first: the org with fewest tries running, then the run that
 * has started fewest tries so far, then the oldest. Runs thus take turns: one large run cannot
 * starve a small one started after it, which gets the next free slot.
 */
export async function runsWaitingFairly(db: Db, limit: number): Promise<Array<{ id: string; org_id: string }>> {
  const { rows } = await db.raw(
    `select r.id, r.org_id
       from test_runs r
      where r.status in ('queued', 'running')
        and exists (select 1 from tries q where q.run_id = r.id and q.status = 'queued')
      order by (select count(*) from tries t where t.org_id = r.org_id and t.status = 'running'),
               (select count(*) from tries t where t.run_id = r.id and t.status <> 'queued'),
               r.seq
      limit ?`,
    [limit],
  );
  return rows;
}

/** The run's next queued try (lowest case position, then attempt), locked for starting; none when another pass took it. */
export async function nextQueuedTry(db: Knex.Transaction, runId: string): Promise<TryRow | undefined> {
  return db<TryRow>('tries').where({ run_id: runId, status: 'queued' }).orderBy([{ column: 'position' }, { column: 'attempt' }, { column: 'seq' }]).first().forUpdate().skipLocked();
}

/**
 * Free slots for a machine of this kind now: the eligible runners' slots less their machines
 * starting or running, less the machines already waiting for the same image (or the same pinned
 * runner). A `stopping` machine's slot counts as free for scheduling: its destroy is on its way,
 * and when it settles the slot passes straight to the oldest waiting machine (placement itself
 * still counts it taken, so a runner is never asked for more than its slots).
 */
export async function freeSlotsFor(db: Db, machine: { orgId: string; image: string; pinnedRunnerId: string | null }, offlineAfterMs: number): Promise<number> {
  const { rows } = await db.raw(
    `select
       (select coalesce(sum(greatest(r.slots - (select count(*) from machines m where m.runner_id = r.id and m.status in ('starting', 'running')), 0)), 0)
          from runners r
         where r.revoked_at is null and r.connection_id is not null and r.last_seen_at > now() - (? * interval '1 millisecond')
           and (r.org_id = ? or r.scope = 'cloud') and r.images \\? ? and (?::text is null or r.id = ?))
     - (select count(*) from machines w
         where w.status = 'waiting' and w.image = ? and w.pinned_runner_id is not distinct from ?::text) as free`,
    [offlineAfterMs, machine.orgId, machine.image, machine.pinnedRunnerId, machine.pinnedRunnerId, machine.image, machine.pinnedRunnerId],
  );
  return Number(rows[0]?.free ?? 0);
}

/**
 * Running tries the sweep advances: those whose awaited change happened `quietMs` ago or more
 * and still have not moved (the job that was to tell them may have been lost, as when a Redis
 * master fails over), and any running for four times that. What each phase waits for is in
 * `TRY_TRANSITIONS`: its machine ended, running, or waiting past `machineWaitMs`; its script's
 * answer; its task's end (the judge's phase too).
 */
export async function triesNeedingAttention(db: Db, options: { quietMs: number; machineWaitMs: number; limit: number }): Promise<string[]> {
  const { quietMs, machineWaitMs, limit } = options;
  const { rows } = await db.raw(
    `select t.id from tries t
      where t.status = 'running' and (
        exists (select 1 from machines m where m.id = t.machine_id and m.status in ('failed', 'destroyed'))
        or (t.phase = 'machine' and exists (
              select 1 from machines m where m.id = t.machine_id and (
                (m.status = 'running' and m.updated_at < now() - (? * interval '1 millisecond'))
                or (m.status = 'waiting' and m.created_at < now() - (? * interval '1 millisecond')))))
        or (t.phase in ('setup', 'check') and (
              select c.status <> 'sent' and c.finished_at < now() - (? * interval '1 millisecond')
                from runner_commands c where c.machine_id = t.machine_id and c.type = 'machine.run'
               order by c.seq desc limit 1))
        or exists (select 1 from tasks k where k.id = t.task_id and k.status in ('completed', 'failed', 'stopped') and k.updated_at < now() - (? * interval '1 millisecond'))
        or t.started_at < now() - (? * interval '1 millisecond'))
      limit ?`,
    [quietMs, machineWaitMs, quietMs, quietMs, quietMs * 4, limit],
  );
  return rows.map((row: { id: string }) => row.id);
}

/** Running runs none of whose tries is queued or running. */
export async function runsWithoutOpenTries(db: Db, limit: number): Promise<string[]> {
  const rows = await db('test_runs as r')
    .where('r.status', 'running')
    .whereNotExists((q) => q.from('tries as t').whereRaw('t.run_id = r.id').whereIn('t.status', ['queued', 'running']))
    .limit(limit)
    .select('r.id');
  return rows.map((row: { id: string }) => row.id);
}
