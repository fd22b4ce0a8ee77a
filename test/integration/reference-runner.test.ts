import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Container } from '../../shared/container';
import { ReferenceRunner, type ReferenceRunnerOptions } from '../../shared/simulator/runner/reference-runner';
import { FakeRunnerService } from '../support/fake-runner-service';
import { startTestService, waitFor, type TestService } from '../support/service';

const packageVersion = (JSON.parse(readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;

/**
 * The reference runner in this process against a stand-in for the service's `/runners` side
 * (FakeRunnerService, a real socket.io server), its machines pairing with a real Deskhand
 * service's `/desktop` namespace through machine sessions.
 */
describe('the reference runner (in process)', function () {
  this.timeout(60_000);
  let service: TestService;
  let container: Container;
  let orgId: string;
  let fake: FakeRunnerService;
  let dataDir: string;
  const runners: ReferenceRunner[] = [];
  let commands = 0;
  const nextId = (prefix: string) => `${prefix}_${++commands}_${Date.now().toString(36)}`;

  before(async () => {
    service = await startTestService({}, ['web']);
    container = service.running.container;
    orgId = (await service.newOrg('Runner org')).orgId;
  });
  after(async () => service.stop());

  beforeEach(async () => {
    fake = await FakeRunnerService.start();
    dataDir = mkdtempSync(path.join(tmpdir(), 'deskhand-runner-test-'));
  });
  afterEach(async () => {
    await Promise.all(runners.splice(0).map((runner) => runner.stop()));
    await fake.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  /** Starts a runner against the fake service, its machines pairing with the real one; waits for its hello. */
  async function startRunner(overrides: Partial<ReferenceRunnerOptions> = {}): Promise<{ runner: ReferenceRunner; lines: Array<Record<string, any>> }> {
    const lines: Array<Record<string, any>> = [];
    const runner = new ReferenceRunner({
      token: 'dhr_test',
      baseUrl: fake.baseUrl,
      desktopBaseUrl: service.baseUrl,
      name: 'rack 1',
      slots: 2,
      labels: ['eu'],
      images: ['macos-15', 'windows-11'],
      dataDir,
      bootMs: 0,
      version: packageVersion,
      reconnectDelayMs: 50,
      out: (line) => lines.push(line as Record<string, any>),
      ...overrides,
    });
    runners.push(runner);
    runner.start();
    await fake.waitForRunner();
    return { runner, lines };
  }

  async function machineSession(): Promise<string> {
    const { code } = await container.sessions.createMachineSession(container.db, { orgId, label: 'runner test' });
    return code;
  }

  async function makeMachine(disk: Record<string, unknown> = { image: 'macos-15' }, os = 'mac'): Promise<{ machineId: string; code: string; done: any }> {
    const code = await machineSession();
    const machineId = nextId('mc');
    const done = await fake.command({ command_id: nextId('cmd'), type: 'machine.make', machine_id: machineId, args: { disk, session: { code }, os } });
    return { machineId, code, done };
  }

  const run = (machineId: string, script: string, timeoutMs = 5000) =>
    fake.command({ command_id: nextId('cmd'), type: 'machine.run', machine_id: machineId, args: { script, timeout_ms: timeoutMs } });

  it('says hello with what it has, then heartbeats with how busy it is', async () => {
    await startRunner();
    expect(fake.hellos).to.have.length(1);
    expect(fake.hellos[0]).to.deep.equal({
      token: 'dhr_test',
      provider: 'simulated',
      version: packageVersion,
      labels: ['eu'],
      slots: 2,
      images: ['macos-15', 'windows-11'],
      busy: 0,
      machines: [],
    });
    await waitFor(() => fake.heartbeats.length >= 2, 5000, 'two heartbeats');
    expect(fake.heartbeats[0]).to.deep.equal({ busy: 0 });
  });

  it('makes a machine that pairs with the service as a Mac desktop app at 1.0.20, and says so in its hello after a reconnect', async () => {
    const { lines } = await startRunner();
    const { machineId, code, done } = await makeMachine();
    expect(done).to.deep.include({ ok: true, result: {} });
    const session = await container.db('sessions').where({ code }).first();
    expect(session.status).to.equal('connected');
    expect(session.device).to.include({ os: 'mac', app_version: '1.0.20' });
    expect(session.capabilities).to.include({ accessibility: true });
    expect(lines.find((line) => line.event === 'machine_made')).to.include({ machine_id: machineId });
    await waitFor(() => fake.heartbeats.some((beat) => beat.busy === 1), 5000, 'a heartbeat with busy 1');

    fake.dropRunner();
    await waitFor(() => fake.hellos.length === 2 && fake.connected, 10_000, 'a second hello');
    expect(fake.hellos[1]).to.include({ busy: 1 });
    expect(fake.hellos[1]!.machines).to.deep.equal([machineId]);
  });

  it('makes a Windows machine from a windows image', async () => {
    await startRunner();
    const { code, done } = await makeMachine({ image: 'windows-11' }, 'windows');
    expect(done.ok).to.equal(true);
    const session = await container.db('sessions').where({ code }).first();
    expect(session.device).to.include({ os: 'windows' });
  });

  it('runs scripts in the machine\'s shell: exit code and output, a timeout, and an unknown machine', async () => {
    await startRunner();
    const { machineId } = await makeMachine();
    const written = await run(machineId, 'echo "call Bob" > Documents/todo.txt; ls Documents; echo done >&2; exit 3');
    expect(written).to.deep.include({ ok: true, result: { exit_code: 3, output: 'report.txt\ntodo.txt\ndone\n', stdout: 'report.txt\ntodo.txt\n', stderr: 'done\n' } });
    const timedOut = await run(machineId, 'echo started; while :; do :; done', 200);
    expect(timedOut).to.deep.include({ ok: false });
    expect((timedOut as any).error.code).to.equal('timeout');
    expect((timedOut as any).result.exit_code).to.equal(124);
    const missing = await run('mc_nope', 'true');
    expect((missing as any).error.code).to.equal('no_such_machine');
  });

  it('refuses an image it does not have with no_such_image, and a saved version it does not keep with no_such_disk', async () => {
    await startRunner();
    const image = await makeMachine({ image: 'ubuntu-24' });
    expect(image.done).to.deep.include({ ok: false });
    expect(image.done.error.code).to.equal('no_such_image');
    const disk = await makeMachine({ image: 'macos-15', state: 'ss_missing', version: 3 });
    expect(disk.done.error.code).to.equal('no_such_disk');
  });

  it('answers boot_failed when the service refuses the pairing code, and when the machine is destroyed while it boots', async () => {
    await startRunner({ bootMs: 60_000 });
    const machineId = nextId('mc');
    const make = { command_id: nextId('cmd'), type: 'machine.make' as const, machine_id: machineId, args: { disk: { image: 'macos-15' }, session: { code: await machineSession() }, os: 'mac' } };
    fake.send(make);
    await waitFor(() => fake.hellos.length && runners[0]!.hypervisor.ids().includes(machineId), 5000, 'the machine to boot');
    expect(await fake.command({ command_id: nextId('cmd'), type: 'machine.destroy', machine_id: machineId })).to.deep.include({ ok: true });
    const made = await waitFor(() => fake.donesFor(make.command_id)[0], 5000, 'the make to end');
    expect((made as any).error.code).to.equal('boot_failed');

    await runners.splice(0)[0]!.stop();
    await waitFor(() => !fake.connected, 5000, 'the first runner to go');
    await startRunner();
    const refused = await fake.command({ command_id: nextId('cmd'), type: 'machine.make', machine_id: nextId('mc'), args: { disk: { image: 'macos-15' }, session: { code: 'ZZZZ-ZZZZ' }, os: 'mac' } });
    expect((refused as any).error.code).to.equal('boot_failed');
    expect((refused as any).error.message).to.contain('refused');
  });

  it('carries out a command sent twice once: a repeat while it runs is not started, a repeat after it finished gets the same answer', async () => {
    await startRunner();
    const { machineId } = await makeMachine();
    const command = { command_id: nextId('cmd'), type: 'machine.run' as const, machine_id: machineId, args: { script: 'sleep 0.3; echo once >> Documents/count.txt; wc -l < Documents/count.txt', timeout_ms: 5000 } };
    fake.send(command);
    fake.send(command);
    const first = await waitFor(() => fake.donesFor(command.command_id)[0], 10_000, 'the first answer');
    expect(first).to.deep.include({ ok: true, result: { exit_code: 0, output: '1\n', stdout: '1\n', stderr: '' } });
    fake.send(command);
    await waitFor(() => fake.donesFor(command.command_id).length === 2, 10_000, 'the answer again');
    expect(fake.donesFor(command.command_id)[1]).to.deep.equal(first);
    const count = await run(machineId, 'cat Documents/count.txt');
    expect((count as any).result.output).to.equal('once\n');
  });

  it('shows the console the screen as a PNG whose frame grows when console input or a script changes it', async () => {
    await startRunner();
    const { machineId } = await makeMachine();
    const first = await fake.screen(machineId);
    expect(first).to.include({ ok: true, width: 1440, height: 900 });
    expect(Buffer.from(first.png).subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
    expect((await fake.screen(machineId)).frame).to.equal(first.frame);

    expect(await fake.input(machineId, { type: 'key', keys: 'cmd+space' })).to.deep.include({ ok: true });
    await fake.input(machineId, { type: 'type', text: 'Finder' });
    const opened = await fake.input(machineId, { type: 'key', keys: 'enter' });
    expect(opened.ok).to.equal(true);
    expect(opened.frame).to.be.greaterThan(first.frame);

    await run(machineId, 'echo hi > Documents/new.txt');
    const after = await fake.screen(machineId);
    expect(after.frame).to.be.greaterThan(opened.frame);
    expect(await fake.input(machineId, { type: 'tap' })).to.deep.include({ ok: false });
    expect(await fake.screen('mc_nope')).to.deep.include({ ok: false });
  });

  it('saves a disk that a new runner with the same data folder makes a machine from, with no windows open; disk.delete forgets it', async () => {
    const first = await startRunner();
    const { machineId } = await makeMachine();
    await run(machineId, 'echo "keep me" > Documents/kept.txt');
    await fake.input(machineId, { type: 'key', keys: 'cmd+space' });
    await fake.input(machineId, { type: 'type', text: 'Finder\n' });
    const saved = await fake.command({ command_id: nextId('cmd'), type: 'machine.save', machine_id: machineId, args: { disk: { image: 'macos-15', state: 'ss_kept', version: 1 } } });
    expect(saved.ok).to.equal(true);
    expect((saved as any).result.bytes).to.be.greaterThan(0);
    expect(existsSync(path.join(dataDir, 'disks', 'ss_kept', '1.json'))).to.equal(true);
    expect(first.lines.find((line) => line.event === 'saved')).to.include({ machine_id: machineId, bytes: (saved as any).result.bytes });

    await first.runner.stop();
    await waitFor(() => !fake.connected, 5000, 'the first runner to go');
    const second = await startRunner();
    const restored = await makeMachine({ image: 'macos-15', state: 'ss_kept', version: 1 });
    expect(restored.done.ok).to.equal(true);
    const read = await run(restored.machineId, 'cat Documents/kept.txt');
    expect((read as any).result.output).to.equal('keep me\n');
    const windows = second.runner.hypervisor.computer(restored.machineId)!.inspect().windows.filter((window) => !window.system);
    expect(windows).to.deep.equal([]);

    const deleted = await fake.command({ command_id: nextId('cmd'), type: 'disk.delete', args: { state: 'ss_kept' } });
    expect(deleted).to.deep.include({ ok: true, result: {} });
    expect(existsSync(path.join(dataDir, 'disks', 'ss_kept'))).to.equal(false);
    const gone = await makeMachine({ image: 'macos-15', state: 'ss_kept', version: 1 });
    expect(gone.done.error.code).to.equal('no_such_disk');
  });

  it('destroys a machine (its desktop connection closes, its session goes offline), and a second destroy is fine', async () => {
    const { lines } = await startRunner();
    const { machineId, code } = await makeMachine();
    const destroy = { command_id: nextId('cmd'), type: 'machine.destroy' as const, machine_id: machineId };
    expect(await fake.command(destroy)).to.deep.include({ ok: true, result: {} });
    expect(lines.some((line) => line.event === 'desktop.closed' && line.machine_id === machineId)).to.equal(true);
    await waitFor(async () => (await container.db('sessions').where({ code }).first()).status === 'disconnected', 10_000, 'the session to disconnect');
    expect(await fake.command({ ...destroy, command_id: nextId('cmd') })).to.deep.include({ ok: true, result: {} });
    expect((await run(machineId, 'true') as any).error.code).to.equal('no_such_machine');
  });

  it('is online in the real service with what it reported, and stops with revoked when the runner is deleted', async () => {
    const org = await service.newOrg('Real runner org');
    const created = await service.api(org.key, 'POST', '/v1/runners', { name: 'rack real' });
    const lines: Array<Record<string, any>> = [];
    const runner = new ReferenceRunner({
      token: created.body.token, baseUrl: service.baseUrl, name: 'rack real', slots: 3, labels: ['eu'], images: ['macos-15'], dataDir, bootMs: 0,
      version: packageVersion, reconnectDelayMs: 50, out: (line) => lines.push(line as Record<string, any>),
    });
    runners.push(runner);
    runner.start();
    await waitFor(() => lines.find((line) => line.event === 'hello' && line.ok), 10_000, 'the real hello');
    const read = await service.api(org.key, 'GET', `/v1/runners/${created.body.runner_id}`);
    expect(read.body).to.include({ status: 'online', provider: 'simulated', version: packageVersion, slots: 3, busy: 0 });
    expect(read.body.images).to.deep.equal(['macos-15']);
    expect((await service.api(org.key, 'DELETE', `/v1/runners/${created.body.runner_id}`)).status).to.equal(200);
    expect(await runner.finished).to.include({ reason: 'refused', code: 'revoked' });
  });

  it('stops for good when its hello is refused', async () => {
    fake.helloReply = () => ({ ok: false, code: 'revoked', message: 'This runner was deleted.' });
    const lines: Array<Record<string, any>> = [];
    const runner = new ReferenceRunner({
      token: 'dhr_revoked', baseUrl: fake.baseUrl, name: 'r', slots: 1, labels: [], images: ['macos-15'], dataDir, bootMs: 0, version: packageVersion,
      reconnectDelayMs: 50, out: (line) => lines.push(line as Record<string, any>),
    });
    runners.push(runner);
    runner.start();
    expect(await runner.finished).to.deep.equal({ reason: 'refused', code: 'revoked', message: 'This runner was deleted.' });
    expect(fake.hellos).to.have.length(1);
  });
});
