import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { freePort } from '../support/ports';
import { startChildProcess } from '../support/web-process';
import { SimulatedComputer, centerOf } from '../../shared/simulator';

/**
 * Start states end to end with the reference runner as a process (`npx deskhand runner`):
 * machines made by worker-evals through the web process, their disks saved in the runner's data
 * folder, a script that fails, an instruction carried out by an agent task, the live view in
 * Chromium, an open machine that expires, a runner killed mid-command, two web processes.
 */
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ENV = {
  DESKHAND_SCRIPTED_MODELS: '1',
  DESKHAND_RUNNER_HEARTBEAT_MS: '300',
  DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500',
  DESKHAND_OPEN_MACHINE_MS: '600000',
};

interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  lines(): Array<Record<string, any>>;
}

/** A file of a saved disk in the runner's data folder (`DIR/disks/ss_…/N.json`), as text; null when not on that disk. */
function savedFile(dataDir: string, stateId: string, version: number, file: string): string | null {
  const saved = JSON.parse(fs.readFileSync(path.join(dataDir, 'disks', stateId, `${version}.json`), 'utf8')) as { disk: { entries: Array<{ path: string; kind: string; base64?: string }> } };
  const entry = saved.disk.entries.find((candidate) => candidate.path === file && candidate.kind === 'file');
  return entry ? Buffer.from(entry.base64!, 'base64').toString('utf8') : null;
}

