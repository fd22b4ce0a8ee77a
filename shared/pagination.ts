import type { Knex } from './db/knex';
import { listReader, type ListParameter } from './db/batched-reads';
import { selectColumns } from './db/timestamps';
import { invalidRequest } from './errors';

/** The spec's list envelope. */
export interface Page<T> {
  data: T[];
  has_more: boolean;
  next_cursor: string | null;
}

export interface PageRequest {
  limit: number;
  cursor: string | null;
}

export const DEFAULT_PAGE_SIZE = 20;
export const MAX_PAGE_SIZE = 100;

/**
 * Cursors are opaque to clients: base64url of the last row's sequence number. Lists order by a
 * per-table increasing sequence, newest first, and a cursor asks for rows strictly older than
 * the one it names, so rows inserted meanwhile never shift, repeat or hide later pages.
 */
export function encodeCursor(seq: number): string {
  return Buffer.from(JSON.stringify({ s: seq })).toString('base64url');
}

export function decodeCursor(cursor: string, max = Number.MAX_SAFE_INTEGER): number {
  try {
    const value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { s?: unknown };
    if (typeof value.s === 'number' && Number.isSafeInteger(value.s) && value.s > 0 && value.s <= max) return value.s;
  } catch {
    // fall through to the error below
  }
  throw invalidRequest('cursor is not a cursor this list returned');
}

/** The largest value of PostgreSQL's `integer`: the bound of a cursor over such a column. */
export const PG_INTEGER_MAX = 2_147_483_647;

/**
 * Runs `query` (already filtered and scoped to the org) as one page, newest first by
 * `seqColumn`, and maps rows with `toObject`. `seqMax` is the largest value `seqColumn` can
 * hold: a forged cursor past it is a 400, not a 500 from the database (`PG_INTEGER_MAX` for an
 * `integer` column; a `bigint` one holds every safe integer).
 */
export async function paginate<Row extends Record<string, unknown>, T>(
  query: Knex.QueryBuilder,
  page: PageRequest,
  toObject: (row: Row) => T,
  seqColumn = 'seq',
  seqMax = Number.MAX_SAFE_INTEGER,
): Promise<Page<T>> {
  if (page.cursor !== null) query.where(seqColumn, '<', decodeCursor(page.cursor, seqMax));
  const rows = (await query.orderBy(seqColumn, 'desc').limit(page.limit + 1)) as Row[];
  return toPage(rows, page.limit, toObject, seqColumn.split('.').pop()!);
}

/** The page of `rows` (read with one more than `limit`, newest first), its cursor from the last row's `seqColumn`. */
function toPage<Row extends Record<string, unknown>, T>(rows: Row[], limit: number, toObject: (row: Row) => T, seqColumn: string): Page<T> {
  const hasMore = rows.length > limit;
  const pageRows = hasMore ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(toObject),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(Number(last[seqColumn])) : null,
  };
}

/** What `preparedPage` reads: the org's rows of `table`, newest first by `seqColumn`. */
export interface PagedTable {
  table: string;
  /** The columns read, named (a prepared `select *` fails once a migration adds a column under a running process). */
  columns: readonly string[];
  /** Of `columns`, the `timestamptz` ones to read as the API's text (`IsoTimestamp`, shared/db/timestamps.ts) rather than as `Date`. */
  timestamps?: readonly string[];
  seqColumn?: string;
}

/** The query of one shape of list (its table, the filters given, with or without a cursor), for a `ListReader`. */
function pageQuery(spec: PagedTable, filters: string[], withCursor: boolean): { name: string; parameters: ListParameter[]; query: string } {
  const seq = spec.seqColumn ?? 'seq';
  for (const name of [spec.table, seq, ...spec.columns, ...filters]) if (!/^[a-z_]+$/.test(name)) throw new Error(`not a column or table name: ${name}`);
  const conditions = ['org_id = k.org_id', ...filters.map((column) => `"${column}" = k.f_${column}`)];
  if (withCursor) conditions.push(`"${seq}" < k.before`);
  return {
    name: `page:${spec.table}:${filters.join(',')}:${withCursor ? 'after' : 'first'}`,
    parameters: [
      { name: 'org_id', type: 'text' },
      ...filters.map((column) => ({ name: `f_${column}`, type: 'text' as const })),
      ...(withCursor ? [{ name: 'before', type: 'bigint' as const }] : []),
      { name: 'lim', type: 'integer' },
    ],
    query: `select ${selectColumns(spec.columns, spec.timestamps)} from ${spec.table}
             where ${conditions.join(' and ')} order by "${seq}" desc limit k.lim`,
  };
}

/**
 * The same page as `paginate`, read with one prepared statement per shape of list (which
 * filters are set, whether a cursor is), and with the other reads of that shape made in the
 * same turn of the event loop (shared/db/batched-reads.ts): one round trip for them all,
 * planned once per connection, without Knex's query building (more CPU than the read itself
 * for a first page). For the lists the API reads most; `filters` are equality conditions on
 * text columns, undefined ones left out. `spec.columns` must include the sequence column.
 */
export async function preparedPage<Row extends Record<string, unknown>, T>(
  db: Knex,
  spec: PagedTable,
  orgId: string,
  filters: Record<string, string | undefined>,
  page: PageRequest,
  toObject: (row: Row) => T,
): Promise<Page<T>> {
  const given = Object.entries(filters).filter((entry): entry is [string, string] => entry[1] !== undefined);
  const cursor = page.cursor === null ? [] : [decodeCursor(page.cursor)];
  const shape = pageQuery(spec, given.map(([column]) => column), cursor.length > 0);
  const reader = listReader<Row>(db, shape.name, shape.parameters, shape.query);
  const rows = await reader.read([orgId, ...given.map(([, value]) => value), ...cursor, page.limit + 1]);
  return toPage(rows, page.limit, toObject, spec.seqColumn ?? 'seq');
}
