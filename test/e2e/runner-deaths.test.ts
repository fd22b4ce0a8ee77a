import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { scriptedJudge, type RubricJudgeInput } from '../../shared/evals';
import { CHECK_PRINTED_NOTHING } from '../../shared/test-runs/try-flow';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';

/**
 * A runner's death is an infrastructure error, never a failed try (docs/evals.md, "Infrastructure
 * failures"), with reference runners as processes: one killed (SIGKILL) while it holds a try at
 * each point (the setup script, before the task; the task; the check script; the judge reading;
 * the destroy of a try's machine), and three killed in a row while a try's machine boots. Each
 * try ends by its own result, on another runner as an infrastructure retry when it needed its
 * machine; three deaths make it `error` with a reason naming what happened.
 *
 * The reconnect grace (0.3 s) is shorter than the time a silent runner takes to count as lost
 * (2 s): a task on a killed runner fails for want of its computer before the runner's machines
 * are counted lost, the order that scored such a try `failed` with no error.
 */
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
const ENV = {
  DESKHAND_SCRIPTED_MODELS: '1',
  DESKHAND_RUNNER_HEARTBEAT_MS: '300',
  DESKHAND_RUNNER_OFFLINE_AFTER_MS: '2000',
  DESKHAND_RECONNECT_GRACE_MS: '300',
};

interface RunnerProcess {
  runnerId: string;
  child: ChildProcessWithoutNullStreams;
  exited: Promise<unknown>;
  lines(): Array<Record<string, any>>;
}

