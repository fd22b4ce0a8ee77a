import type { Knex } from '../db/knex';
import type { Caller } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import { visibleImages } from '../start-states/start-states.repository';
import { appendSetCases, findSet, removeCaseFromSets, setIdsHoldingCase } from '../test-sets/test-sets.repository';
import { changedCaseFields, newCaseFields, type TestCaseInput } from './test-case-input';
import { toTestCase, type TestCase } from './test-case-object';
import type { TestCaseRow } from './test-case-rows';
import {
  findCase,
  insertCasesUnlessKeyTaken,
  listCases,
  lockCasesByKey,
  shareLockLiveStartStates,
  updateCase,
  type CaseFilter,
  type NewTestCase,
} from './test-cases.repository';

export interface TestCasesDeps {
  db: Knex;
}

export interface BatchResult {
  data: TestCase[];
  created: number;
  updated: number;
}

/** How often a batch is tried again when another batch took one of its keys first, or PostgreSQL broke a deadlock. */
const BATCH_ATTEMPTS = 5;

/** Asked to start the batch's transaction again: another batch committed a key this one meant to create. */
class KeyTakenMeanwhile extends Error {}

/**
 * Test cases (spec: Test case; docs/evals.md "Test cases and test sets"): the batch upsert by
 * key, and reading, changing and deleting one. Each change is one transaction with its audit
 * rows (`test_case.created`, `test_case.updated`, `test_case.deleted`, one per case).
 *
 * Lock order, the same everywhere evals' rows are changed, so that no two transactions wait on
 * each other in a circle: start states (a case naming one share-locks it; deleting one locks it
 * for update), then test sets (for update, to change their list of cases), then test cases.
 */
export class TestCasesService {
  constructor(private readonly deps: TestCasesDeps) {}

