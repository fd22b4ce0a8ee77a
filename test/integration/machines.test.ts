import { expect } from 'chai';
import { startTestService, waitFor, type TestService } from '../support/service';
import { RawRunner, type RunnerCommand } from '../support/raw-runner';

/**
 * Machines on runners and start states on them, with runners this test scripts (each answers
 * commands as told): slot accounting, the command path through worker-evals, answers, timeouts,
 * reconnects, revocations and runners that go. The reference runner's own tests run the real thing.
 */
/** Short, but long enough for heartbeats every 200 ms on a loaded machine. */
const OFFLINE_AFTER_MS = 2_500;

describe('machines and start states on scripted runners (docs/runners.md, docs/evals.md)', function () {
  this.timeout(30_000);
  let service: TestService;
  let org: { orgId: string; key: string };
  const runners: RawRunner[] = [];

  before(async () => {
    service = await startTestService(
      { DESKHAND_RUNNER_HEARTBEAT_MS: '200', DESKHAND_RUNNER_OFFLINE_AFTER_MS: String(OFFLINE_AFTER_MS), DESKHAND_MACHINE_BOOT_TIMEOUT_MS: '1500', DESKHAND_OPEN_MACHINE_MS: '4000' },
      ['web', 'worker-evals'],
    );
    org = await service.newOrg('Machines org');
  });
  after(async () => {
    for (const runner of runners) runner.close();
    await service.stop();
  });

  const api = (method: string, path: string, body?: unknown) => service.api(org.key, method, path, body);
  const state = async (id: string) => (await api('GET', `/v1/start_states/${id}`)).body;
  const db = () => service.running.container.db;

  /** A connected runner with `image` (an image name of its own, so that tests do not share runners) that makes machines at once when `autoMake`. */
  async function connectRunner(image: string, slots: number, options: { autoMake?: boolean; autoDestroy?: boolean; machines?: string[] } = {}) {
    const created = (await api('POST', '/v1/runners', { name: `runner ${image}` })).body as { runner_id: string; token: string };
    const runner = new RawRunner(service.baseUrl);
    runners.push(runner);
    const live = new Set<string>();
    let most = 0;
    runner.onCommand((command: RunnerCommand) => {
      if (command.type === 'machine.make') {
        live.add(command.machine_id!);
        most = Math.max(most, live.size);
        if (options.autoMake !== false) void runner.done(command.command_id, { result: {} });
      }
      if (command.type === 'machine.destroy' && options.autoDestroy !== false) {
        live.delete(command.machine_id!);
        void runner.done(command.command_id, { result: {} });
      }
    });
    const hello = await runner.hello(created.token, { images: [image], slots, machines: options.machines ?? [] });
    expect(hello.ok, JSON.stringify(hello)).to.equal(true);
    // Heartbeats keep it online (it reads offline after 1 s of silence here).
    const beat = setInterval(() => void runner.heartbeat().catch(() => undefined), 200);
    runner.socket.on('disconnect', () => clearInterval(beat));
    return { runner, runnerId: created.runner_id, token: created.token, live, most: () => most };
  }

  const createState = async (body: Record<string, unknown>) => {
    const response = await api('POST', '/v1/start_states', body);
    expect(response.status, JSON.stringify(response.body)).to.equal(200);
    return response.body as { start_state_id: string; status: string; view: { screen_url: string; input_url: string; expires_at: string } | null };
  };

  it('never places more machines on a runner than its slots, under concurrent requests; a freed slot takes the next waiting machine', async () => {
    const { runnerId, live, most } = await connectRunner('slots-image', 2);
    const made = await Promise.all(Array.from({ length: 6 }, (_, i) => createState({ name: `open ${i}`, from: 'slots-image', method: 'hand' })));
    expect(made.map((s) => s.status)).to.deep.equal(Array(6).fill('open'));
    await waitFor(async () => (await db()('machines').where({ runner_id: runnerId, status: 'running' })).length === 2, 5000, 'two machines running');
    // Each request placed its machine or left it waiting in its own transaction. What else places
    // machines is a placement pass (one the runner's hello queued): once none is queued or running,
    // and one more has run here, a slot still free would have been taken.
    const evals = service.running.container.queues.queue('evals');
    const passQueued = async () => (await evals.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).some((job) => job.name === 'use-free-slots');
    await waitFor(async () => !(await passQueued()), 5000, 'the queued placement passes to have run');
    await service.running.container.machines.placeWaiting();
    expect(await db()('machines').where({ status: 'waiting' }).whereIn('owner_id', made.map((s) => s.start_state_id))).to.have.length(4);
    expect((await api('GET', `/v1/runners/${runnerId}`)).body.busy).to.equal(2);

    // Deleting the open states lets their machines go; the waiting ones take the slots, two at a time.
    for (const one of made) {
      const machineCount = live.size;
      const row = await db()('start_states').where({ id: one.start_state_id }).first();
      const machine = row.machine_id ? await db()('machines').where({ id: row.machine_id }).first() : undefined;
      expect((await api('DELETE', `/v1/start_states/${one.start_state_id}`)).status).to.equal(200);
      if (machine?.status === 'running') await waitFor(() => live.size < machineCount || live.size === 2, 5000, 'a machine destroyed');
    }
    await waitFor(async () => (await db()('machines').whereIn('owner_id', made.map((s) => s.start_state_id)).whereIn('status', ['waiting', 'starting', 'running', 'stopping'])).length === 0, 8000, 'every machine let go');
    expect(most()).to.be.at.most(2);
    expect((await api('GET', `/v1/runners/${runnerId}`)).body.busy).to.equal(0);
  });

  it('a destroyed machine\'s slot goes to the oldest waiting machine that fits, in the transaction that settles the destroy', async () => {
    const { runner, runnerId } = await connectRunner('handover-image', 1, { autoDestroy: false });
    const first = await createState({ name: 'first', from: 'handover-image', method: 'hand' });
    await waitFor(async () => (await db()('machines').where({ owner_id: first.start_state_id, status: 'running' })).length === 1, 5000, 'the first running');
    const second = await createState({ name: 'second', from: 'handover-image', method: 'hand' });
    expect((await db()('machines').where({ owner_id: second.start_state_id }).first()).status).to.equal('waiting');

    expect((await api('DELETE', `/v1/start_states/${first.start_state_id}`)).status).to.equal(200);
    const destroy = await waitFor(() => runner.commands.find((c) => c.type === 'machine.destroy'), 5000, 'the destroy');
    const ack = await runner.done(destroy.command_id, { result: {} });
    expect(ack.ok, JSON.stringify(ack)).to.equal(true);

    // By the acknowledgement (sent once the settle commits) the waiting machine holds the slot:
    // placed there, and its make recorded, by the settle's own transaction (one now()). The runner
    // makes machines at once, so it may be running already.
    const gone = await db()('machines').where({ owner_id: first.start_state_id }).first();
    const next = await db()('machines').where({ owner_id: second.start_state_id }).first();
    const make = await db()('runner_commands').where({ machine_id: next.id, type: 'machine.make' }).first();
    expect(gone.status).to.equal('destroyed');
    expect(next.runner_id).to.equal(runnerId);
    expect(next.status).to.be.oneOf(['starting', 'running']);
    expect(make.sent_at.getTime()).to.equal(gone.ended_at.getTime());
    await waitFor(() => runner.commands.some((c) => c.type === 'machine.make' && c.machine_id === next.id), 5000, 'the make sent to the runner');
    expect((await api('DELETE', `/v1/start_states/${second.start_state_id}`)).status).to.equal(200);
  });

  it('an open state\'s owner hears neither of its machine\'s make nor of the destroy it asked for; a build\'s hears of its make (advance jobs)', async () => {
    const { runner } = await connectRunner('owner-told-image', 2, { autoDestroy: false });
    runner.onCommand((command) => {
      if (command.type === 'machine.run') void runner.done(command.command_id, { result: { exit_code: 0, output: '' } });
      if (command.type === 'machine.save') void runner.done(command.command_id, { result: { bytes: 1 } });
    });
    const evals = service.running.container.queues.queue('evals');
    const advances = async (stateId: string) => (await evals.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed'])).filter((job) => job.name === 'start-state-advance' && job.data.start_state_id === stateId).map((job) => job.id!);

    const open = await createState({ name: 'told', from: 'owner-told-image', method: 'hand' });
    const machine = await waitFor(async () => (await db()('machines').where({ owner_id: open.start_state_id, status: 'running' }).first()) ?? null, 5000, 'the open state\'s machine running');
    expect(machine.tell_owner_when_running).to.equal(false);
    // A build's make is told (its script runs next): the same look finds its job.
    const build = await createState({ name: 'built', from: 'owner-told-image', method: 'script', script: 'true' });
    await waitFor(async () => (await advances(build.start_state_id)).some((id) => id.includes('machine.make')), 5000, 'the build told of its make');

    expect((await api('DELETE', `/v1/start_states/${open.start_state_id}`)).status).to.equal(200);
    const destroy = await waitFor(() => runner.commands.find((c) => c.type === 'machine.destroy' && c.machine_id === machine.id), 5000, 'the destroy');
    // Just after the acknowledgement, what the destroy means goes out in one go (`tellOfChange`):
    // the owner's notice (none is wanted), then the placement pass its freed slot asks for. Once
    // that pass is queued, a notice would have been queued before it, on the same queue.
    const machines = service.running.container.machines;
    const passes: Array<Promise<void>> = [];
    const placeSoon = machines.placeSoon.bind(machines);
    machines.placeSoon = () => {
      const queued = placeSoon();
      passes.push(queued);
      return queued;
    };
    try {
      const ack = await runner.done(destroy.command_id, { result: {} });
      expect(ack.ok, JSON.stringify(ack)).to.equal(true);
      expect((await db()('machines').where({ id: machine.id }).first()).status).to.equal('destroyed');
      await waitFor(() => passes.length > 0, 5000, 'the placement pass the destroy queues');
      await passes[0];
    } finally {
      machines.placeSoon = placeSoon;
    }
    expect(await advances(open.start_state_id)).to.deep.equal([]);
  });

  it('an open state saved before its machine runs is saved once it does (its owner then hears of the make)', async () => {
    const { runner, runnerId } = await connectRunner('save-early-image', 1, { autoMake: false });
    runner.onCommand((command) => {
      if (command.type === 'machine.save') void runner.done(command.command_id, { result: { bytes: 1 } });
    });
    const open = await createState({ name: 'saved early', from: 'save-early-image', method: 'hand' });
    const make = await waitFor(() => runner.commands.find((c) => c.type === 'machine.make'), 5000, 'the make');
    expect((await api('POST', `/v1/start_states/${open.start_state_id}/save`)).body.status).to.equal('saving');
    await runner.done(make.command_id, { result: {} });
    const ready = await waitFor(async () => ((await state(open.start_state_id)).status === 'ready' ? state(open.start_state_id) : null), 5000, 'saved and ready');
    expect(ready).to.include({ version: 1, runner_id: runnerId });
  });

  it('a waiting machine placed while its state\'s delete waits for the machine\'s row is stopped by that delete, not left running', async () => {
    const { runnerId } = await connectRunner('release-race-image', 1);
    await createState({ name: 'holds the slot', from: 'release-race-image', method: 'hand' });
    const waiting = await createState({ name: 'waits', from: 'release-race-image', method: 'hand' });
    const machineId = (await db()('start_states').where({ id: waiting.start_state_id }).first()).machine_id as string;
    expect((await db()('machines').where({ id: machineId }).first()).status).to.equal('waiting');

    // A placement (a freed slot's hand-over) holds the waiting machine's row while the delete comes.
    const placement = await db().transaction();
    await placement('machines').where({ id: machineId }).forUpdate().first();
    await placement('machines').where({ id: machineId }).update({ status: 'starting', runner_id: runnerId });
    const deleted = api('DELETE', `/v1/start_states/${waiting.start_state_id}`);
    await waitFor(async () => Number((await db().raw("select count(*) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")).rows[0].count) > 0, 5000, 'the delete waiting for the machine');
    await placement.commit();
    expect((await deleted).status).to.equal(200);

    // The delete saw the machine starting on the runner: it is stopping there, its destroy sent.
    const destroy = await db()('runner_commands').where({ machine_id: machineId, type: 'machine.destroy' }).first();
    expect(destroy, 'a destroy for the machine placed meanwhile').to.not.equal(undefined);
    expect((await db()('machines').where({ id: machineId }).first()).status).to.be.oneOf(['stopping', 'destroyed']);
  });

  it('places, releases and settles machines, and deletes their start states, after a migration adds columns under the running service (those statements are prepared)', async () => {
    await connectRunner('migrate-image', 1);
    const cycle = async (name: string) => {
      const made = await createState({ name, from: 'migrate-image', method: 'hand' });
      await waitFor(async () => (await db()('machines').where({ owner_id: made.start_state_id, status: 'running' })).length === 1, 5000, `${name} running`);
      expect((await api('DELETE', `/v1/start_states/${made.start_state_id}`)).status).to.equal(200);
      await waitFor(async () => (await db()('machines').where({ owner_id: made.start_state_id, status: 'destroyed' })).length === 1, 5000, `${name} destroyed`);
    };
    // Prepared on the web process's connections first.
    for (const name of ['before 1', 'before 2', 'before 3']) await cycle(name);
    await db().raw('alter table runner_commands add column probe_added integer');
    await db().raw('alter table machines add column probe_added integer');
    await db().raw('alter table start_states add column probe_added integer');
    try {
      for (const name of ['after 1', 'after 2', 'after 3']) await cycle(name);
    } finally {
      await db().raw('alter table runner_commands drop column probe_added');
      await db().raw('alter table machines drop column probe_added');
      await db().raw('alter table start_states drop column probe_added');
    }
  });

  it('a script build: make → run → save → destroy → ready at version 1; a failing script leaves it failed with its exit status and output', async () => {
    const { runner, runnerId } = await connectRunner('script-image', 2);
    runner.onCommand((command) => {
      if (command.type === 'machine.run') {
        const fails = (command.args.script as string).includes('exit 3');
        void runner.done(command.command_id, { result: fails ? { exit_code: 3, output: 'no such file: setup.txt\n' } : { exit_code: 0, output: 'ok\n' } });
      }
      if (command.type === 'machine.save') void runner.done(command.command_id, { result: { bytes: 10 } });
    });
    const good = await createState({ name: 'scripted', from: 'script-image', method: 'script', script: 'echo ok > $HOME/Documents/ok.txt' });
    expect(good.status).to.equal('building');
    const ready = await waitFor(async () => ((await state(good.start_state_id)).status === 'ready' ? state(good.start_state_id) : null), 8000, 'ready');
    expect(ready).to.include({ version: 1, runner_id: runnerId, error: null, view: null, kind: 'state', from: 'script-image', method: 'script' });
    // The machine is destroyed after the state reads ready: wait for that command too.
    await waitFor(() => runner.commands.some((c) => c.type === 'machine.destroy'), 8000, 'the machine\'s destroy');
    const types = runner.commands.filter((c) => c.machine_id && c.args && runner.commands.some((m) => m.type === 'machine.make' && m.machine_id === c.machine_id)).map((c) => c.type);
    expect(types.slice(0, 4)).to.deep.equal(['machine.make', 'machine.run', 'machine.save', 'machine.destroy']);
    const save = runner.commands.find((c) => c.type === 'machine.save')!;
    expect(save.args.disk).to.deep.equal({ image: 'script-image', state: good.start_state_id, version: 1 });

    const bad = await createState({ name: 'broken', from: 'script-image', method: 'script', script: 'cat setup.txt; exit 3' });
    const failed = await waitFor(async () => ((await state(bad.start_state_id)).status === 'failed' ? state(bad.start_state_id) : null), 8000, 'failed');
    expect(failed.error).to.contain('exited with status 3').and.to.contain('no such file: setup.txt');
    expect(failed.version).to.equal(0);
    const audit = (await api('GET', `/v1/audit_log?object_type=start_state&object_id=${bad.start_state_id}`)).body.data.map((e: { action: string }) => e.action);
    expect(audit).to.include.members(['start_state.created', 'start_state.failed']);
  });

  it('a make that is never answered times out; the build moves to a new machine, and fails after its attempts with a clear reason', async () => {
    await connectRunner('silent-image', 1, { autoMake: false });
    const made = await createState({ name: 'never boots', from: 'silent-image', method: 'script', script: 'true' });
    const failed = await waitFor(async () => ((await state(made.start_state_id)).status === 'failed' ? state(made.start_state_id) : null), 15_000, 'failed');
    expect(failed.error).to.match(/machine was lost: The runner could not make the machine \(timeout\)/);
    const machines = await db()('machines').where({ owner_id: made.start_state_id }).orderBy('seq');
    expect(machines.map((m: { status: string }) => m.status)).to.deep.equal(['failed', 'failed', 'failed']);
  });

  it('a command past its deadline fails with timeout within a second or two, with no job of its own; an answered one is left as answered', async () => {
    const { runnerId } = await connectRunner('deadline-image', 1, { autoDestroy: false });
    const open = await createState({ name: 'deadlines', from: 'deadline-image', method: 'hand' });
    const command = async (type: string) => db()('runner_commands').where({ runner_id: runnerId, type }).first();
    await waitFor(async () => (await command('machine.make'))?.status === 'done', 5000, 'the make answered');
    // The destroy is not answered (autoDestroy off); its deadline (60 s) is moved to the past.
    expect((await api('DELETE', `/v1/start_states/${open.start_state_id}`)).status).to.equal(200);
    const destroy = await waitFor(() => command('machine.destroy'), 5000, 'the destroy sent');
    const make = await command('machine.make');
    await db()('runner_commands').whereIn('id', [destroy.id, make.id]).update({ deadline_at: db().raw("now() - interval '1 second'") });
    const failed = await waitFor(async () => ((await command('machine.destroy')).status === 'failed' ? command('machine.destroy') : null), 3000, 'the destroy timed out');
    expect(failed).to.include({ error_code: 'timeout', error: 'The runner did not answer in time' });
    expect((await command('machine.make')).status).to.equal('done');
    // A destroy that timed out frees the slot all the same.
    expect((await db()('machines').where({ id: destroy.machine_id }).first()).status).to.equal('destroyed');
    const evals = service.running.container.queues.queue('evals');
    expect(await evals.getJob(`command-timeout-${destroy.id}`)).to.equal(undefined);
  });

  it('a runner that reconnects without a machine loses it: the open state returns to its last version (never saved: failed)', async () => {
    const first = await connectRunner('restart-image', 1);
    const made = await createState({ name: 'opened', from: 'restart-image', method: 'hand' });
    await waitFor(async () => (await db()('machines').where({ owner_id: made.start_state_id, status: 'running' })).length === 1, 5000, 'running');
    // The runner restarts: a new connection with the same token reports no machines.
    first.runner.close();
    const again = new RawRunner(service.baseUrl);
    runners.push(again);
    expect((await again.hello(first.token, { images: ['restart-image'], slots: 1, machines: [] })).ok).to.equal(true);
    const beat = setInterval(() => void again.heartbeat().catch(() => undefined), 200);
    again.socket.on('disconnect', () => clearInterval(beat));
    const failed = await waitFor(async () => ((await state(made.start_state_id)).status === 'failed' ? state(made.start_state_id) : null), 5000, 'failed');
    expect(failed.error).to.contain('restarted and no longer has the machine');
    expect(failed.view).to.equal(null);
  });

  it('a runner that reports a machine the service does not want there is told to destroy it', async () => {
    const { runner } = await connectRunner('stray-image', 1, { machines: ['mc_stray000000000000000'] });
    await waitFor(() => runner.commands.find((c) => c.type === 'machine.destroy' && c.machine_id === 'mc_stray000000000000000'), 5000, 'a destroy for the stray machine');
  });

  it('a deleted runner gives up its machines at once; a runner that goes silent loses them after the offline time', async () => {
    const revoked = await connectRunner('revoke-image', 1);
    const open = await createState({ name: 'on a runner about to be deleted', from: 'revoke-image', method: 'hand' });
    await waitFor(async () => (await db()('machines').where({ owner_id: open.start_state_id, status: 'running' })).length === 1, 5000, 'running');
    expect((await api('DELETE', `/v1/runners/${revoked.runnerId}`)).status).to.equal(200);
    const failed = await waitFor(async () => ((await state(open.start_state_id)).status === 'failed' ? state(open.start_state_id) : null), 5000, 'failed');
    expect(failed.error).to.contain(`Runner ${revoked.runnerId} was deleted`);

    const gone = await connectRunner('gone-image', 1);
    const building = await createState({ name: 'on a runner about to vanish', from: 'gone-image', method: 'hand' });
    await waitFor(async () => (await db()('machines').where({ owner_id: building.start_state_id, status: 'running' })).length === 1, 5000, 'running');
    gone.runner.close();
    const lost = await waitFor(async () => ((await state(building.start_state_id)).status === 'failed' ? state(building.start_state_id) : null), 8000, 'failed');
    expect(lost.error).to.contain('went offline');
  });

  it('an open machine nobody saves closes within a second of view.expires_at (worker-evals\' look, no job of its own): never saved, the state is failed; the view ends', async () => {
    const { runner } = await connectRunner('expiry-image', 1);
    const made = await createState({ name: 'left open', from: 'expiry-image', method: 'hand' });
    expect(Date.parse(made.view!.expires_at) - Date.now()).to.be.within(2000, 4500);
    const closed = await waitFor(async () => ((await state(made.start_state_id)).status === 'failed' ? state(made.start_state_id) : null), 10_000, 'closed');
    expect(closed.error).to.contain('closed unsaved');
    expect(closed.view).to.equal(null);
    await waitFor(() => runner.commands.find((c) => c.type === 'machine.destroy'), 5000, 'its machine destroyed');
    expect((await fetch(service.baseUrl + new URL(made.view!.screen_url).pathname)).status).to.equal(404);
    const audit = (await api('GET', `/v1/audit_log?object_type=start_state&object_id=${made.start_state_id}`)).body.data as Array<{ action: string; created_at: string }>;
    const closedAt = audit.find((entry) => entry.action === 'start_state.closed')!.created_at;
    expect(Date.parse(closedAt) - Date.parse(made.view!.expires_at)).to.be.within(0, 2000);
    const evals = service.running.container.queues.queue('evals');
    const jobs = (await evals.getJobs(['waiting', 'active', 'delayed', 'completed', 'failed'])).filter((job) => job.data.start_state_id === made.start_state_id);
    expect(jobs.map((job) => job.id)).to.deep.equal([]);
  });

  it('refuses what cannot be made: an unknown image (400 naming from), no online runner (409 no_runner), method fields that do not fit; a refusal records nothing', async () => {
    const recorded = async () => ({
      states: (await db()('start_states').where({ org_id: org.orgId }).count({ n: '*' }))[0]!.n,
      machines: (await db()('machines').where({ org_id: org.orgId }).count({ n: '*' }))[0]!.n,
      sessions: (await db()('sessions').where({ org_id: org.orgId }).count({ n: '*' }))[0]!.n,
      audit: (await db()('audit_log').where({ org_id: org.orgId }).count({ n: '*' }))[0]!.n,
    });
    const before = await recorded();
    const unknown = await api('POST', '/v1/start_states', { name: 'x', from: 'no-such-image', method: 'hand' });
    expect(unknown.status).to.equal(400);
    expect(unknown.body.error.message).to.match(/^from: /);
    const noScript = await api('POST', '/v1/start_states', { name: 'x', from: 'slots-image', method: 'script' });
    expect(noScript.status).to.equal(400);
    expect(noScript.body.error.message).to.contain('script is required');
    const offline = await api('POST', '/v1/start_states', { name: 'x', from: 'gone-image', method: 'hand' });
    expect(offline.status).to.equal(409);
    expect(offline.body.error.code).to.equal('no_runner');
    expect(await recorded()).to.deep.equal(before);
    const images = (await api('GET', '/v1/start_states')).body.data.filter((s: { kind: string }) => s.kind === 'image').map((s: { start_state_id: string }) => s.start_state_id);
    expect(images).to.include('slots-image');
    const patchImage = await api('PATCH', '/v1/start_states/slots-image', { name: 'mine' });
    expect(patchImage.status).to.equal(403);
    expect(patchImage.body.error.code).to.equal('image');
  });
});
