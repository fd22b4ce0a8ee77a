import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { scriptedJudge, type RubricJudgeInput } from '../../shared/evals';
import { CHECK_PRINTED_NOTHING } from '../../shared/test-runs/try-flow';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';

/**
 * Test runs end to end with reference runners as processes and the scripted agent, customer and
 * judge: each scoring path, the customer answering from facts and typing a secret, the
 * operator's policy, a setup failure, repeat and its figures, cancel, fairness, a runner killed
 * mid-try, the start state version fixed at creation, and compare.
 */
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
const ENV = { DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RUNNER_HEARTBEAT_MS: '300', DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500' };
const SAVE_NOTE = (text: string) => `open Notes\ntype "${text}"\nkey cmd+s\ndone "Saved ${text}"`;

/**
 * Whether the running try whose task had `prompt` has its row locked now (a second connection
 * tries to lock it without waiting), and its phase when it is not.
 */
async function tryRowNow(prompt: string): Promise<{ locked: boolean; phase?: string }> {
  const client = new pg.Client({ connectionString: testEnv().DATABASE_URL });
  await client.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query("select t.phase from tries t join tasks k on k.id = t.task_id where k.prompt = $1 and t.status = 'running' for update of t nowait", [prompt]);
    return { locked: false, phase: rows[0]?.phase };
  } catch (error) {
    if ((error as { code?: string }).code === '55P03') return { locked: true };
    throw error;
  } finally {
    await client.query('rollback').catch(() => undefined);
    await client.end();
  }
}

interface RunnerProcess {
  child: ChildProcessWithoutNullStreams;
  exited: Promise<number | null>;
  lines(): Array<Record<string, any>>;
}

