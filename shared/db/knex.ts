import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import pg from 'pg';
import type { DatabasePooler } from '../config';

export type { Knex };

// int8 (bigint) columns hold cursors and counters that stay far below 2^53: read them as numbers.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number(value));

/** What `runPrepared` reads of a Knex instance's config: which pooler its connections go through. */
interface DeskhandKnexConfig extends Knex.Config {
  deskhand?: { pooler: DatabasePooler };
}

/**
 * A Knex instance for `databaseUrl`, with a pool sized for one process. `pooler`: what
 * `databaseUrl` points at (`Config.databasePooler`); with `transaction`, statements keep to one
 * transaction's connection and nothing is prepared by name (see `runPrepared`).
 */
export function createKnex(databaseUrl: string, pool = { min: 0, max: 10 }, options: { pooler?: DatabasePooler } = {}): Knex {
  const config: DeskhandKnexConfig = { client: 'pg', connection: databaseUrl, pool, asyncStackTraces: false, deskhand: { pooler: options.pooler ?? 'none' } };
  return knex(config);
}

/** Whether `db`'s connections go through a pooler in transaction mode (a transaction's client shares its pool's config). */
function behindTransactionPooler(db: Knex | Knex.Transaction): boolean {
  return (db.client.config as DeskhandKnexConfig).deskhand?.pooler === 'transaction';
}

/** A statement prepared once per connection: one name, one text (placeholders $1, $2…), for good. */
export interface PreparedStatement {
  name: string;
  text: string;
}

/**
 * Runs a prepared statement on a connection from `db`'s pool, straight through pg: PostgreSQL
 * parses and plans it once per connection (on the agent loop's writes, planning cost more than
 * the write), and Knex's query building and runner (about 0.1 ms each here) are skipped. For the
 * statements run most: the agent loop's per-step writes, the API's most frequent reads
 * (docs/benchmarks.md, reads), audit rows, and every machine's and computer's path. Given a
 * transaction, it runs on the transaction's connection (Knex hands that out and keeps it). Knex's
 * `query` listeners hear it as they hear Knex's own. The statement must name its result columns,
 * or return its rows as JSON (`row_to_json`, read back with `rowFromJson`): a prepared `select *`
 * fails once a migration adds a column under a running process.
 *
 * Behind a pooler in transaction mode (`DESKHAND_DATABASE_POOLER=transaction`), a statement
 * prepared on one server connection is not there on the next transaction's, which the pooler may
 * give another one (PgBouncer before 1.21 does not carry prepared statements over): the
 * statement then runs as an unnamed one, parsed and planned each time, with the same text and
 * values.
 */
export async function runPrepared<R>(db: Knex | Knex.Transaction, statement: PreparedStatement, values: unknown[]): Promise<R[]> {
  const connection = (await db.client.acquireConnection()) as pg.Client;
  // Seen by Knex's query listeners like any other statement (what counts or logs statements).
  if (db.listenerCount('query') > 0) db.client.emit('query', { sql: statement.text, bindings: values, method: 'raw', name: statement.name });
  try {
    const query = behindTransactionPooler(db) ? { text: statement.text, values } : { name: statement.name, text: statement.text, values };
    return (await connection.query<R & pg.QueryResultRow>(query)).rows;
  } finally {
    await db.client.releaseConnection(connection);
  }
}

/** Whether `db` is a transaction (its statements must run on its connection) rather than the pool. */
export function isTransaction(db: Knex | Knex.Transaction): db is Knex.Transaction {
  return (db as Knex.Transaction).isTransaction === true;
}

const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'migrations');

/**
 * The files in migrations/: TypeScript run through tsx, or JavaScript in the compiled build
 * (`npm run build`, used when DESKHAND_ENV=production). Each is recorded under its source name
 * (`….ts`) either way, so a database migrated by one is up to date for the other; Knex's own
 * directory source records the file name as found, and refused to run the build against a
 * database the sources had migrated ("the migration directory is corrupt").
 */
class MigrationFiles implements Knex.MigrationSource<string> {
  async getMigrations(): Promise<string[]> {
    const files = await fs.promises.readdir(MIGRATIONS_DIR);
    return files.filter((file) => /\.(ts|js)$/.test(file) && !file.endsWith('.d.ts')).sort();
  }

  getMigrationName(file: string): string {
    return file.replace(/\.js$/, '.ts');
  }

  getMigration(file: string): Promise<Knex.Migration> {
    return Promise.resolve(require(path.join(MIGRATIONS_DIR, file)) as Knex.Migration);
  }
}

/** Migration settings shared by `deskhand migrate` and the tests. */
export const migrationConfig: Knex.MigratorConfig = {
  migrationSource: new MigrationFiles(),
  tableName: 'knex_migrations',
};

/** Creates the database named in `databaseUrl` when it does not exist yet. */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    if (found.rowCount) return false;
    await admin.query(`create database "${name.replace(/"/g, '""')}"`);
    return true;
  } catch (error) {
    // Two processes racing to create it: the loser sees "already exists", which is fine.
    if ((error as { code?: string }).code === '42P04') return false;
    throw error;
  } finally {
    await admin.end();
  }
}

/** Creates the database if needed and applies every pending migration; returns their names. */
export async function migrateLatest(databaseUrl: string): Promise<string[]> {
  await ensureDatabase(databaseUrl);
  const db = createKnex(databaseUrl, { min: 0, max: 1 });
  try {
    const [, applied] = (await db.migrate.latest(migrationConfig)) as [number, string[]];
    return applied;
  } finally {
    await db.destroy();
  }
}
