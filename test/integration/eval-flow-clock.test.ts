import { expect } from 'chai';
import { ManualClock } from '../../shared/clock';
import { startTestService, type TestService } from '../support/service';

/**
 * The try flow and the start state flow read now from the clock the service is given (as the
 * task loop does), not from the process: a test clock moved forward is what makes a machine wait
 * too long, an open machine's time run out, a try last.
 */
describe('the evals flows on the service\'s clock', function () {
  this.timeout(30_000);
  const clock = new ManualClock();
  let service: TestService;

  before(async () => {
    service = await startTestService({}, ['web'], { clock });
  });
  after(async () => service.stop());

  /** A run of the org with one case and one running try in `phase` (its run in `runStatus`); the try's id. */
  async function runningTry(orgId: string, name: string, phase: string, runStatus = 'running', fields: Record<string, unknown> = {}): Promise<{ runId: string; tryId: string }> {
    const { db } = service.running.container;
    const runId = `tr_${name}${Date.now()}`;
    const tryId = `try_${runId}`;
    await db('test_runs').insert({ id: runId, org_id: orgId, agent_id: 'default', agent_version: 1, agent: JSON.stringify({}), status: runStatus });
    await db('test_run_cases').insert({ run_id: runId, position: 0, test_case_id: 'tc_x', repeat: 1, snapshot: JSON.stringify({ prompt: 'x', disk: { image: 'macos-15' }, os: 'mac', pinned_runner_id: null }) });
    await db('tries').insert({ id: tryId, org_id: orgId, run_id: runId, position: 0, test_case_id: 'tc_x', attempt: 1, status: 'running', phase, ...fields });
    return { runId, tryId };
  }

  it('sends a try whose machine no runner took back to the queue once the clock passes the wait', async () => {
    const { db, machines, tryFlow } = service.running.container;
    const { orgId } = await service.newOrg('Clock tries org');
    const { runId, tryId } = await runningTry(orgId, 'wait', 'machine');
    try {
      const machine = await db.transaction((trx) => machines.request(trx, { orgId, owner: { kind: 'try', id: tryId }, disk: { image: 'macos-15' }, os: 'mac', label: 'clock test' }));
      await db('tries').where({ id: tryId }).update({ machine_id: machine.id });

      await tryFlow.advance(tryId);
      expect(await db('tries').where({ id: tryId }).first('status', 'phase', 'machine_id')).to.deep.equal({ status: 'running', phase: 'machine', machine_id: machine.id });

      // A minute and a second after the machine was recorded (by PostgreSQL's clock; the test clock stands where the test left it).
      clock.advance(machine.created_at.getTime() + 61_000 - clock.now().getTime());
      await tryFlow.advance(tryId);
      expect(await db('tries').where({ id: tryId }).first('status', 'phase', 'machine_id')).to.deep.equal({ status: 'queued', phase: null, machine_id: null });
    } finally {
      await db('test_runs').where({ id: runId }).delete();
    }
  });

  it('counts a try\'s duration on the clock', async () => {
    const { db, tryFlow } = service.running.container;
    const { orgId } = await service.newOrg('Clock duration org');
    const { runId, tryId } = await runningTry(orgId, 'duration', 'task', 'cancelled', { started_at: clock.now() });
    try {
      clock.advance(5 * 60_000);
      await tryFlow.advance(tryId);
      expect(await db('tries').where({ id: tryId }).first('status', 'phase', 'duration_ms')).to.deep.equal({ status: 'cancelled', phase: 'done', duration_ms: 5 * 60_000 });
    } finally {
      await db('test_runs').where({ id: runId }).delete();
    }
  });

  it('closes an open start state once the clock passes its view_expires_at, and its live view ends then', async () => {
    const { db, machines, startStateFlow, startStates } = service.running.container;
    const { orgId } = await service.newOrg('Clock states org');
    const stateId = `ss_clock${Date.now()}`;
    const token = `dhv_clock${Date.now()}`;
    const machine = await db.transaction((trx) => machines.request(trx, { orgId, owner: { kind: 'start_state', id: stateId }, disk: { image: 'macos-15' }, os: 'mac', label: 'clock test' }));
    await db('start_states').insert({
      id: stateId,
      org_id: orgId,
      name: 'Clock',
      from_id: 'macos-15',
      method: 'hand',
      status: 'open',
      image: 'macos-15',
      from_disk: JSON.stringify({ image: 'macos-15' }),
      os: 'mac',
      machine_id: machine.id,
      machine_attempts: 1,
      view_token: token,
      view_expires_at: new Date(clock.now().getTime() + 60 * 60_000),
    });

    await startStateFlow.advance(stateId);
    expect(await db('start_states').where({ id: stateId }).first('status', 'machine_id')).to.deep.equal({ status: 'open', machine_id: machine.id });
    expect((await startStates.viewed(token)).id).to.equal(stateId);

    clock.advance(2 * 60 * 60_000);
    // The live view ends on the same clock, even before the flow has closed the machine.
    const ended = await startStates.viewed(token).then(() => null, (error: { status?: number }) => error);
    expect(ended?.status).to.equal(404);
    await startStateFlow.advance(stateId);
    const closed = await db('start_states').where({ id: stateId }).first('status', 'machine_id', 'error');
    expect(closed).to.deep.equal({ status: 'failed', machine_id: null, error: 'The open machine closed unsaved at view.expires_at' });
  });
});
