import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { qemuOfRunner as qemuOf } from '../support/qemu-processes';

/**
 * `npx deskhand runner --provider qemu` as a process, against the whole service in this process
 * with the scripted model, customer and judge: real virtual machines of debian-12 under TCG, one
 * at a time (one slot, 1 GiB). The image and its running snapshot come from
 * ~/.cache/deskhand/images (the first run on a host builds them: minutes). A start state built by
 * a script on a real disk, a test run whose checks pass, fail and error against it, a scripted
 * agent's task on a real machine, and a runner killed mid-try.
 */
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
const ENV = { DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RUNNER_HEARTBEAT_MS: '300', DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500' };

interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  lines(): Array<Record<string, any>>;
  stderr(): string;
}


const percentile = (values: number[], p: number): number => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil((p / 100) * values.length) - 1)];

describe('npx deskhand runner --provider qemu: real machines under TCG (processes)', function () {
  this.timeout(240_000);
  let service: TestService;
  let key: string;
  const children: RunnerProcess[] = [];
  const dataDirs: string[] = [];
  let rack: { runnerId: string; process: RunnerProcess; dataDir: string };

  const api = (method: string, pathname: string, body?: unknown) => service.api(key, method, pathname, body);
  const ok = async (method: string, pathname: string, body?: unknown) => {
    const response = await api(method, pathname, body);
    expect(response.status, `${method} ${pathname}: ${JSON.stringify(response.body)}`).to.equal(200);
    return response.body;
  };
  const finished = (runId: string, ms = 180_000) =>
    waitFor(async () => {
      const run = (await api('GET', `/v1/test_runs/${runId}`)).body;
      return run.status === 'completed' || run.status === 'cancelled' ? run : null;
    }, ms, `run ${runId} to end`);
  const tries = async (runId: string) => (await api('GET', `/v1/test_runs/${runId}/tries?limit=100`)).body.data as Array<Record<string, any>>;
  const batch = async (cases: Array<Record<string, unknown>>) => (await ok('POST', '/v1/test_cases/batch', { cases })).data as Array<{ test_case_id: string; key: string }>;

  /** Registers a runner and starts it as a process with the QEMU provider; resolves once the service reads it online. */
  async function startRunner(name: string, onlineWithinMs: number) {
    const created = await ok('POST', '/v1/runners', { name });
    const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-e2e-qemu-'));
    dataDirs.push(dataDir);
    const child = spawn(process.execPath, [bin, 'runner', '--provider', 'qemu', '--token', created.token, '--base-url', service.baseUrl, '--data-dir', dataDir, '--name', name, '--slots', '1', '--memory', '1024'], {
      env: { ...process.env, ...testEnv() },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stdout += text;
      // The first run builds the image and boots it: its progress is worth seeing.
      for (const line of text.split('\n')) if (/"event":"(image_build|snapshot|app_disk|accel|provider_ready)"/.test(line)) process.stderr.write(`      ${line.slice(0, 300)}\n`);
    });
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const runner: RunnerProcess = {
      child,
      exited: once(child, 'exit').then(([code]) => code as number | null),
      lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)),
      stderr: () => stderr,
    };
    children.push(runner);
    await waitFor(async () => {
      if (runner.child.exitCode !== null) throw new Error(`the runner exited (${runner.child.exitCode}): ${stderr.slice(-2000)}`);
      return (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online';
    }, onlineWithinMs, `${name} online`);
    return { runnerId: created.runner_id as string, process: runner, dataDir };
  }

  before(async function () {
    // A first run on a host builds the image (~4 min) and boots it once with the app (~1–2 min).
    this.timeout(45 * 60_000);
    service = await startTestService(ENV, ['web', 'worker-agent', 'worker-evals', 'worker-clock']);
    ({ key } = await service.newOrg('QEMU runner e2e'));
    rack = await startRunner('qemu rack', 40 * 60_000);
  });

  after(async function () {
    this.timeout(60_000);
    for (const runner of children) if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGTERM');
    await Promise.all(children.map((runner) => Promise.race([runner.exited, new Promise((resolve) => setTimeout(resolve, 30_000))])));
    for (const runner of children) if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    const made = children.flatMap((runner) => runner.lines().filter((line) => line.event === 'machine_ready').map((line) => line.ms as number));
    if (made.length) process.stderr.write(`      machine.make until the service accepted the hello (ms): ${made.join(', ')}; p50 ${percentile(made, 50)}, p95 ${percentile(made, 95)}\n`);
    const saves = children.flatMap((runner) => runner.lines().filter((line) => line.event === 'version_kept'));
    if (saves.length) process.stderr.write(`      versions kept: ${saves.map((line) => `${line.state}/${line.version} disk ${line.disk_bytes} B, state ${line.state_bytes} B`).join('; ')}\n`);
    await service?.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
    for (const runner of children) expect(qemuOf(runner.child.pid!), 'QEMU left by a runner').to.deep.equal([]);
  });

  it('reports the image debian-12 (os linux) once its snapshot is taken, with the provider qemu', async () => {
    const lines = rack.process.lines();
    const ready = lines.find((line) => line.event === 'provider_ready');
    expect(ready).to.include({ provider: 'qemu', image: 'debian-12', os: 'linux', memory_mb: 1024 });
    // The snapshot (made now or found) comes before the connection.
    expect(lines.findIndex((line) => line.event === 'snapshot')).to.be.below(lines.findIndex((line) => line.event === 'connected'));
    const runner = (await api('GET', `/v1/runners/${rack.runnerId}`)).body;
    expect(runner).to.include({ status: 'online', provider: 'qemu', slots: 1, busy: 0 });
    expect(runner.images).to.deep.equal(['debian-12']);
    const images = (await api('GET', '/v1/start_states')).body.data.filter((state: { kind: string }) => state.kind === 'image');
    expect(images.find((image: { start_state_id: string }) => image.start_state_id === 'debian-12')).to.include({ os: 'linux', status: 'ready', version: 0 });
  });

  it('builds a start state by a script on a real disk; a test run against it: a check that finds the file passes, one on the bare image fails, a failing setup is an error', async () => {
    const made = await ok('POST', '/v1/start_states', { name: 'with a meeting note', from: 'debian-12', method: 'script', script: 'mkdir -p ~/Documents && echo "Meeting at 3" > ~/Documents/meeting.txt && ls ~/Documents' });
    expect(made).to.include({ status: 'building', os: 'linux' });
    const state = await waitFor(async () => {
      const read = (await api('GET', `/v1/start_states/${made.start_state_id}`)).body;
      if (read.status === 'failed') throw new Error(`the build failed: ${read.error}`);
      return read.status === 'ready' ? read : null;
    }, 120_000, 'the state ready');
    expect(state).to.include({ version: 1, runner_id: rack.runnerId });
    const version = path.join(rack.dataDir, 'disks', made.start_state_id, '1');
    expect(fs.statSync(path.join(version, 'disk.qcow2')).size).to.be.above(0);
    expect(JSON.parse(fs.readFileSync(path.join(version, 'version.json'), 'utf8'))).to.include({ image: 'debian-12', version: 1 });

    const cases = await batch([
      { key: 'finds-note', name: 'finds the note', prompt: 'done "ok"', start_state: made.start_state_id, success: { check_script: 'grep "Meeting at 3" ~/Documents/meeting.txt' } },
      { key: 'bare-image', name: 'no note on the bare image', prompt: 'done "ok"', start_state: 'debian-12', success: { check_script: 'test -f ~/Documents/meeting.txt || { echo "no meeting.txt" >&2; exit 1; }' } },
      { key: 'setup-fails', name: 'setup fails', prompt: 'done "ok"', start_state: 'debian-12', setup_script: 'echo preparing; exit 2', success: { check_script: 'true' } },
    ]);
    const run = await ok('POST', '/v1/test_runs', { test_case_ids: cases.map((item) => item.test_case_id) });
    const ended = await finished(run.test_run_id);
    const byKey = new Map((await tries(run.test_run_id)).map((item) => [item.key, item]));
    expect(byKey.get('finds-note')).to.deep.include({ status: 'passed', runner_id: rack.runnerId });
    expect(byKey.get('finds-note')!.check).to.include({ exit_code: 0, stdout: 'Meeting at 3\n' });
    expect(byKey.get('finds-note')!.start_state).to.include({ version: 1 });
    expect(byKey.get('bare-image')!.status).to.equal('failed');
    expect(byKey.get('bare-image')!.check).to.include({ exit_code: 1, stderr: 'no meeting.txt\n' });
    const setup = byKey.get('setup-fails')!;
    expect(setup).to.deep.include({ status: 'error', infra_retries: 2 });
    expect(setup.error).to.contain('setup script failed (exit status 2)').and.to.contain('preparing');
    expect(ended.summary.tries).to.include({ total: 3, passed: 1, failed: 1, error: 1 });
  });

  it('runs a scripted agent\'s task on a real machine: open Terminal from the launcher, type a command, and the check finds what it wrote', async () => {
    const cases = await batch([
      {
        key: 'terminal',
        name: 'types in a terminal',
        // The click on the launcher's button returns once the screen is still; xterm takes a
        // moment more to start under TCG, as a person would wait for a window to open.
        prompt: 'open Terminal\nsleep 5\ntype "echo made-by-agent > ~/agent.txt"\nkey enter\ndone "Typed it"',
        start_state: 'debian-12',
        // xterm shows no accessible elements, so typing into it is a step whose effect cannot be
        // seen: the guardrails ask, and the team approves (docs/guardrails.md, unseen_action).
        operator: { approvals: 'approve' },
        success: { check_script: 'cat ~/agent.txt', rubric: '"Typed it"' },
      },
    ]);
    const run = await ok('POST', '/v1/test_runs', { test_case_ids: cases.map((item) => item.test_case_id) });
    await finished(run.test_run_id);
    const [only] = await tries(run.test_run_id);
    expect(only, JSON.stringify(only)).to.deep.include({ status: 'passed' });
    expect(only.check).to.include({ exit_code: 0, stdout: 'made-by-agent\n' });
    const task = (await api('GET', `/v1/tasks/${only.task_id}`)).body;
    expect(task).to.include({ status: 'completed', result: 'Typed it' });
    const events = (await api('GET', `/v1/tasks/${only.task_id}/events?after=0`)).body.data as Array<{ type: string; data: Record<string, any> }>;
    expect(events.filter((event) => event.type === 'guardrail').map((event) => event.data.rule)).to.include('unseen_action');
    // The machine said hello as the Linux computer it is.
    const made = rack.process.lines().filter((line) => line.event === 'machine_ready');
    expect(made.at(-1)!.device).to.deep.include({ os: 'linux', width: 1280, height: 800 });
  });

  it('a runner killed (kill -9) mid-try leaves no QEMU; the try runs again on another runner, counted as an infrastructure retry', async () => {
    const cases = await batch([{ key: 'survives', name: 'survives', prompt: 'sleep 15\ndone "ok"', start_state: 'debian-12', success: { check_script: 'id -un' } }]);
    const run = await ok('POST', '/v1/test_runs', { test_case_ids: cases.map((item) => item.test_case_id) });
    await waitFor(async () => (await tries(run.test_run_id)).some((item) => item.task_id && item.runner_id === rack.runnerId), 60_000, 'the try\'s task started');
    const pid = rack.process.child.pid!;
    const machines = qemuOf(pid);
    expect(machines).to.have.length(1);
    rack.process.child.kill('SIGKILL');
    await rack.process.exited;
    // Its QEMU dies with it (the parent-death signal), at once.
    await waitFor(() => qemuOf(pid).length === 0, 5000, 'the killed runner\'s QEMU to end');
    const rescue = await startRunner('qemu rescue', 120_000);
    expect(rescue.process.lines()).to.satisfy((lines: Array<Record<string, any>>) => lines.some((line) => line.event === 'swept' && String(line.folder).endsWith(`/${pid}`)));
    const ended = await finished(run.test_run_id);
    const [only] = await tries(run.test_run_id);
    expect(only).to.deep.include({ status: 'passed', infra_retries: 1, runner_id: rescue.runnerId });
    expect(only.check).to.include({ exit_code: 0, stdout: 'user\n' });
    expect(ended.summary.tries).to.include({ total: 1, passed: 1 });
  });
});