describe('start states with the reference runner (a process)', function () {
  this.timeout(90_000);
  let service: TestService;
  let key: string;
  const children: RunnerProcess[] = [];
  const dataDirs: string[] = [];

  const api = (method: string, pathname: string, body?: unknown, base = service) => base.api(key, method, pathname, body);
  const read = async (id: string) => (await api('GET', `/v1/start_states/${id}`)).body;
  const until = (id: string, status: string, ms = 20_000) => waitFor(async () => {
    const state = await read(id);
    if (state.status === 'failed' && status !== 'failed') throw new Error(`${id} failed: ${state.error}`);
    return state.status === status ? state : null;
  }, ms, `${id} ${status}`);

  function spawnRunner(token: string, baseUrl: string, dataDir: string, ...args: string[]): RunnerProcess {
    const child = spawn(process.execPath, [bin, 'runner', '--token', token, '--base-url', baseUrl, '--data-dir', dataDir, ...args], { env: { ...process.env, ...testEnv() } });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', () => undefined);
    const runner = { child, exited: once(child, 'exit').then(([code]) => code as number | null), lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)) };
    children.push(runner);
    return runner;
  }

  /** Registers a runner of the org and starts it; resolves once the service reads it online. */
  async function startRunner(name: string, ...args: string[]) {
    const created = (await api('POST', '/v1/runners', { name })).body as { runner_id: string; token: string };
    const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-e2e-runner-'));
    dataDirs.push(dataDir);
    const process = spawnRunner(created.token, service.baseUrl, dataDir, '--name', name, ...args);
    await waitFor(async () => (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online', 20_000, `${name} online`);
    return { ...created, dataDir, process };
  }

  before(async () => {
    service = await startTestService(ENV, ['web', 'worker-agent', 'worker-evals', 'worker-clock']);
    ({ key } = await service.newOrg('Start states e2e'));
  });
  after(async () => {
    for (const runner of children) if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    await Promise.all(children.map((runner) => runner.exited));
    await service?.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('on one runner', () => {
    let runner: Awaited<ReturnType<typeof startRunner>>;
    before(async () => {
      runner = await startRunner('rack e2e', '--slots', '3', '--labels', 'eu');
    });

    it('lists the runner\'s images as start states, and registers it online with what it reported', async () => {
      const read = (await api('GET', `/v1/runners/${runner.runner_id}`)).body;
      expect(read).to.include({ status: 'online', provider: 'simulated', slots: 3, busy: 0 });
      expect(read.images).to.deep.equal(['macos-15', 'windows-11']);
      const images = (await api('GET', '/v1/start_states')).body.data.filter((state: { kind: string }) => state.kind === 'image');
      const ours = images.filter((image: { start_state_id: string }) => read.images.includes(image.start_state_id));
      expect(ours.map((image: { start_state_id: string; os: string }) => [image.start_state_id, image.os])).to.deep.equal([['macos-15', 'mac'], ['windows-11', 'windows']]);
      expect(ours[0]).to.include({ status: 'ready', version: 0, from: null, method: null, runner_id: null });
      // The labels of every runner with the image that this org may use (cloud runners of other tests too).
      expect(ours[0].labels).to.include('eu');
    });

    it('builds by a script: the file it writes is on the saved disk (version 1), and a state made from it starts with that file', async () => {
      const made = await api('POST', '/v1/start_states', { name: 'with a meeting note', from: 'macos-15', method: 'script', script: 'echo "Meeting at 3" > $HOME/Documents/meeting.txt && ls $HOME/Documents' });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      expect(made.body).to.include({ status: 'building', kind: 'state', method: 'script', version: 0, os: 'mac' });
      const ready = await until(made.body.start_state_id, 'ready');
      expect(ready).to.include({ version: 1, runner_id: runner.runner_id, error: null });
      expect(ready.labels).to.deep.equal(['eu']);
      expect(savedFile(runner.dataDir, ready.start_state_id, 1, '/home/user/Documents/meeting.txt')).to.equal('Meeting at 3\n');
      // Ready once saved; its machine is destroyed just after.
      await waitFor(() => runner.process.lines().some((line) => line.event === 'destroyed'), 10_000, 'the machine destroyed');
      const events = runner.process.lines().map((line) => line.event);
      expect(events).to.include.members(['machine_made', 'script_run', 'saved', 'destroyed']);
      // Its machine is gone: the slot is free again.
      await waitFor(async () => (await api('GET', `/v1/runners/${runner.runner_id}`)).body.busy === 0, 5000, 'the slot freed');

      // A state made by a script from it starts from that disk: the file is there.
      const derived = await api('POST', '/v1/start_states', { name: 'derived', from: ready.start_state_id, method: 'script', script: 'test -f $HOME/Documents/meeting.txt && echo found >> $HOME/Documents/meeting.txt' });
      expect(derived.status, JSON.stringify(derived.body)).to.equal(200);
      const second = await until(derived.body.start_state_id, 'ready');
      expect(second.from).to.equal(ready.start_state_id);
      expect(savedFile(runner.dataDir, second.start_state_id, 1, '/home/user/Documents/meeting.txt')).to.equal('Meeting at 3\nfound\n');
    });

    it('fails a build whose script exits non-zero, with the exit status and the end of its output', async () => {
      const made = await api('POST', '/v1/start_states', { name: 'broken', from: 'windows-11', method: 'script', script: 'echo "looking for setup.txt"\ncat $HOME/Documents/setup.txt || exit 3' });
      const failed = await until(made.body.start_state_id, 'failed');
      expect(failed.error).to.contain('exited with status 3').and.to.contain('looking for setup.txt');
      expect(failed.version).to.equal(0);
      expect(fs.existsSync(path.join(runner.dataDir, 'disks', failed.start_state_id))).to.equal(false);
    });

    it('builds by an instruction: an agent task on the machine saves a note, and the saved disk has it', async () => {
      const made = await api('POST', '/v1/start_states', {
        name: 'note saved',
        from: 'macos-15',
        method: 'instruction',
        instruction: 'open Notes\ntype "Remember the milk"\nkey cmd+s\ndone "Saved a note"',
      });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      expect(made.body).to.include({ status: 'building', agent_id: 'default' });
      const ready = await until(made.body.start_state_id, 'ready', 30_000);
      expect(ready.task_id).to.match(/^task_/);
      const task = (await api('GET', `/v1/tasks/${ready.task_id}`)).body;
      expect(task).to.include({ status: 'completed', result: 'Saved a note' });
      expect(savedFile(runner.dataDir, ready.start_state_id, 1, '/home/user/Documents/Untitled.txt')).to.equal('Remember the milk');
    });

    it('an open machine nobody saves closes at view.expires_at: the state returns to its last saved version', async () => {
      const built = await api('POST', '/v1/start_states', { name: 'to reopen', from: 'macos-15', method: 'script', script: 'true' });
      await until(built.body.start_state_id, 'ready');
      // The expiry here is the service's default (10 minutes): this one is moved to the past in PostgreSQL's record,
      // and the maintenance sweep (the backstop of the delayed job, which machines.test.ts sees fire) closes it.
      const opened = await api('POST', `/v1/start_states/${built.body.start_state_id}/open`);
      expect(opened.status, JSON.stringify(opened.body)).to.equal(200);
      expect(opened.body).to.include({ status: 'open' });
      expect(opened.body.view.screen_url).to.match(/\/view\/dhv_[a-z0-9]{32}$/);
      await waitFor(async () => (await api('GET', `/v1/runners/${runner.runner_id}`)).body.busy === 1, 10_000, 'its machine running');
      await service.running.container.db('start_states').where({ id: built.body.start_state_id }).update({ view_expires_at: new Date(Date.now() - 1000) });
      await service.running.container.startStateFlow.sweep();
      const closed = await until(built.body.start_state_id, 'ready');
      expect(closed).to.include({ version: 1, view: null });
      expect(closed.error).to.contain('closed unsaved');
      await waitFor(async () => (await api('GET', `/v1/runners/${runner.runner_id}`)).body.busy === 0, 10_000, 'its machine destroyed');
      const gone = await fetch(service.baseUrl + new URL(opened.body.view.screen_url).pathname);
      expect(gone.status).to.equal(404);
    });

    it('the live view in Chromium: click and type on the picture, see the screen change, save, and find the change on the saved disk', async function () {
      if (!fs.existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM}; install it with \`bash scripts/setup.sh --test\``);
      const made = await api('POST', '/v1/start_states', { name: 'set up by hand', from: 'macos-15', method: 'hand' });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      expect(made.body).to.include({ status: 'open', method: 'hand' });
      const view = made.body.view as { screen_url: string; input_url: string; expires_at: string };
      expect(Date.parse(view.expires_at)).to.be.greaterThan(Date.now());
      const pageUrl = service.baseUrl + new URL(view.screen_url).pathname;

      // Where Notes (TextEdit on a Mac) is in the Dock of a fresh Mac of the runner's screen size.
      const mac = new SimulatedComputer({ os: 'mac', appVersion: '1.0.20', width: 1440, height: 900, name: 'layout', accessibility: true });
      const notes = mac.observe().observation!.elements!.find((element) => element.label === 'TextEdit')!;
      expect(notes, 'a Notes launcher on the screen').to.not.equal(undefined);
      const at = centerOf(notes.bounds);

      let browser: Browser | null = null;
      try {
        browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 });
        const page = await (await browser.newContext({ viewport: { width: 1600, height: 1000 } })).newPage();
        const response = await page.goto(pageUrl);
        expect(response?.status()).to.equal(200);
        const screen = page.getByTestId('screen');
        await waitFor(async () => Number((await screen.getAttribute('data-frame')) ?? -1) >= 0, 20_000, 'the first picture');
        const first = Number(await screen.getAttribute('data-frame'));
        const box = (await screen.boundingBox())!;
        const scale = box.width / 1440;
        await screen.click({ position: { x: at.x * scale, y: at.y * scale } });
        await waitFor(async () => Number(await screen.getAttribute('data-frame')) > first, 10_000, 'the screen to change after the click');
        const afterClick = Number(await screen.getAttribute('data-frame'));
        await page.keyboard.type('Hello from the browser');
        await waitFor(async () => Number(await screen.getAttribute('data-frame')) > afterClick, 10_000, 'the screen to change after typing');
        // The page sends the key to the machine; the service answers once the machine has carried it out.
        const keySent = page.waitForResponse((response) => response.url().endsWith('/input') && (response.request().postData() ?? '').includes('"cmd+s"'), { timeout: 10_000 });
        await page.keyboard.press('Meta+s');
        expect((await keySent).status()).to.equal(200);
      } finally {
        await browser?.close();
      }

      const saving = await api('POST', `/v1/start_states/${made.body.start_state_id}/save`);
      expect(saving.status, JSON.stringify(saving.body)).to.equal(200);
      expect(saving.body).to.include({ status: 'saving', view: null });
      const ready = await until(made.body.start_state_id, 'ready');
      expect(ready.version).to.equal(1);
      expect(savedFile(runner.dataDir, ready.start_state_id, 1, '/home/user/Documents/Untitled.txt')).to.equal('Hello from the browser');
      const audit = (await api('GET', `/v1/audit_log?object_type=start_state&object_id=${ready.start_state_id}`)).body.data.map((entry: { action: string }) => entry.action);
      expect(audit).to.include.members(['start_state.created', 'start_state.save_requested', 'start_state.saved']);
      // The view ended with the save.
      expect((await fetch(pageUrl)).status).to.equal(404);
    });

    it('deletes a state and its saved disks on the runner', async () => {
      const built = await api('POST', '/v1/start_states', { name: 'to delete', from: 'macos-15', method: 'script', script: 'true' });
      const ready = await until(built.body.start_state_id, 'ready');
      expect(fs.existsSync(path.join(runner.dataDir, 'disks', ready.start_state_id, '1.json'))).to.equal(true);
      expect((await api('DELETE', `/v1/start_states/${ready.start_state_id}`)).status).to.equal(200);
      await waitFor(() => !fs.existsSync(path.join(runner.dataDir, 'disks', ready.start_state_id)), 10_000, 'its disks deleted');
      expect((await api('GET', `/v1/start_states/${ready.start_state_id}`)).status).to.equal(404);
    });
  });

  it('never gives a runner more machines than its slots under concurrent requests; a runner stopped reads offline, a deleted one is refused', async () => {
    const rack = await startRunner('two slots', '--images', 'macos-slots', '--slots', '2');
    const made = await Promise.all(Array.from({ length: 5 }, (_, i) => api('POST', '/v1/start_states', { name: `open ${i}`, from: 'macos-slots', method: 'hand' })));
    expect(made.map((response) => response.status)).to.deep.equal([200, 200, 200, 200, 200]);
    await waitFor(async () => (await api('GET', `/v1/runners/${rack.runner_id}`)).body.busy === 2, 10_000, 'two machines');
    // Each request placed its machine or left it waiting in its own transaction; a placement pass
    // (one the runner's hello queued) is the other way a machine is placed. Once none is queued
    // or running, and one more has run here, a slot still free would have been taken.
    const evals = service.running.container.queues.queue('evals');
    const passQueued = async () => (await evals.getJobs(['waiting', 'active', 'delayed', 'prioritized'])).some((job) => job.name === 'use-free-slots');
    await waitFor(async () => !(await passQueued()), 10_000, 'the queued placement passes to have run');
    await service.running.container.machines.placeWaiting();
    expect((await api('GET', `/v1/runners/${rack.runner_id}`)).body.busy).to.equal(2);
    for (const response of made) expect((await api('DELETE', `/v1/start_states/${response.body.start_state_id}`)).status).to.equal(200);
    await waitFor(async () => (await api('GET', `/v1/runners/${rack.runner_id}`)).body.busy === 0, 10_000, 'every machine let go');
    // What the runner itself saw: never more than two machines at once.
    let live = 0;
    let most = 0;
    for (const line of rack.process.lines()) {
      if (line.event === 'machine_made') live += 1;
      if (line.event === 'destroyed' && line.existed !== false) live -= 1;
      most = Math.max(most, live);
    }
    expect(most).to.equal(2);

    rack.process.child.kill('SIGTERM');
    expect(await rack.process.exited).to.equal(0);
    await waitFor(async () => (await api('GET', `/v1/runners/${rack.runner_id}`)).body.status === 'offline', 5000, 'offline once stopped');

    const doomed = await startRunner('to be deleted', '--images', 'macos-slots');
    expect((await api('DELETE', `/v1/runners/${doomed.runner_id}`)).status).to.equal(200);
    expect(await doomed.process.exited).to.equal(1);
    expect(doomed.process.lines().some((line) => line.event === 'stopped' && line.code === 'revoked')).to.equal(true);
  });

  it('a runner killed (kill -9) mid-command loses nothing: the build moves to a machine on another runner', async () => {
    // The only runner with this image boots slowly; it is killed while its make is outstanding.
    const slow = await startRunner('slow rack', '--images', 'macos-kill', '--boot-ms', '20000');
    const made = await api('POST', '/v1/start_states', { name: 'survives a runner', from: 'macos-kill', method: 'script', script: 'echo survived > $HOME/Documents/ok.txt' });
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
    await waitFor(() => service.running.container.db('runner_commands').where({ runner_id: slow.runner_id, type: 'machine.make' }).first(), 10_000, 'the make sent');
    // The runner has it and is booting the machine once its heartbeat counts the machine as busy.
    await waitFor(async () => (await service.running.container.db('runners').where({ id: slow.runner_id }).first('busy')).busy >= 1, 10_000, 'the runner to boot the machine');
    slow.process.child.kill('SIGKILL');
    await slow.process.exited;
    const fast = await startRunner('fast rack', '--images', 'macos-kill');
    const ready = await until(made.body.start_state_id, 'ready', 30_000);
    expect(ready.runner_id).to.equal(fast.runner_id);
    expect(savedFile(fast.dataDir, ready.start_state_id, 1, '/home/user/Documents/ok.txt')).to.equal('survived\n');
    const machines = await waitFor(async () => {
      const rows = await service.running.container.db('machines').where({ owner_id: made.body.start_state_id }).orderBy('seq');
      return rows.every((row: { status: string }) => row.status === 'failed' || row.status === 'destroyed') ? rows : null;
    }, 10_000, 'both machines ended');
    expect(machines.map((machine: { status: string; runner_id: string }) => [machine.status, machine.runner_id])).to.deep.equal([['failed', slow.runner_id], ['destroyed', fast.runner_id]]);
    expect(machines[0].error).to.contain('went offline');
  });

  it('two web processes: the runner on web A, the API and the live view on web B', async () => {
    const webA = await startChildProcess(['web'], ENV, await freePort());
    try {
      const created = (await api('POST', '/v1/runners', { name: 'on web A' })).body as { runner_id: string; token: string };
      const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-e2e-runner-'));
      dataDirs.push(dataDir);
      spawnRunner(created.token, webA.baseUrl, dataDir, '--images', 'macos-two-webs');
      await waitFor(async () => (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online', 20_000, 'online through web B');
      const made = await api('POST', '/v1/start_states', { name: 'across webs', from: 'macos-two-webs', method: 'hand' });
      expect(made.status, JSON.stringify(made.body)).to.equal(200);
      const screenUrl = service.baseUrl + new URL(made.body.view.screen_url).pathname;
      // The picture comes from the runner on web A through web B (socket.io's Redis adapter).
      const picture = await waitFor(async () => {
        const response = await fetch(`${screenUrl}/screen.png`);
        return response.status === 200 ? response : null;
      }, 20_000, 'the screen through web B');
      expect(picture.headers.get('content-type')).to.equal('image/png');
      const frame = Number(picture.headers.get('x-frame'));
      const notModified = await fetch(`${screenUrl}/screen.png`, { headers: { 'If-None-Match': `"${frame}"` } });
      expect(notModified.status).to.equal(304);
      const input = await fetch(service.baseUrl + new URL(made.body.view.input_url).pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'key', keys: 'cmd+space' }) });
      expect(input.status).to.equal(200);
      expect(((await input.json()) as { frame: number }).frame).to.be.greaterThan(frame);
      const bad = await fetch(service.baseUrl + new URL(made.body.view.input_url).pathname, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'click', x: -1, y: 0 }) });
      expect(bad.status).to.equal(400);
      expect((await api('POST', `/v1/start_states/${made.body.start_state_id}/save`)).status).to.equal(200);
      expect((await until(made.body.start_state_id, 'ready')).version).to.equal(1);
    } finally {
      await webA.stop('SIGKILL');
    }
  });
});
