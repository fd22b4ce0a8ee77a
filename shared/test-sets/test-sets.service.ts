import type { Knex } from '../db/knex';
import type { Caller } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { invalidRequest, notFound } from '../errors';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import type { Customer } from '../test-cases/test-case-rows';
import { shareLockLiveCases } from '../test-cases/test-cases.repository';
import { toTestSet, type TestSet } from './test-set-object';
import type { TestSetRow } from './test-set-rows';
import { casesOfSets, findSet, insertSet, listSets, replaceSetCases, updateSet } from './test-sets.repository';

export interface TestSetsDeps {
  db: Knex;
}

export interface SetCaseInput {
  test_case_id: string;
  repeat?: number | null;
}

export interface TestSetInput {
  name?: string;
  description?: string;
  repeat?: number;
  customer?: Customer | null;
  cases?: SetCaseInput[];
  metadata?: Record<string, string>;
}

/**
 * Test sets (spec: Test set; docs/evals.md "Test cases and test sets"): an ordered list of the
 * org's live cases, each at most once (`repeat` says how many tries a case gets). Changes are
 * audited in their transaction (`test_set.created`, `.updated`, `.deleted`). Locks follow the
 * order of `TestCasesService`: the set first, then its cases.
 */
export class TestSetsService {
  constructor(private readonly deps: TestSetsDeps) {}

  async create(caller: Caller, input: TestSetInput & { name: string }, requestId?: string): Promise<TestSet> {
    const id = newId('ts');
    const row = await this.deps.db.transaction(async (trx) => {
      const inserted = await insertSet(trx, {
        id,
        org_id: caller.orgId,
        name: input.name.trim(),
        description: input.description ?? '',
        repeat: input.repeat ?? 1,
        customer: input.customer ?? null,
        metadata: input.metadata ?? {},
      });
      // The set is new and nobody else can see it yet; its cases are share-locked by the check.
      await this.replaceCases(trx, caller.orgId, id, input.cases ?? []);
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_set.created', objectType: 'test_set', objectId: id, data: { name: inserted.name, case_count: input.cases?.length ?? 0 }, requestId });
      return inserted;
    });
    return this.withCases(row);
  }

  async list(orgId: string, page: PageRequest): Promise<Page<TestSet>> {
    const rows = await listSets(this.deps.db, orgId, page, (row) => row);
    const cases = await casesOfSets(this.deps.db, rows.data.map((row) => row.id));
    return { ...rows, data: rows.data.map((row) => toTestSet(row, cases.get(row.id)!)) };
  }

  async get(orgId: string, id: string): Promise<TestSet> {
    const row = await findSet(this.deps.db, orgId, id);
    if (!row) throw notFound(`No test set ${id}`);
    return this.withCases(row);
  }

  /** Changes only the fields sent; `cases` replaces the list. */
  async update(caller: Caller, id: string, input: TestSetInput, requestId?: string): Promise<TestSet> {
    const row = await this.deps.db.transaction(async (trx) => {
      const current = await findSet(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No test set ${id}`);
      const fields: Partial<TestSetRow> = {};
      if (input.name !== undefined) fields.name = input.name.trim();
      if (input.description !== undefined) fields.description = input.description;
      if (input.repeat !== undefined) fields.repeat = input.repeat;
      if (input.customer !== undefined) fields.customer = input.customer;
      if (input.metadata !== undefined) fields.metadata = input.metadata;
      if (input.cases !== undefined) await this.replaceCases(trx, caller.orgId, id, input.cases);
      const updated = await updateSet(trx, id, fields);
      const changed = [...Object.keys(fields), ...(input.cases !== undefined ? ['cases'] : [])];
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_set.updated', objectType: 'test_set', objectId: id, data: { fields: changed }, requestId });
      return updated;
    });
    return this.withCases(row);
  }

  /** Soft-deletes a set and empties its list (no case is "in" a deleted set); its cases stay. Returns it as it was. */
  async delete(caller: Caller, id: string, requestId?: string): Promise<TestSet> {
    const before = await this.deps.db.transaction(async (trx) => {
      const current = await findSet(trx, caller.orgId, id, true);
      if (!current) throw notFound(`No test set ${id}`);
      const set = toTestSet(current, (await casesOfSets(trx, [id])).get(id)!);
      await replaceSetCases(trx, id, []);
      await updateSet(trx, id, { deleted_at: trx.fn.now() as never });
      await recordAudit(trx, { orgId: caller.orgId, actor: caller.actor, action: 'test_set.deleted', objectType: 'test_set', objectId: id, data: { name: current.name }, requestId });
      return set;
    });
    return before;
  }

  private async withCases(row: TestSetRow): Promise<TestSet> {
    return toTestSet(row, (await casesOfSets(this.deps.db, [row.id])).get(row.id)!);
  }

  /** Each entry must be a live case of the org, at most once: 400 naming `cases[i].test_case_id`. */
  private async replaceCases(trx: Knex.Transaction, orgId: string, setId: string, cases: SetCaseInput[]): Promise<void> {
    const first = new Map<string, number>();
    for (const [index, entry] of cases.entries()) {
      const earlier = first.get(entry.test_case_id);
      if (earlier !== undefined) throw invalidRequest(`cases[${index}].test_case_id: ${entry.test_case_id} is already at cases[${earlier}]; give it a repeat instead`);
      first.set(entry.test_case_id, index);
    }
    const live = await shareLockLiveCases(trx, orgId, [...first.keys()]);
    for (const [index, entry] of cases.entries()) {
      if (!live.has(entry.test_case_id)) throw invalidRequest(`cases[${index}].test_case_id: no test case ${entry.test_case_id}`);
    }
    await replaceSetCases(trx, setId, cases.map((entry) => ({ test_case_id: entry.test_case_id, repeat: entry.repeat ?? null })));
  }
}
