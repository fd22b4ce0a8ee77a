import type { Knex } from '../db/knex';
import { paginate, type Page, type PageRequest } from '../pagination';
import type { TestCaseFields, TestCaseRow } from './test-case-rows';

type Db = Knex | Knex.Transaction;

const JSON_COLUMNS = ['success', 'customer', 'operator', 'limits', 'tags', 'metadata'] as const;

/** jsonb columns go in as JSON text (an array would otherwise be read by pg as a PostgreSQL array). */
function storable(fields: Partial<TestCaseFields>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...fields };
  for (const column of JSON_COLUMNS) if (column in fields) out[column] = fields[column] === null ? null : JSON.stringify(fields[column]);
  return out;
}

export type NewTestCase = TestCaseFields & { id: string; org_id: string };

/**
 * Inserts cases; one whose key a live case of the org already has (another batch committed it
 * meanwhile) is skipped, not an error: the caller sees fewer rows back and retries as an update.
 * Rows go in in the order given (the caller sorts by key, so two batches wait for each other's
 * keys in one order and cannot deadlock on them).
 */
export async function insertCasesUnlessKeyTaken(db: Db, rows: NewTestCase[]): Promise<TestCaseRow[]> {
  if (rows.length === 0) return [];
  return db('test_cases').insert(rows.map(storable)).onConflict().ignore().returning('*');
}

/** The org's live cases with these keys, locked for the batch that updates them. */
export async function lockCasesByKey(db: Db, orgId: string, keys: string[]): Promise<TestCaseRow[]> {
  if (keys.length === 0) return [];
  return db<TestCaseRow>('test_cases').where({ org_id: orgId }).whereIn('key', keys).whereNull('deleted_at').orderBy('id').forUpdate();
}

/** One of the org's live cases. */
export async function findCase(db: Db, orgId: string, id: string, lock = false): Promise<TestCaseRow | undefined> {
  const query = db<TestCaseRow>('test_cases').where({ org_id: orgId, id }).whereNull('deleted_at').first();
  return lock ? query.forUpdate() : query;
}

/** Which of `ids` are live cases of the org, with their keys; they are share-locked so that a delete waits for the caller's commit. */
export async function shareLockLiveCases(db: Db, orgId: string, ids: string[]): Promise<Map<string, string | null>> {
  if (ids.length === 0) return new Map();
  const rows = await db('test_cases').where({ org_id: orgId }).whereIn('id', ids).whereNull('deleted_at').orderBy('id').forShare().select('id', 'key');
  return new Map(rows.map((row: { id: string; key: string | null }) => [row.id, row.key]));
}

export async function updateCase(db: Db, id: string, fields: Partial<TestCaseRow>): Promise<TestCaseRow> {
  const [row] = await db('test_cases')
    .where({ id })
    .update({ ...storable(fields as Partial<TestCaseFields>), updated_at: db.fn.now() })
    .returning('*');
  return row as TestCaseRow;
}

export interface CaseFilter {
  category?: string;
  tag?: string;
  testSetId?: string;
}

/** A page of the org's live cases, newest first. */
export function listCases<T>(db: Knex, orgId: string, filter: CaseFilter, page: PageRequest, toObject: (row: TestCaseRow) => T): Promise<Page<T>> {
  const query = db('test_cases').where({ org_id: orgId }).whereNull('deleted_at');
  if (filter.category !== undefined) query.where({ category: filter.category });
  if (filter.tag !== undefined) query.whereRaw('tags @> ?::jsonb', [JSON.stringify([filter.tag])]);
  if (filter.testSetId !== undefined) {
    const setId = filter.testSetId;
    query.whereExists((sub) => sub.select(db.raw('1')).from('test_set_cases').whereRaw('test_set_cases.test_case_id = test_cases.id').andWhere('test_set_cases.test_set_id', setId));
  }
  return paginate<TestCaseRow & Record<string, unknown>, T>(query, page, toObject);
}

/**
 * The live cases of org `$1` that start from state `$2`, oldest first, at most 100 (`id`, `seq`):
 * read by the statement that deletes the state unless they exist (`deleteStartStateUnlessUsed`).
 */
export const CASES_USING_START_STATE = 'select id, seq from test_cases where org_id = $1 and start_state = $2 and deleted_at is null order by seq limit 100';

/**
 * Which of `ids` are live `ss_` states of the org. Share-locks them: `StartStatesService.delete`
 * takes its state's row FOR UPDATE, so a case naming a state and the state's delete happen one
 * after the other, never across each other (the delete then sees the case: 409 `in_use`; or the
 * case sees the state gone: 400).
 */
export async function shareLockLiveStartStates(db: Db, orgId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db('start_states').where({ org_id: orgId }).whereIn('id', ids).whereNull('deleted_at').orderBy('id').forShare().select('id');
  return new Set(rows.map((row: { id: string }) => row.id));
}
