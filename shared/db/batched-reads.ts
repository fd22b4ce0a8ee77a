import { MicroBatcher } from '../webhooks/micro-batcher';
import { runPrepared, type Knex, type PreparedStatement } from './knex';
import { selectColumns } from './timestamps';

/** A table's rows read by their id within an org (`id`, `org_id` or the table's own names). */
export interface KeyedRead {
  /** The prepared statement's name, unique in the process. */
  name: string;
  table: string;
  /** The columns read, named (a prepared `select *` fails once a migration adds a column under a running process). */
  columns: readonly string[];
  /** Of `columns`, the `timestamptz` ones to read as the API's text (`IsoTimestamp`, ./timestamps.ts) rather than as `Date`. */
  timestamps?: readonly string[];
  /** The row's unique key within the org: `id`, `code`… */
  idColumn: string;
  /** More of the row from another table: `select` expressions and the `join` (the table is `t`). */
  joined?: { select: string; join: string };
}

/** Past this many reads waiting, a batch goes at once. */
const MAX_BATCH = 200;

/**
 * Reads of single rows by id, made in the same turn of the event loop, go to PostgreSQL as one
 * prepared statement (`… join unnest($1, $2)`), one round trip for the lot. Under load most of
 * a single-object read's cost is the round trip itself (two system calls and a wake-up of a
 * PostgreSQL backend on each side, docs/benchmarks.md, reads), not the row; at low load a batch
 * holds one read and waits for nothing but the current turn to end. Nothing is kept between
 * batches: every read sees the row as committed when its batch runs.
 */
export class KeyedReader<Row> {
  private readonly statement: PreparedStatement;
  private readonly batcher: MicroBatcher<{ id: string; orgId: string }, Row | undefined>;

  constructor(db: Knex, spec: KeyedRead) {
    for (const name of [spec.table, spec.idColumn, ...spec.columns]) if (!/^[a-z_]+$/.test(name)) throw new Error(`not a column or table name: ${name}`);
    this.statement = {
      name: spec.name,
      text: `select k.n as batch_index, ${selectColumns(spec.columns, spec.timestamps, 't')}${spec.joined ? `, ${spec.joined.select}` : ''}
               from unnest($1::text[], $2::text[]) with ordinality as k(id, org_id, n)
               join ${spec.table} t on t."${spec.idColumn}" = k.id and t.org_id = k.org_id
               ${spec.joined?.join ?? ''}`,
    };
    this.batcher = new MicroBatcher(
      async (items) => {
        const rows = await runPrepared<Row & { batch_index: number }>(db, this.statement, [items.map((item) => item.id), items.map((item) => item.orgId)]);
        const found: Array<Row | undefined> = new Array(items.length);
        for (const { batch_index: index, ...row } of rows) found[index - 1] = row as Row;
        return found;
      },
      { maxBatch: MAX_BATCH },
    );
  }

  /** The org's row with that id, or undefined. */
  read(orgId: string, id: string): Promise<Row | undefined> {
    return this.batcher.add({ id, orgId });
  }
}

const readers = new WeakMap<Knex, Map<string, KeyedReader<unknown>>>();

/** The reader of `spec` for the pool `db` (one per pool and statement, made on first use). */
export function keyedReader<Row>(db: Knex, spec: KeyedRead): KeyedReader<Row> {
  let ofPool = readers.get(db);
  if (!ofPool) readers.set(db, (ofPool = new Map()));
  let reader = ofPool.get(spec.name);
  if (!reader) ofPool.set(spec.name, (reader = new KeyedReader<unknown>(db, spec)));
  return reader as KeyedReader<Row>;
}

/** One parameter of each read of a `ListReader`: its name in the statement (`k.NAME`) and its SQL type. */
export interface ListParameter {
  name: string;
  type: 'text' | 'bigint' | 'integer';
}

/**
 * Reads of many rows each (a page of a list), made in the same turn of the event loop with the
 * same statement, go to PostgreSQL as one prepared statement: each read's parameters become a
 * row of `unnest(…)`, and `query` (which uses them as `k.NAME`) runs for each through a lateral
 * join. As `KeyedReader` does for single rows: one round trip for the lot, and nothing kept
 * between batches.
 */
export class ListReader<Row> {
  private readonly batcher: MicroBatcher<unknown[], Row[]>;

  /** @param query - a `select` of named columns, using the parameters as `k.NAME`, ordered as the list is */
  constructor(db: Knex, name: string, parameters: ListParameter[], query: string) {
    for (const parameter of parameters) if (!/^[a-z_]+$/.test(parameter.name)) throw new Error(`not a parameter name: ${parameter.name}`);
    const statement: PreparedStatement = {
      name,
      // Each read's rows numbered in its query's order, so that the batch's order keeps it.
      text: `select k.n as batch_index, p.*
               from unnest(${parameters.map((parameter, i) => `$${i + 1}::${parameter.type}[]`).join(', ')}) with ordinality as k(${parameters.map((parameter) => parameter.name).join(', ')}, n)
               cross join lateral (select q.*, row_number() over () as batch_row from (${query}) q) p
              order by k.n, p.batch_row`,
    };
    this.batcher = new MicroBatcher(
      async (reads) => {
        const columns = parameters.map((_, i) => reads.map((values) => values[i]));
        const rows = await runPrepared<Row & { batch_index: number }>(db, statement, columns);
        const found: Row[][] = reads.map(() => []);
        for (const { batch_index: index, batch_row: _, ...row } of rows as Array<Row & { batch_index: number; batch_row: number }>) found[index - 1]!.push(row as Row);
        return found;
      },
      { maxBatch: MAX_BATCH },
    );
  }

  /** The rows of one read, its parameters in the order they were declared. */
  read(values: unknown[]): Promise<Row[]> {
    return this.batcher.add(values);
  }
}

const listReaders = new WeakMap<Knex, Map<string, ListReader<unknown>>>();

/** The `ListReader` named `name` for the pool `db` (one per pool and statement, made on first use). */
export function listReader<Row>(db: Knex, name: string, parameters: ListParameter[], query: string): ListReader<Row> {
  let ofPool = listReaders.get(db);
  if (!ofPool) listReaders.set(db, (ofPool = new Map()));
  let reader = ofPool.get(name);
  if (!reader) ofPool.set(name, (reader = new ListReader<unknown>(db, name, parameters, query)));
  return reader as ListReader<Row>;
}
