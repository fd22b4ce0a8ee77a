import type { Knex } from './db/knex';
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
  const hasMore = rows.length > page.limit;
  const pageRows = hasMore ? rows.slice(0, page.limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return {
    data: pageRows.map(toObject),
    has_more: hasMore,
    next_cursor: hasMore && last ? encodeCursor(Number(last[seqColumn.split('.').pop()!])) : null,
  };
}