  /**
   * Creates or updates up to 500 cases at once, all or nothing: a case with the key of a live
   * case updates it (only the fields sent), any other is created. Two batches with the same new
   * keys at once: the unique index `test_cases_key` lets one insert; the other finds the keys
   * taken, and its transaction is run again, updating them.
   */
  async batch(caller: Caller, input: { cases: TestCaseInput[]; test_set_id?: string }, requestId?: string): Promise<BatchResult> {
    checkKeysUnique(input.cases);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.deps.db.transaction((trx) => this.batchIn(trx, caller, input, requestId));
      } catch (error) {
        if (attempt >= BATCH_ATTEMPTS || !(error instanceof KeyTakenMeanwhile || isDeadlock(error))) throw error;
      }
    }
  }

  private async batchIn(trx: Knex.Transaction, caller: Caller, input: { cases: TestCaseInput[]; test_set_id?: string }, requestId?: string): Promise<BatchResult> {
    const { orgId } = caller;
    await this.checkStartStates(trx, orgId, input.cases.map((c, index) => ({ at: `cases[${index}].`, startState: c.start_state })));
    if (input.test_set_id !== undefined && !(await findSet(trx, orgId, input.test_set_id, true))) throw invalidRequest(`test_set_id: no test set ${input.test_set_id}`);

    const keys = input.cases.flatMap((c) => (c.key !== undefined ? [c.key] : []));
    const existing = new Map((await lockCasesByKey(trx, orgId, keys)).map((row) => [row.key!, row]));
    const results: TestCaseRow[] = new Array(input.cases.length);
    const toCreate: Array<{ index: number; row: NewTestCase }> = [];
    for (const [index, one] of input.cases.entries()) {
      const current = one.key !== undefined ? existing.get(one.key) : undefined;
      if (!current) toCreate.push({ index, row: { ...newCaseFields(one, `cases[${index}].`), id: newId('tc'), org_id: orgId } });
    }
    // Keys in one order for every batch: two batches wait for each other's keys, never in a circle.
    toCreate.sort((a, b) => (a.row.key ?? '').localeCompare(b.row.key ?? ''));
    const inserted = new Map((await insertCasesUnlessKeyTaken(trx, toCreate.map((c) => c.row))).map((row) => [row.id, row]));
    if (inserted.size < toCreate.length) throw new KeyTakenMeanwhile();
    for (const { index, row } of toCreate) results[index] = inserted.get(row.id)!;

    for (const [index, one] of input.cases.entries()) {
      const current = one.key !== undefined ? existing.get(one.key) : undefined;
      if (!current) continue;
      const fields = changedCaseFields(one, current);
      results[index] = await updateCase(trx, current.id, fields);
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'test_case.updated', objectType: 'test_case', objectId: current.id, data: { key: current.key, fields: Object.keys(fields), batch: true }, requestId });
    }
    for (const { row } of toCreate) {
      await recordAudit(trx, { orgId, actor: caller.actor, action: 'test_case.created', objectType: 'test_case', objectId: row.id, data: { key: row.key, name: row.name, batch: true }, requestId });
    }
    if (input.test_set_id !== undefined) await appendSetCases(trx, input.test_set_id, results.map((row) => row.id));
    return { data: results.map(toTestCase), created: toCreate.length, updated: input.cases.length - toCreate.length };
  }

  async list(orgId: string, filter: CaseFilter, page: PageRequest): Promise<Page<TestCase>> {
    return listCases(this.deps.db, orgId, filter, page, toTestCase);
  }

  async get(orgId: string, id: string): Promise<TestCase> {
    const row = await findCase(this.deps.db, orgId, id);
    if (!row) throw notFound(`No test case ${id}`);
    return toTestCase(row);
  }

  /** Changes only the fields sent, validated as a batch's update is (messages name the field). */
  async update(caller: Caller, id: string, input: TestCaseInput, requestId?: string): Promise<TestCase> {
    const row = await this.deps.db
      .transaction(async (trx) => {
        await this.checkStartStates(trx, caller.orgId, [{ at: '', startState: input.start_state }]);
        const current = await findCase(trx, caller.orgId, id, true);
        if (!current) throw notFound(`No test case ${id}`);
        const fields = changedCaseFields(input, current);
        const updated = await updateCase(trx, id, fields);
        await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_case.updated', objectType: 'test_case', objectId: id, data: { key: updated.key, fields: Object.keys(fields) }, requestId });
        return updated;
      })
      .catch((error: unknown) => {
        if (isUniqueViolation(error)) throw conflict(`key: another test case has the key ${JSON.stringify(input.key)}`, 'key_taken');
        throw error;
      });
    return toTestCase(row);
  }

  /** Soft-deletes a case (its key is free again) and takes it out of every set; returns it as it was. */
  async delete(caller: Caller, id: string, requestId?: string): Promise<TestCase> {
    const row = await this.deps.db.transaction(async (trx) => {
      // Sets before the case (the lock order above): lock the sets that hold it, then the case.
      for (const setId of await setIdsHoldingCase(trx, id)) await findSet(trx, caller.orgId, setId, true);
      const current = await findCase(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No test case ${id}`);
      const fromSets = await removeCaseFromSets(trx, id);
      await updateCase(trx, id, { deleted_at: trx.fn.now() as never });
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_case.deleted', objectType: 'test_case', objectId: id, data: { key: current.key, name: current.name, test_set_ids: fromSets }, requestId });
      return current;
    });
    return toTestCase(row);
  }

  /**
   * Every `start_state` given must be an image of the org's runners or a live `ss_` state of the
   * org; 400 naming `{at}start_state` otherwise. The states are share-locked until commit (see
   * `shareLockLiveStartStates`).
   */
  private async checkStartStates(trx: Knex.Transaction, orgId: string, refs: Array<{ at: string; startState: string | undefined }>): Promise<void> {
    const named = refs.filter((ref): ref is { at: string; startState: string } => ref.startState !== undefined);
    if (named.length === 0) return;
    const states = await shareLockLiveStartStates(trx, orgId, [...new Set(named.filter((ref) => ref.startState.startsWith('ss_')).map((ref) => ref.startState))]);
    const needsImages = named.some((ref) => !ref.startState.startsWith('ss_'));
    const images = needsImages ? new Set((await visibleImages(trx, orgId)).map((image) => image.image)) : new Set<string>();
    for (const ref of named) {
      if (states.has(ref.startState) || images.has(ref.startState)) continue;
      throw invalidRequest(
        ref.startState.startsWith('ss_')
          ? `${ref.at}start_state: no start state ${ref.startState}`
          : `${ref.at}start_state: no start state ${ref.startState} (neither a start state of this org nor an image of its runners; GET /v1/start_states lists them)`,
      );
    }
  }
}

/** Two cases of one batch with the same key would be one case: 400 naming the second. */
function checkKeysUnique(cases: TestCaseInput[]): void {
  const seen = new Map<string, number>();
  for (const [index, one] of cases.entries()) {
    if (one.key === undefined) continue;
    const first = seen.get(one.key);
    if (first !== undefined) throw invalidRequest(`cases[${index}].key: the same key as cases[${first}] (${JSON.stringify(one.key)}); a key names one case`);
    seen.set(one.key, index);
  }
}

function isDeadlock(error: unknown): boolean {
  return !(error instanceof ApiError) && (error as { code?: string }).code === '40P01';
}

function isUniqueViolation(error: unknown): boolean {
  return (error as { code?: string }).code === '23505';
}
