import { expect } from 'chai';
import { startTestService, type TestService } from '../support/service';
import { completeIfDone } from '../../shared/test-runs/try-flow';

/**
 * A run completes when its last tries end, even when they end at the same moment in two
 * transactions (found by the evals bench: each saw the other still open, and the run stayed
 * `running` for good).
 */
describe('a test run whose last two tries end at once', function () {
  this.timeout(30_000);
  let service: TestService;

  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('completes: the second to check waits for the first and then sees both tries ended', async () => {
    const db = service.running.container.db;
    const { orgId } = await service.newOrg('Completion org');
    const runId = `tr_completion${Date.now()}`;
    await db('test_runs').insert({ id: runId, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status: 'running' });
    await db('tries').insert([1, 2].map((attempt) => ({ id: `try_${runId}_${attempt}`, org_id: orgId, run_id: runId, position: 0, test_case_id: 'tc_x', attempt, status: 'running' })));

    const first = await db.transaction();
    const second = await db.transaction();
    try {
      // Each try ends in its own transaction, then asks whether the run is done.
      await first('tries').where({ id: `try_${runId}_1` }).update({ status: 'passed' });
      await second('tries').where({ id: `try_${runId}_2` }).update({ status: 'passed' });
      await completeIfDone(first, runId);
      const secondAsks = completeIfDone(second, runId);
      // The first commits while the second is asking (or waiting to).
      await new Promise((resolve) => setTimeout(resolve, 200));
      await first.commit();
      await secondAsks;
      await second.commit();
    } catch (error) {
      await first.rollback().catch(() => undefined);
      await second.rollback().catch(() => undefined);
      throw error;
    }
    const run = await db('test_runs').where({ id: runId }).first();
    expect(run.status).to.equal('completed');
    expect(run.ended_at).to.not.equal(null);
  });
});
