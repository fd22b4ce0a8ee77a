import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { completeIfDone } from '../../shared/test-runs/try-flow';
import { triesNeedingAttention } from '../../shared/test-runs/test-runs.repository';

describe('tries and runs (TryFlow) on PostgreSQL', function () {
  this.timeout(30_000);
  let service: TestService;

  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  /**
   * A run completes when its last tries end, even when they end at the same moment in two
   * transactions (found by the evals bench: each saw the other still open, and the run stayed
   * `running` for good).
   */
  describe('a test run whose last two tries end at once', function () {
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
        const { rows: [{ pid }] } = await second.raw('select pg_backend_pid() as pid');
        const secondAsks = completeIfDone(second, runId);
        // The first commits once PostgreSQL shows the second waiting for a lock the first holds.
        const waitsForLock = async () => (await db.raw("select 1 from pg_stat_activity where pid = ? and wait_event_type = 'Lock'", [pid])).rows.length > 0;
        await waitFor(waitsForLock, 5_000, 'the second to wait for the first');
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

  /**
   * A try's end starts the fairest next try in the same transaction. Should that start fail, the
   * try still ends: the start runs in a savepoint, and the scheduling pass after the commit tries
   * again (before, the failure rolled the end back with it and the try stayed `running`).
   */
  describe('a try that ends while the next try cannot start', function () {
    it('ends all the same', async () => {
      const { db, tryFlow } = service.running.container;
      const { orgId } = await service.newOrg('Next start org');
      const stamp = Date.now();
      const run = (id: string, status: string) => ({ id, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status });
      const ended = `tr_ended${stamp}`;
      const broken = `tr_broken${stamp}`;
      await db('test_runs').insert([run(ended, 'cancelled'), run(broken, 'queued')]);
      await db('test_run_cases').insert({ run_id: ended, position: 0, test_case_id: 'tc_x', repeat: 1, snapshot: JSON.stringify({ prompt: 'x' }) });
      await db('tries').insert({ id: `try_${ended}`, org_id: orgId, run_id: ended, position: 0, test_case_id: 'tc_x', attempt: 1, status: 'running', phase: 'task' });
      // The other run's queued try cannot start: its case's snapshot is missing.
      await db('tries').insert({ id: `try_${broken}`, org_id: orgId, run_id: broken, position: 0, test_case_id: 'tc_y', attempt: 1, status: 'queued' });

      try {
        await tryFlow.advance(`try_${ended}`);

        const row = await db('tries').where({ id: `try_${ended}` }).first();
        expect(row.status).to.equal('cancelled');
        expect(row.phase).to.equal('done');
        expect(row.ended_at).to.not.equal(null);
        expect((await db('tries').where({ id: `try_${broken}` }).first()).status).to.equal('queued');
      } finally {
        // Scheduling passes of later tests would stumble on the broken run.
        await db('test_runs').whereIn('id', [ended, broken]).delete();
      }
    });
  });

  /**
   * A scheduling pass goes over every run with queued tries. One whose next try cannot start is
   * passed over (before, it threw the whole pass, and no run of any org started a try).
   */
  describe('a scheduling pass with a run whose next try cannot start', function () {
    it('starts the other runs\' tries', async () => {
      const { db, tryFlow } = service.running.container;
      const { orgId } = await service.newOrg('Scheduling org');
      const stamp = Date.now();
      const runnerId = `rn_sched${stamp}`;
      const image = `sched-image-${stamp}`;
      await db('runners').insert({ id: runnerId, org_id: orgId, scope: 'org', name: 'one slot', token_hash: `hash${stamp}`, token_prefix: 'dhr_x', slots: 1, images: JSON.stringify([image]), connection_id: `conn${stamp}`, last_seen_at: db.fn.now() });
      const run = (id: string) => ({ id, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status: 'queued' });
      const broken = `tr_broken${stamp}`;
      const good = `tr_good${stamp}`;
      // The broken run comes first (older); its case's snapshot is missing.
      await db('test_runs').insert(run(broken));
      await db('test_runs').insert(run(good));
      const snapshot = { name: 'x', prompt: 'x', start_state: image, start_state_version: 0, disk: { image }, os: 'mac', pinned_runner_id: null, setup_script: null, check_script: null, rubric: null, customer: null, approvals: 'none', limits: { minutes: 5, steps: 10 } };
      await db('test_run_cases').insert({ run_id: good, position: 0, test_case_id: 'tc_x', repeat: 1, snapshot: JSON.stringify(snapshot) });
      await db('tries').insert([broken, good].map((runId) => ({ id: `try_${runId}`, org_id: orgId, run_id: runId, position: 0, test_case_id: 'tc_x', attempt: 1, status: 'queued' })));

      try {
        expect(await tryFlow.schedule()).to.be.at.least(1);
        const started = await db('tries').where({ id: `try_${good}` }).first();
        expect(started.status).to.equal('running');
        expect(started.machine_id).to.be.a('string');
        const machine = await db('machines').where({ id: started.machine_id }).first();
        expect(machine).to.include({ runner_id: runnerId, status: 'starting' });
        expect((await db('tries').where({ id: `try_${broken}` }).first()).status).to.equal('queued');
      } finally {
        await db('test_runs').whereIn('id', [broken, good]).delete();
        await db('machines').where({ org_id: orgId }).delete();
        await db('runners').where({ id: runnerId }).update({ connection_id: null, revoked_at: db.fn.now() });
      }
    });
  });

  /**
   * A try moves on when it is told that its machine changed or its script answered (a job in the
   * evals queue). When that job is lost (a Redis master failed over as it was queued), the sweep
   * finds the try from what PostgreSQL records. Before, a try whose machine had come up, or had
   * waited past its minute, or whose setup script had answered, waited for the catch-all: two
   * minutes after its start.
   */
  describe('the sweep, for a try never told of its change', function () {
    const SWEEP = { quietMs: 30_000, machineWaitMs: 60_000, limit: 1_000 };

    it('finds the tries whose machine came up, waited too long, or whose script answered, 30 s ago; not those still waiting', async () => {
      const db = service.running.container.db;
      const { orgId } = await service.newOrg('Sweep org');
      const stamp = Date.now();
      const runId = `tr_sweep${stamp}`;
      const runnerId = `rn_sweep${stamp}`;
      await db('runners').insert({ id: runnerId, org_id: orgId, scope: 'org', name: 'sweep', token_hash: `hash-sweep${stamp}`, token_prefix: 'dhr_x', slots: 8 });
      await db('test_runs').insert({ id: runId, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status: 'running' });
      const ago = (seconds: number) => db.raw(`now() - interval '${seconds} seconds'`);
      /** A running try in `phase`, started `startedAgo` s ago, on a machine in `machineStatus` since `changedAgo` s (recorded `createdAgo` s ago). */
      const tryOn = async (name: string, phase: string, machine: { status: string; changedAgo: number; createdAgo?: number }, startedAgo = 40) => {
        const machineId = `m_${name}${stamp}`;
        await db('machines').insert({ id: machineId, org_id: orgId, owner_kind: 'try', owner_id: `try_${name}${stamp}`, disk: JSON.stringify({ image: 'debian-12' }), image: 'debian-12', os: 'linux', runner_id: machine.status === 'waiting' ? null : runnerId, status: machine.status, session_code: `code-${name}${stamp}`, created_at: ago(machine.createdAgo ?? startedAgo), updated_at: ago(machine.changedAgo) });
        await db('tries').insert({ id: `try_${name}${stamp}`, org_id: orgId, run_id: runId, position: 0, test_case_id: 'tc_x', attempt: 1, status: 'running', phase, machine_id: machineId, started_at: ago(startedAgo) });
        return { tryId: `try_${name}${stamp}`, machineId };
      };
      /** The setup script's command on `machineId`: answered `finishedAgo` s ago, or still unanswered (null). */
      const script = (machineId: string, finishedAgo: number | null) =>
        db('runner_commands').insert({ id: `cmd_${machineId}`, runner_id: runnerId, machine_id: machineId, type: 'machine.run', args: JSON.stringify({ script: 'true' }), status: finishedAgo === null ? 'sent' : 'done', result: JSON.stringify({ exit_code: 0, output: '' }), deadline_at: ago(-600), finished_at: finishedAgo === null ? null : ago(finishedAgo) });

      try {
        const cameUp = await tryOn('cameup', 'machine', { status: 'running', changedAgo: 31 });
        const justUp = await tryOn('justup', 'machine', { status: 'running', changedAgo: 5 });
        const starting = await tryOn('starting', 'machine', { status: 'starting', changedAgo: 35 });
        const waitedLong = await tryOn('waitedlong', 'machine', { status: 'waiting', changedAgo: 61, createdAgo: 61 }, 61);
        const waiting = await tryOn('waiting', 'machine', { status: 'waiting', changedAgo: 20, createdAgo: 20 }, 20);
        const answered = await tryOn('answered', 'setup', { status: 'running', changedAgo: 38 });
        await script(answered.machineId, 31);
        const justAnswered = await tryOn('justanswered', 'setup', { status: 'running', changedAgo: 38 });
        await script(justAnswered.machineId, 4);
        const running = await tryOn('running', 'setup', { status: 'running', changedAgo: 38 });
        await script(running.machineId, null);

        const found = new Set(await triesNeedingAttention(db, SWEEP));
        const seen = (entry: { tryId: string }) => found.has(entry.tryId);
        expect({ cameUp: seen(cameUp), waitedLong: seen(waitedLong), answered: seen(answered) }, 'tries whose change came and went untold').to.deep.equal({ cameUp: true, waitedLong: true, answered: true });
        expect({ justUp: seen(justUp), starting: seen(starting), waiting: seen(waiting), justAnswered: seen(justAnswered), running: seen(running) }, 'tries still waiting, or told just now').to.deep.equal({ justUp: false, starting: false, waiting: false, justAnswered: false, running: false });
      } finally {
        await db('test_runs').where({ id: runId }).delete();
        await db('runner_commands').where({ runner_id: runnerId }).delete();
        await db('machines').where({ org_id: orgId }).delete();
        await db('runners').where({ id: runnerId }).delete();
      }
    });
  });
});
