/**
 * Timestamps as the API shows them. The API's reads of its objects (prepared statements, see
 * docs/benchmarks.md, reads) have PostgreSQL write their `timestamptz` columns as the API's text:
 * pg's parsing of each into a `Date` and the mapper's `toISOString()` of it cost about as much as
 * parsing, mapping and serialising the rest of the row (a page of 20 sessions holds 80 of them).
 * Rows read through Knex still carry `Date`s; `isoTimestamp` gives the API's text from either.
 */

/** `Date.prototype.toISOString()`'s text of a timestamp: UTC, milliseconds, `2026-11-25T12:00:38.838Z`. */
export type IsoTimestamp = string;

/**
 * SQL writing the `timestamptz` expression `column` as an `IsoTimestamp`, whatever the session's
 * time zone (`at time zone 'UTC'`). Milliseconds are truncated, as pg's date parser truncates the
 * microseconds, so both ways of reading a row give the same text. Null stays null.
 */
export function isoTimestampSql(column: string): string {
  return `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`;
}

/** The API's text of a timestamp read either way: a `Date` (Knex) or already the text (`isoTimestampSql`). */
export function isoTimestamp(value: Date | IsoTimestamp): IsoTimestamp;
export function isoTimestamp(value: Date | IsoTimestamp | null): IsoTimestamp | null;
export function isoTimestamp(value: Date | IsoTimestamp | null): IsoTimestamp | null {
  if (value === null) return null;
  return typeof value === 'string' ? value : value.toISOString();
}

/**
 * The select list of `columns` (plain names) of the table aliased `alias` (or none), each of
 * `timestamps` written as an `IsoTimestamp` under its own name.
 */
export function selectColumns(columns: readonly string[], timestamps: readonly string[] = [], alias?: string): string {
  return columns
    .map((column) => {
      const name = alias ? `${alias}."${column}"` : `"${column}"`;
      return timestamps.includes(column) ? `${isoTimestampSql(name)} as "${column}"` : name;
    })
    .join(', ');
}

/** `Row` with its timestamps `K` read either way: as `Date` (Knex) or as the API's text (the API's prepared reads). */
export type WithIsoTimestamps<Row, K extends keyof Row> = Omit<Row, K> & { [P in K]: Row[P] | IsoTimestamp };

/**
 * A row that came back as JSON (PostgreSQL's `row_to_json`, which prepared statements use so that
 * a migration adding a column leaves their results as they were), with its `timestamps` columns
 * as `Date`s again; a null stays null.
 */
export function rowFromJson<Row>(json: object, timestamps: readonly string[]): Row {
  const row: Record<string, unknown> = { ...json };
  for (const column of timestamps) if (typeof row[column] === 'string') row[column] = new Date(row[column] as string);
  return row as Row;
}