describe('a runner killed at each point of a try (reference runners as processes)', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  const children: RunnerProcess[] = [];
  const dataDirs: string[] = [];

  /** A judge that, for a rubric marked "[hold]", waits until the test lets it answer. */
  let holdJudge = false;
  let judgeAsked = 0;
  const holdingJudge = {
    async judge(input: RubricJudgeInput) {
      if (input.rubric.includes('[hold]')) {
        judgeAsked += 1;
        await waitFor(() => !holdJudge, 50_000, 'the held judge let go');
      }
      return scriptedJudge.judge(input);
    },
  };

  const api = (method: string, pathname: string, body?: unknown) => service.api(key, method, pathname, body);
  const ok = async (method: string, pathname: string, body?: unknown) => {
    const response = await api(method, pathname, body);
    expect(response.status, `${method} ${pathname}: ${JSON.stringify(response.body)}`).to.equal(200);
    return response.body;
  };
  const db = () => service.running.container.db;

  async function startRunner(name: string, ...args: string[]): Promise<RunnerProcess> {
    const created = await ok('POST', '/v1/runners', { name });
    const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-e2e-deaths-'));
    dataDirs.push(dataDir);
    const child = spawn(process.execPath, [bin, 'runner', '--token', created.token, '--base-url', service.baseUrl, '--data-dir', dataDir, '--name', name, ...args], { env: { ...process.env, ...testEnv() } });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', () => undefined);
    const runner: RunnerProcess = {
      runnerId: created.runner_id,
      child,
      exited: once(child, 'exit'),
      lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)),
    };
    children.push(runner);
    await waitFor(async () => (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online', 40_000, `${name} online`);
    return runner;
  }

  async function kill(runner: RunnerProcess): Promise<void> {
    runner.child.kill('SIGKILL');
    await runner.exited;
  }

  const triesOf = async (runId: string) => (await api('GET', `/v1/test_runs/${runId}/tries?limit=100`)).body.data as Array<Record<string, any>>;
  const finished = (runId: string) =>
    waitFor(async () => {
      const run = (await api('GET', `/v1/test_runs/${runId}`)).body;
      return run.status === 'completed' ? run : null;
    }, 60_000, `run ${runId} to complete`);
  /** The machines the try had, oldest first. */
  const machinesOf = (tryId: string) => db()('machines').where({ owner_kind: 'try', owner_id: tryId }).orderBy('seq').select('id', 'runner_id', 'status', 'error');
  const machineStatus = async (machineId: string) => (await db()('machines').where({ id: machineId }).first('status')).status as string;

  before(async () => {
    service = await startTestService(ENV, ['web', 'worker-agent', 'worker-evals', 'worker-clock'], { judge: holdingJudge });
    ({ key } = await service.newOrg('Runner deaths'));
  });
  after(async () => {
    holdJudge = false;
    for (const runner of children) if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    await Promise.all(children.map((runner) => runner.exited));
    await service?.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a runner killed with a try at each point (setup, task, check, judge, destroy): each ends by its own result, retried on the other runner only when it needed its machine', async () => {
    // One runner holds every try (six slots; its destroys take a minute, so one is caught
    // destroying), and is killed once each try is at its point; a second one starts then.
    const doomed = await startRunner('doomed', '--images', 'macos-deaths', '--slots', '6', '--destroy-ms', '60000');
    const cases = [
      { key: 'setup', prompt: 'done "ok"', setup_script: 'sleep 8; echo ready > $HOME/Documents/ready.txt', success: { check_script: 'test -f $HOME/Documents/ready.txt' } },
      // The case: a task that sleeps, a check that is `exit 0`.
      { key: 'task', prompt: 'sleep 8\ndone "ok"', success: { check_script: 'exit 0' } },
      { key: 'task-rubric', prompt: 'sleep 8\ndone "ok"', success: { rubric: 'The result says "ok"' } },
      { key: 'check', prompt: 'done "ok"', success: { check_script: 'sleep 8; echo checked' } },
      { key: 'judge', prompt: 'done "ok"', success: { check_script: 'exit 0', rubric: 'The result says "ok" [hold]' } },
      { key: 'destroy', prompt: 'done "ok"', success: { check_script: 'exit 0' } },
    ];
    const created = (await ok('POST', '/v1/test_cases/batch', { cases: cases.map((item) => ({ name: item.key, start_state: 'macos-deaths', ...item })) })).data as Array<{ test_case_id: string }>;
    holdJudge = true;
    const runId = (await ok('POST', '/v1/test_runs', { test_case_ids: created.map((item) => item.test_case_id) })).test_run_id;

    const reached: Record<string, (item: Record<string, any>) => Promise<boolean> | boolean> = {
      setup: (item) => item.phase === 'setup',
      task: async (item) => item.phase === 'task' && item.task_id && (await api('GET', `/v1/tasks/${item.task_id}`)).body.status === 'running',
      'task-rubric': async (item) => item.phase === 'task' && item.task_id && (await api('GET', `/v1/tasks/${item.task_id}`)).body.status === 'running',
      check: (item) => item.phase === 'check',
      judge: (item) => item.phase === 'judge' && judgeAsked > 0,
      destroy: async (item) => item.status === 'passed' && doomed.lines().some((line) => line.event === 'destroying' && line.machine_id === item.machine_id),
    };
    const at = await waitFor(async () => {
      const all = await triesOf(runId);
      for (const item of all) {
        expect(item.status, JSON.stringify(item)).to.be.oneOf(['queued', 'running', ...(item.key === 'destroy' ? ['passed'] : [])]);
        item.machine_id = (await machinesOf(item.try_id))[0]?.id;
      }
      for (const item of all) if (!(await reached[item.key]!(item))) return null;
      return new Map(all.map((item) => [item.key as string, item]));
    }, 40_000, 'every try at its point');
    expect([...at.values()].every((item) => item.runner_id === doomed.runnerId)).to.equal(true);

    const [rescue] = await Promise.all([startRunner('rescue', '--images', 'macos-deaths', '--slots', '6'), kill(doomed)]);

    // The judge's try: its machine is lost while the judge reads; the loss's notice (done here and
    // now, as its own job may still be queued) asks the judge again and moves nothing.
    const judged = at.get('judge')!;
    await waitFor(async () => ['failed', 'destroyed'].includes(await machineStatus(judged.machine_id)), 20_000, 'the judged try\'s machine lost');
    const advanced = service.running.container.tryFlow.advance(judged.try_id);
    await waitFor(async () => judgeAsked >= 2 || (await triesOf(runId)).find((item) => item.key === 'judge')!.phase !== 'judge', 20_000, 'the judged try advanced');
    expect((await triesOf(runId)).find((item) => item.key === 'judge')).to.deep.include({ status: 'running', phase: 'judge', infra_retries: 0 });
    holdJudge = false;
    await advanced;

    const run = await finished(runId);
    const ended = new Map((await triesOf(runId)).map((item) => [item.key as string, item]));
    for (const key of ['setup', 'task', 'task-rubric', 'check']) {
      expect(ended.get(key), key).to.deep.include({ status: 'passed', infra_retries: 1, runner_id: rescue.runnerId, error: null });
      const [lost, rescued] = await machinesOf(at.get(key)!.try_id);
      expect(lost!.status, `${key}: the doomed runner's machine`).to.be.oneOf(['failed', 'destroyed']);
      expect(rescued, key).to.deep.include({ runner_id: rescue.runnerId, status: 'destroyed' });
    }
    expect(ended.get('check')!.check).to.deep.equal({ exit_code: 0, output: 'checked\n', stdout: 'checked\n', stderr: '' });
    // The first task of a try retried during its task failed for want of its computer; it was not scored.
    for (const key of ['task', 'task-rubric']) expect((await api('GET', `/v1/tasks/${at.get(key)!.task_id}`)).body.status, key).to.be.oneOf(['failed', 'stopped']);
    expect(ended.get('judge')).to.deep.include({ status: 'passed', infra_retries: 0, runner_id: doomed.runnerId, error: null });
    expect(ended.get('judge')!.rubric.passed).to.equal(true);
    // The machine being destroyed counts as destroyed (its slot free), not as a failure; the result stands.
    expect(ended.get('destroy')).to.deep.include({ status: 'passed', infra_retries: 0, runner_id: doomed.runnerId, error: null });
    expect(await machineStatus(at.get('destroy')!.machine_id)).to.equal('destroyed');
    expect(run.summary.tries).to.include({ total: 6, passed: 6, failed: 0, error: 0 });
  });

  it('killed three times (each while the machine boots): after two infrastructure retries the try is `error`, with the reason', async () => {
    const runners = await Promise.all([0, 1, 2].map((n) => startRunner(`boot ${n}`, '--images', 'macos-death-boot', '--slots', '1', '--boot-ms', '60000')));
    const [created] = (await ok('POST', '/v1/test_cases/batch', { cases: [{ name: 'never boots', start_state: 'macos-death-boot', prompt: 'done "ok"', success: { check_script: 'exit 0' } }] })).data;
    const runId = (await ok('POST', '/v1/test_runs', { test_case_ids: [created.test_case_id] })).test_run_id;
    const killed: string[] = [];
    for (let death = 0; death < 3; death++) {
      const booting = await waitFor(async () => {
        const [item] = await triesOf(runId);
        if (item!.status !== 'running') return null;
        const machine = (await machinesOf(item!.try_id)).find((row: { runner_id: string | null; status: string }) => row.status === 'starting' && row.runner_id && !killed.includes(row.runner_id));
        return machine?.runner_id as string | undefined;
      }, 20_000, `the try's machine booting (death ${death + 1})`);
      await kill(runners.find((runner) => runner.runnerId === booting)!);
      killed.push(booting);
    }
    await finished(runId);
    const [ended] = await triesOf(runId);
    expect(ended).to.deep.include({ status: 'error', infra_retries: 2 });
    expect(ended!.error).to.match(new RegExp(`Runner ${killed[2]} went offline`)).and.to.contain('(after 2 retries)');
    expect((await api('GET', `/v1/test_runs/${runId}`)).body.summary.tries).to.include({ total: 1, error: 1, failed: 0 });
  });
});
