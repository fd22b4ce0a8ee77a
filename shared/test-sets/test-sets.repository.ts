import type { Knex } from '../db/knex';
import { paginate, type Page, type PageRequest } from '../pagination';
import type { SetCaseEntry, TestSetRow } from './test-set-rows';

type Db = Knex | Knex.Transaction;

function storable(fields: Partial<TestSetRow>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...fields };
  if ('customer' in fields) out.customer = fields.customer === null ? null : JSON.stringify(fields.customer);
  if ('metadata' in fields) out.metadata = JSON.stringify(fields.metadata);
  return out;
}

export async function insertSet(db: Db, row: Pick<TestSetRow, 'id' | 'org_id' | 'name' | 'description' | 'repeat' | 'customer' | 'metadata'>): Promise<TestSetRow> {
  const [inserted] = await db('test_sets').insert(storable(row)).returning('*');
  return inserted as TestSetRow;
}

/** One of the org's live sets; locked, it also orders changes to its list of cases. */
export async function findSet(db: Db, orgId: string, id: string, lock = false): Promise<TestSetRow | undefined> {
  const query = db<TestSetRow>('test_sets').where({ org_id: orgId, id }).whereNull('deleted_at').first();
  return lock ? query.forUpdate() : query;
}

export async function updateSet(db: Db, id: string, fields: Partial<TestSetRow>): Promise<TestSetRow> {
  const [row] = await db('test_sets')
    .where({ id })
    .update({ ...storable(fields), updated_at: db.fn.now() })
    .returning('*');
  return row as TestSetRow;
}

export function listSets<T>(db: Knex, orgId: string, page: PageRequest, toObject: (row: TestSetRow) => T): Promise<Page<T>> {
  return paginate<TestSetRow & Record<string, unknown>, T>(db('test_sets').where({ org_id: orgId }).whereNull('deleted_at'), page, toObject);
}

/** The cases of each set, in order, with their keys (one query for a page of sets). */
export async function casesOfSets(db: Db, setIds: string[]): Promise<Map<string, SetCaseEntry[]>> {
  const bySet = new Map<string, SetCaseEntry[]>(setIds.map((id) => [id, []]));
  if (setIds.length === 0) return bySet;
  const rows = await db('test_set_cases as s')
    .join('test_cases as c', 'c.id', 's.test_case_id')
    .whereIn('s.test_set_id', setIds)
    .orderBy([{ column: 's.test_set_id' }, { column: 's.position' }])
    .select('s.test_set_id', 's.test_case_id', 's.repeat', 'c.key');
  for (const row of rows as Array<SetCaseEntry & { test_set_id: string }>) bySet.get(row.test_set_id)!.push({ test_case_id: row.test_case_id, repeat: row.repeat, key: row.key });
  return bySet;
}

/** Replaces a set's list of cases (the set's row locked by the caller). */
export async function replaceSetCases(db: Db, setId: string, cases: Array<{ test_case_id: string; repeat: number | null }>): Promise<void> {
  await db('test_set_cases').where({ test_set_id: setId }).delete();
  if (cases.length === 0) return;
  await db('test_set_cases').insert(cases.map((entry, index) => ({ test_set_id: setId, position: index + 1, test_case_id: entry.test_case_id, repeat: entry.repeat })));
}

/** Appends the cases not already in the set, in the order given (the set's row locked by the caller); returns how many. */
export async function appendSetCases(db: Db, setId: string, caseIds: string[]): Promise<number> {
  const present = new Set((await db('test_set_cases').where({ test_set_id: setId }).pluck('test_case_id')) as string[]);
  const { max } = (await db('test_set_cases').where({ test_set_id: setId }).max('position as max').first()) as { max: number | null };
  const added = [...new Set(caseIds)].filter((id) => !present.has(id));
  if (added.length === 0) return 0;
  const start = (max ?? 0) + 1;
  await db('test_set_cases').insert(added.map((id, index) => ({ test_set_id: setId, position: start + index, test_case_id: id, repeat: null })));
  return added.length;
}

/** Takes a case out of every set (its positions leave gaps; order is kept); returns the sets it was in. */
export async function removeCaseFromSets(db: Db, caseId: string): Promise<string[]> {
  const rows = await db('test_set_cases').where({ test_case_id: caseId }).delete().returning('test_set_id');
  const setIds = [...new Set(rows.map((row: { test_set_id: string }) => row.test_set_id))];
  if (setIds.length > 0) await db('test_sets').whereIn('id', setIds).update({ updated_at: db.fn.now() });
  return setIds;
}

/** The ids of the sets that hold a case, in id order (the order their rows are locked in). */
export async function setIdsHoldingCase(db: Db, caseId: string): Promise<string[]> {
  return (await db('test_set_cases').where({ test_case_id: caseId }).distinct().orderBy('test_set_id').pluck('test_set_id')) as string[];
}