describe('test runs with reference runners (processes)', function () {
  this.timeout(120_000);
  let service: TestService;
  let key: string;
  const children: RunnerProcess[] = [];
  const dataDirs: string[] = [];

  const api = (method: string, pathname: string, body?: unknown) => service.api(key, method, pathname, body);
  const ok = async (method: string, pathname: string, body?: unknown) => {
    const response = await api(method, pathname, body);
    expect(response.status, `${method} ${pathname}: ${JSON.stringify(response.body)}`).to.equal(200);
    return response.body;
  };
  const finished = (runId: string, ms = 60_000) =>
    waitFor(async () => {
      const run = (await api('GET', `/v1/test_runs/${runId}`)).body;
      return run.status === 'completed' || run.status === 'cancelled' ? run : null;
    }, ms, `run ${runId} to end`);
  const tries = async (runId: string) => (await api('GET', `/v1/test_runs/${runId}/tries?limit=100`)).body.data as Array<Record<string, any>>;

  async function startRunner(name: string, ...args: string[]) {
    const created = await ok('POST', '/v1/runners', { name });
    const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-e2e-runs-'));
    dataDirs.push(dataDir);
    const child = spawn(process.execPath, [bin, 'runner', '--token', created.token, '--base-url', service.baseUrl, '--data-dir', dataDir, '--name', name, ...args], { env: { ...process.env, ...testEnv() } });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', () => undefined);
    const runner: RunnerProcess = { child, exited: once(child, 'exit').then(([code]) => code as number | null), lines: () => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)) };
    children.push(runner);
    await waitFor(async () => (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online', 20_000, `${name} online`);
    return { runnerId: created.runner_id as string, process: runner, dataDir };
  }

  const batch = async (cases: Array<Record<string, unknown>>, testSetId?: string) => (await ok('POST', '/v1/test_cases/batch', { cases, ...(testSetId ? { test_set_id: testSetId } : {}) })).data as Array<{ test_case_id: string; key: string }>;
  const caseIds = (cases: Array<{ test_case_id: string }>) => cases.map((item) => item.test_case_id);

  /** The scripted judge; for a rubric marked "[probe]" it first looks whether the try's row is locked. */
  const whileJudged: Array<{ locked: boolean; phase?: string }> = [];
  const probingJudge = {
    async judge(input: RubricJudgeInput) {
      if (input.rubric.includes('[probe]')) whileJudged.push(await tryRowNow(input.prompt));
      return scriptedJudge.judge(input);
    },
  };

  before(async () => {
    service = await startTestService(ENV, ['web', 'worker-agent', 'worker-evals', 'worker-clock'], { judge: probingJudge });
    ({ key } = await service.newOrg('Test runs e2e'));
  });
  after(async () => {
    for (const runner of children) if (runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    await Promise.all(children.map((runner) => runner.exited));
    await service?.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('on one runner with four slots', () => {
    before(async () => {
      await startRunner('runs rack', '--slots', '4', '--images', 'macos-15,windows-11');
    });

    it('scores each way: a check that passes or fails, a rubric that passes or fails, both; a setup failure is an error, not a failure', async () => {
      const cases = await batch([
        { key: 'check-passes', name: 'check passes', prompt: SAVE_NOTE('Hello'), start_state: 'macos-15', success: { check_script: 'grep -q Hello $HOME/Documents/Untitled.txt' } },
        { key: 'check-fails', name: 'check fails', prompt: SAVE_NOTE('Hello'), start_state: 'macos-15', success: { check_script: 'test -f $HOME/Documents/missing.txt' } },
        { key: 'rubric-passes', name: 'rubric passes', prompt: SAVE_NOTE('Hello'), start_state: 'windows-11', success: { rubric: 'The result says "Saved Hello"\nIt was polite' } },
        { key: 'rubric-fails', name: 'rubric fails', prompt: SAVE_NOTE('Hello'), start_state: 'macos-15', success: { rubric: 'It did not say "Saved"' } },
        { key: 'both', name: 'check passes, rubric fails', prompt: SAVE_NOTE('Hello'), start_state: 'macos-15', success: { check_script: 'grep -q Hello $HOME/Documents/Untitled.txt', rubric: '"Goodbye"' } },
        { key: 'setup-fails', name: 'setup fails', prompt: SAVE_NOTE('Hello'), start_state: 'macos-15', setup_script: 'echo preparing; exit 2', success: { check_script: 'true' } },
      ]);
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases) });
      expect(run).to.include({ status: 'queued', case_count: 6, draft: false });
      const ended = await finished(run.test_run_id);
      expect(ended.status).to.equal('completed');
      const byKey = new Map((await tries(run.test_run_id)).map((item) => [item.key, item]));
      expect(byKey.get('check-passes')).to.deep.include({ status: 'passed', check: { exit_code: 0, output: CHECK_PRINTED_NOTHING, stdout: '', stderr: '' } });
      expect(byKey.get('check-fails')!.status).to.equal('failed');
      expect(byKey.get('check-fails')!.check.exit_code).to.equal(1);
      expect(byKey.get('rubric-passes')!.status).to.equal('passed');
      expect(byKey.get('rubric-passes')!.rubric.criteria.map((c: { passed: boolean }) => c.passed)).to.deep.equal([true, true]);
      expect(byKey.get('rubric-passes')!.rubric.judge_model).to.equal('scripted');
      expect(byKey.get('rubric-fails')!.status).to.equal('failed');
      expect(byKey.get('both')).to.deep.include({ status: 'failed' });
      expect(byKey.get('both')!.check.exit_code).to.equal(0);
      expect(byKey.get('both')!.rubric.passed).to.equal(false);
      const setup = byKey.get('setup-fails')!;
      expect(setup).to.deep.include({ status: 'error', infra_retries: 2 });
      expect(setup.error).to.contain('setup script failed (exit status 2)').and.to.contain('preparing');
      // Every scored try links to its task, which can be read (and replayed from its recording).
      const task = (await api('GET', `/v1/tasks/${byKey.get('check-passes')!.task_id}`)).body;
      expect(task).to.include({ status: 'completed', result: 'Saved Hello' });
      expect(ended.summary.tries).to.include({ total: 6, passed: 2, failed: 3, error: 1 });
      expect(ended.summary.pass_rate).to.equal(0.4);
    });

    it('keeps what a check printed on stdout and on stderr, and says so when it printed nothing', async () => {
      const cases = await batch([
        // just-bash's grep -q prints nothing, even for a missing file (exit 2).
        { key: 'quiet-check', name: 'a quiet check', prompt: 'done "ok"', start_state: 'macos-15', success: { check_script: 'grep -q Hello $HOME/Documents/missing.txt' } },
        { key: 'loud-check', name: 'a check that says why', prompt: 'done "ok"', start_state: 'macos-15', success: { check_script: 'echo looked; echo "no Hello in missing.txt" >&2; exit 1' } },
      ]);
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases) });
      await finished(run.test_run_id);
      const byKey = new Map((await tries(run.test_run_id)).map((item) => [item.key, item]));
      expect(byKey.get('quiet-check')).to.deep.include({ status: 'failed', error: null, check: { exit_code: 2, output: CHECK_PRINTED_NOTHING, stdout: '', stderr: '' } });
      expect(byKey.get('loud-check')).to.deep.include({
        status: 'failed',
        check: { exit_code: 1, output: 'looked\nno Hello in missing.txt\n', stdout: 'looked\n', stderr: 'no Hello in missing.txt\n' },
      });
    });

    it('the customer answers from its facts and types a secret into the focused field; the operator approves, denies, or leaves it to the customer', async () => {
      const purchase = 'open Browser\ngo shop.example.com\nclick "Buy now"\ndone "Bought"';
      const bought = 'grep -q purchased /var/log/deskhand/effects.jsonl';
      const cases = await batch([
        {
          key: 'answers',
          name: 'answers from facts',
          prompt: 'ask "What is your email address?"\nopen Notes\ntype "{answer}"\nkey cmd+s\ndone "Noted {answer}"',
          start_state: 'macos-15',
          customer: { persona: 'Ann', facts: { email: 'ann@example.com', password: { secret: 'hunter2' } } },
          success: { check_script: 'grep -q ann@example.com $HOME/Documents/Untitled.txt', rubric: '"Noted ann@example.com"' },
        },
        {
          key: 'secret',
          name: 'types a secret',
          prompt: 'open Notes\nask "Please type your password into the note"\nkey cmd+s\ndone "Stored"',
          start_state: 'macos-15',
          customer: { facts: { password: { secret: 'hunter2' } } },
          success: { check_script: 'grep -q hunter2 $HOME/Documents/Untitled.txt' },
        },
        { key: 'approve', name: 'operator approves', prompt: purchase, start_state: 'macos-15', operator: { approvals: 'approve' }, success: { check_script: bought } },
        { key: 'deny', name: 'operator denies', prompt: purchase, start_state: 'macos-15', operator: { approvals: 'deny' }, success: { check_script: bought } },
        { key: 'customer-approves', name: 'the customer approves', prompt: purchase, start_state: 'macos-15', operator: { approvals: 'none' }, customer: { clicks_admin_prompts: true }, success: { check_script: bought } },
      ]);
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases) });
      await finished(run.test_run_id);
      const byKey = new Map((await tries(run.test_run_id)).map((item) => [item.key, item]));
      expect(byKey.get('answers')!.status, JSON.stringify(byKey.get('answers'))).to.equal('passed');
      expect(byKey.get('secret')!.status, JSON.stringify(byKey.get('secret'))).to.equal('passed');
      // The secret went to the machine, never into the task's events.
      const events = (await api('GET', `/v1/tasks/${byKey.get('secret')!.task_id}/events?after=0&limit=100`)).body;
      expect(JSON.stringify(events)).to.not.contain('hunter2');
      expect(byKey.get('approve')!.status).to.equal('passed');
      expect(byKey.get('deny')!.status).to.equal('failed');
      expect(byKey.get('customer-approves')!.status).to.equal('passed');
    });

    it('repeat gives each case that many tries, with pass@k and pass^k; a set\'s order and repeat hold', async () => {
      const set = await ok('POST', '/v1/test_sets', { name: 'repeat set', repeat: 3, cases: [] });
      const cases = await batch(
        [
          { key: 'always', name: 'always passes', prompt: SAVE_NOTE('A'), start_state: 'macos-15', success: { check_script: 'true' } },
          { key: 'never', name: 'never passes', prompt: SAVE_NOTE('B'), start_state: 'macos-15', success: { check_script: 'false' } },
        ],
        set.test_set_id,
      );
      expect(cases).to.have.length(2);
      const run = await ok('POST', '/v1/test_runs', { test_set_id: set.test_set_id });
      const ended = await finished(run.test_run_id);
      expect(ended.summary.tries).to.include({ total: 6, passed: 3, failed: 3 });
      const [always, never] = ended.summary.cases;
      expect(always).to.deep.include({ key: 'always', tries: 3, passed: 3, pass_rate: 1, pass_at_k: 1, pass_hat_k: 1, flaky: false });
      expect(never).to.deep.include({ key: 'never', tries: 3, passed: 0, pass_rate: 0, pass_at_k: 0, pass_hat_k: 0, flaky: false });
      expect((await tries(run.test_run_id)).map((item) => item.attempt).sort()).to.deep.equal([1, 1, 2, 2, 3, 3]);
    });

    it('asks the judge with no transaction open: the try\'s row is not locked while a (possibly slow) judge reads, and phase reads judge meanwhile', async () => {
      const prompt = SAVE_NOTE('Probe');
      const cases = await batch([{ key: 'judged-unlocked', name: 'judged unlocked', prompt, start_state: 'macos-15', success: { check_script: 'grep -q Probe $HOME/Documents/Untitled.txt', rubric: '"Saved Probe" [probe]' } }]);
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases) });
      const ended = await finished(run.test_run_id);
      expect(ended.summary.tries.passed).to.equal(1);
      expect(whileJudged).to.deep.equal([{ locked: false, phase: 'judge' }]);
      const [only] = await tries(run.test_run_id);
      expect(only).to.deep.include({ status: 'passed', phase: 'done' });
      expect(only.check.exit_code).to.equal(0);
      expect(only.rubric.passed).to.equal(true);
    });

    it('cancel stops a running try (its task stopped, its machine let go) and skips the queued ones', async () => {
      // Nobody answers this approval: the try waits until the run is cancelled.
      const cases = await batch([{ key: 'waits', name: 'waits for an approval', prompt: 'open Browser\ngo shop.example.com\nclick "Buy now"\ndone "Bought"', start_state: 'macos-15', success: { check_script: 'true' } }]);
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases), repeat: 6 });
      await waitFor(async () => (await tries(run.test_run_id)).some((item) => item.status === 'running' && item.task_id), 30_000, 'a try running its task');
      const waiting = (await tries(run.test_run_id)).find((item) => item.status === 'running' && item.task_id)!;
      await waitFor(async () => (await api('GET', `/v1/tasks/${waiting.task_id}`)).body.pending, 20_000, 'the approval open');
      const cancelled = await ok('POST', `/v1/test_runs/${run.test_run_id}/cancel`);
      expect(cancelled.status).to.equal('cancelled');
      await waitFor(async () => (await tries(run.test_run_id)).every((item) => item.status === 'cancelled'), 20_000, 'every try cancelled');
      await waitFor(async () => (await api('GET', `/v1/tasks/${waiting.task_id}`)).body.status === 'stopped', 20_000, 'its task stopped');
      expect((await api('POST', `/v1/test_runs/${run.test_run_id}/cancel`)).status).to.equal(409);
    });
  });

  it('never exceeds a runner\'s slots, and a run started later gets its turn before a large one ends', async () => {
    const { process, runnerId } = await startRunner('one slot', '--slots', '1', '--images', 'macos-fair');
    const [big, small] = await Promise.all([
      batch([{ key: 'big', name: 'big', prompt: 'sleep 1\ndone "ok"', start_state: 'macos-fair', success: { check_script: 'true' } }]),
      batch([{ key: 'small', name: 'small', prompt: 'done "ok"', start_state: 'macos-fair', success: { check_script: 'true' } }]),
    ]);
    const large = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(big), repeat: 6 });
    await waitFor(async () => (await tries(large.test_run_id)).some((item) => item.status === 'running'), 20_000, 'the large run started');
    const later = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(small), repeat: 1 });
    const smallDone = await finished(later.test_run_id);
    const largeNow = (await api('GET', `/v1/test_runs/${large.test_run_id}`)).body;
    expect(largeNow.status, 'the large run is still going when the small one ends').to.equal('running');
    expect(smallDone.summary.tries.passed).to.equal(1);
    await finished(large.test_run_id);
    let live = 0;
    let most = 0;
    for (const line of process.lines()) {
      if (line.event === 'machine_made') live += 1;
      if (line.event === 'destroyed' && line.existed !== false) live -= 1;
      most = Math.max(most, live);
    }
    expect(most).to.equal(1);
    // The slot went from each try's machine straight to the next try's: the next make was
    // recorded by the transaction that settled the destroy before it (one `now()`), the slot
    // never idle while a try waited.
    const made = await service.running.container
      .db('machines as m')
      .join('runner_commands as c', (join) => join.on('c.machine_id', '=', 'm.id').andOnVal('c.type', '=', 'machine.make'))
      .where('m.runner_id', runnerId)
      .orderBy('m.seq')
      .select('m.ended_at', 'c.sent_at');
    expect(made).to.have.length(7);
    for (let i = 1; i < made.length; i++) expect(made[i].sent_at.getTime(), `machine ${i + 1}'s make`).to.equal(made[i - 1].ended_at.getTime());
  });

  it('a runner killed (kill -9) mid-try: the try runs again on another runner, counted as an infrastructure retry', async () => {
    const doomed = await startRunner('doomed', '--images', 'macos-kill-try');
    const cases = await batch([{ key: 'survives', name: 'survives', prompt: 'sleep 4\ndone "ok"', start_state: 'macos-kill-try', success: { rubric: '"ok"' } }]);
    const run = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases) });
    await waitFor(async () => (await tries(run.test_run_id)).some((item) => item.task_id), 20_000, 'the try\'s task started');
    doomed.process.child.kill('SIGKILL');
    await doomed.process.exited;
    const rescue = await startRunner('rescue', '--images', 'macos-kill-try');
    const ended = await finished(run.test_run_id);
    const [only] = await tries(run.test_run_id);
    expect(only).to.deep.include({ status: 'passed', infra_retries: 1, runner_id: rescue.runnerId });
    expect(ended.summary.tries).to.include({ total: 1, passed: 1 });
  });

  it('fixes each case\'s start state version at creation, and compares two runs of two agent versions case by case', async () => {
    await startRunner('versions', '--images', 'macos-versions', '--slots', '2');
    const built = await ok('POST', '/v1/start_states', { name: 'v1', from: 'macos-versions', method: 'script', script: 'echo one > $HOME/Documents/version.txt' });
    await waitFor(async () => (await api('GET', `/v1/start_states/${built.start_state_id}`)).body.status === 'ready', 20_000, 'v1 ready');
    const cases = await batch([
      { key: 'reads-version', name: 'reads the version', prompt: SAVE_NOTE('x'), start_state: built.start_state_id, success: { check_script: 'grep -q one $HOME/Documents/version.txt && grep -q x $HOME/Documents/Untitled.txt' } },
      { key: 'uses-notes', name: 'uses Notes', prompt: SAVE_NOTE('y'), start_state: 'macos-versions', success: { check_script: 'grep -q y $HOME/Documents/Untitled.txt' } },
    ]);
    // An agent of this test's own: the others run the default agent, which this one does not change.
    await ok('POST', '/v1/agents', { agent_id: 'compared' });
    const baseline = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases), agent_id: 'compared' });
    // Saved again (version 2, without the file) after the run was created: the run still uses version 1.
    await ok('POST', `/v1/start_states/${built.start_state_id}/open`);
    await waitFor(async () => (await api('GET', `/v1/runners`)).body.data.some((r: { name: string; busy: number }) => r.name === 'versions' && r.busy > 0), 20_000, 'the state open');
    await ok('POST', `/v1/start_states/${built.start_state_id}/save`);
    await waitFor(async () => (await api('GET', `/v1/start_states/${built.start_state_id}`)).body.version === 2, 20_000, 'v2 saved');
    const first = await finished(baseline.test_run_id);
    expect(first.summary.tries.passed).to.equal(2);
    expect((await tries(baseline.test_run_id)).find((item) => item.key === 'reads-version')!.start_state).to.deep.equal({ start_state_id: built.start_state_id, version: 1 });

    // A new agent version that may not type in Notes (TextEdit on a Mac): it never saves the note, so both cases regress.
    await ok('PATCH', '/v1/agents/compared', { guardrails: { apps: { block: ['TextEdit'] } } });
    const current = await ok('POST', '/v1/test_runs', { test_case_ids: caseIds(cases), agent_id: 'compared' });
    await finished(current.test_run_id);
    const comparison = await ok('GET', `/v1/test_runs/${current.test_run_id}/compare?with=${baseline.test_run_id}`);
    const labels = Object.fromEntries(comparison.cases.map((item: { key: string; label: string }) => [item.key, item.label]));
    expect(labels).to.deep.equal({ 'reads-version': 'regressed', 'uses-notes': 'regressed' });
    expect(comparison.totals).to.deep.equal({ regressed: 2, improved: 0, unchanged: 0, flaky: 0 });
    expect(current.agent_version).to.be.greaterThan(baseline.agent_version);
  });
});
