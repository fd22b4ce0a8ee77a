import { expect } from 'chai';
import { createKnex, type Knex } from '../../shared/db/knex';
import { testConfig } from '../support/environment';

describe('database schema', () => {
  let db: Knex;
  before(() => {
    db = createKnex(testConfig().databaseUrl, { min: 0, max: 1 });
  });
  after(() => db.destroy());

  it('indexes every foreign key by its own columns, so removing a referenced row never scans the table', async () => {
    // A foreign key is covered by an index without a predicate whose leading columns are the key's.
    const { rows } = await db.raw<{ rows: Array<{ constraint: string; table: string }> }>(`
      select c.conname as constraint, c.conrelid::regclass::text as table
      from pg_constraint c
      where c.contype = 'f'
        and not exists (
          select 1 from pg_index i
          where i.indrelid = c.conrelid
            and i.indpred is null
            and (string_to_array(i.indkey::text, ' ')::smallint[])[1:cardinality(c.conkey)] @> c.conkey
            and (string_to_array(i.indkey::text, ' ')::smallint[])[1:cardinality(c.conkey)] <@ c.conkey
        )
      order by 2, 1`);
    expect(rows).to.deep.equal([]);
    // The check sees foreign keys at all (the schema has a dozen and more).
    const { rows: keys } = await db.raw<{ rows: Array<{ count: string }> }>("select count(*) from pg_constraint where contype = 'f'");
    expect(Number(keys[0]!.count)).to.be.greaterThan(10);
  });
});
