import { expect } from 'chai';
import { createKnex, runPrepared, type Knex } from '../../../shared/db/knex';
import { DESKHAND_BIN, run } from '../../support/cli';
import { testEnv } from '../../support/environment';
import { startPgBouncer, type OwnPgBouncer } from '../../support/pgbouncer';

const COUNT_TASKS = { name: 'scale_out_count_tasks', text: 'select count(*)::int as n from tasks where org_id = $1' };

/**
 * One knex client takes a PgBouncer server connection for a transaction and holds it while
 * another client's statement runs: PgBouncer hands that statement a different server connection
 * than its previous one (it reuses the most recently freed first).
 */
async function whileAnotherHoldsAServer<T>(holder: Knex, work: () => Promise<T>): Promise<T> {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  let holding!: () => void;
  const taken = new Promise<void>((resolve) => (holding = resolve));
  const transaction = holder.transaction(async (trx) => {
    await trx.raw('select 1');
    holding();
    await held;
  });
  await taken;
  try {
    return await work();
  } finally {
    release();
    await transaction;
  }
}

describe('PgBouncer in transaction mode (DESKHAND_DATABASE_POOLER=transaction)', function () {
  this.timeout(60_000);
  let bouncer: OwnPgBouncer;
  const dbs: Knex[] = [];
  const open = (pooler: 'none' | 'transaction') => {
    const db = createKnex(bouncer.through(testEnv().DATABASE_URL!), { min: 0, max: 2 }, { pooler });
    dbs.push(db);
    return db;
  };

  before(async () => {
    bouncer = await startPgBouncer({ poolSize: 4 });
  });
  after(async () => {
    for (const db of dbs) await db.destroy();
    await bouncer?.close();
  });

  it('breaks a statement prepared by name once PgBouncer gives its connection another server; the pooler mode runs it plain', async () => {
    const holder = open('none');
    const named = open('none');
    expect(await runPrepared(named, COUNT_TASKS, ['org_none'])).to.deep.equal([{ n: 0 }]);
    // The same client, another server: PostgreSQL has no statement of that name there.
    const failed = await whileAnotherHoldsAServer(holder, () => runPrepared(named, COUNT_TASKS, ['org_none']).then(() => null, (error: Error) => error));
    expect(failed?.message, 'a named statement on another server connection').to.match(/prepared statement .* does not exist/);

    const plain = open('transaction');
    for (let i = 0; i < 3; i++) {
      expect(await whileAnotherHoldsAServer(holder, () => runPrepared(plain, COUNT_TASKS, ['org_none']))).to.deep.equal([{ n: 0 }]);
      expect(await runPrepared(plain, COUNT_TASKS, ['org_none'])).to.deep.equal([{ n: 0 }]);
    }
    // In a transaction, on the transaction's server connection.
    const inside = await plain.transaction((trx) => runPrepared(trx, COUNT_TASKS, ['org_none']));
    expect(inside).to.deep.equal([{ n: 0 }]);
  });

  it('deskhand migrate goes straight to PostgreSQL through DATABASE_MIGRATION_URL', async () => {
    const env = { ...process.env, ...testEnv({ DATABASE_URL: 'postgres://postgres@127.0.0.1:1/unreachable', DATABASE_MIGRATION_URL: testEnv().DATABASE_URL!, DESKHAND_DATABASE_POOLER: 'transaction' }) };
    const { stderr } = await run(process.execPath, [DESKHAND_BIN, 'migrate'], { env });
    expect(stderr).to.contain('database is up to date');
  });
});
