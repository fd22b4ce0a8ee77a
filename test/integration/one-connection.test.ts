import { expect } from 'chai';
import { createContainer, type Container } from '../../shared/container';
import { testConfig } from '../support/environment';

/**
 * What a try's transaction does (shared/test-runs/try-flow.ts) runs on that transaction's
 * connection alone. A read through the pool inside a transaction waits for a second connection:
 * with as many transactions as the pool has connections (worker-evals runs ten jobs on ten), each
 * waited for another's, and every try stood still until Knex gave up a minute later (seen in
 * `npm run bench -- evals`). A pool of one connection makes any such read wait for good.
 */
describe('a try\'s transaction needs no second connection (a pool of one)', function () {
  let container: Container;

  before(() => {
    container = createContainer(testConfig(), { dbPoolMax: 1 });
  });
  after(async () => {
    await container.close();
  });

  /** `work` in a transaction, or a failure naming the wait after 3 s. */
  async function inOneTransaction(work: Parameters<Container['db']['transaction']>[0]): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const stuck = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('waited for a second connection inside the transaction')), 3000);
    });
    try {
      await Promise.race([container.db.transaction(work), stuck]);
    } finally {
      clearTimeout(timer);
    }
  }

  it('requests a machine (its machine session with the org\'s default agent), reads it and its session back', async () => {
    const { org } = await container.orgs.create('One connection');
    await inOneTransaction(async (trx) => {
      const machine = await container.machines.request(trx, {
        orgId: org.org_id,
        owner: { kind: 'try', id: 'try_one_connection' },
        disk: { image: 'macos-15' },
        os: 'mac',
        pinnedRunnerId: null,
        label: 'one connection',
      });
      expect((await container.machines.get(machine.id, trx))?.status).to.equal('waiting');
      const session = await container.sessions.getRow(org.org_id, machine.session_code, trx);
      expect(session).to.include({ kind: 'machine', org_id: org.org_id });
    });
  });
});
