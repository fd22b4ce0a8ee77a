import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { ReferenceRunner } from '../../shared/simulator/runner/reference-runner';
import { progressLine, summaryTable } from '../../bin/evals-run-output';
import type { TestRun } from '../../bin/evals-run-follow';
import { startTestService, waitFor, type TestService } from '../support/service';

const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
/** A purchase asks for an approval nobody gives (operator `none`, no customer): the try waits until the run is cancelled. */
const WAITS_FOR_APPROVAL = 'open Browser\ngo shop.example.com\nclick "Buy now"\ndone "Bought"';

/**
 * `npx deskhand evals run` as a child process against a real service (web, worker-agent,
 * worker-evals, the scripted model) with a reference runner whose machines start at once.
 */
describe('npx deskhand evals run (a child process)', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  let runner: ReferenceRunner;
  let dataDir: string;
  let setId: string;
  let caseIds: { passes: string; fails: string; waits: string };

  const api = (method: string, pathname: string, body?: unknown) => service.api(key, method, pathname, body);
  const runs = async () => (await api('GET', '/v1/test_runs?limit=100')).body.data as TestRun[];

  /** Starts `deskhand evals ...args`; `done` is its exit code and output once it exits. */
  function start(args: string[], env: Record<string, string> = { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: service.baseUrl }) {
    const { DESKHAND_API_KEY: _key, DESKHAND_BASE_URL: _url, ...inherited } = process.env;
    const child: ChildProcess = spawn(process.execPath, [bin, 'evals', ...args], { env: { ...inherited, LOG_LEVEL: 'silent', ...env } });
    const output = { stdout: '', stderr: '' };
    child.stdout!.on('data', (chunk: Buffer) => (output.stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (output.stderr += chunk.toString()));
    const done = once(child, 'exit').then(([code]) => ({ code: code as number, ...output }));
    return { child, output, done };
  }
  const evals = (args: string[], env?: Record<string, string>) => start(args, env).done;
  const jsonLines = (stdout: string) => stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line) as Record<string, any>);

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' }, ['web', 'worker-agent', 'worker-evals']);
    ({ key } = await service.newOrg('Evals run CLI org'));
    const created = (await api('POST', '/v1/runners', { name: 'cli rack' })).body as { runner_id: string; token: string };
    dataDir = mkdtempSync(path.join(tmpdir(), 'deskhand-evals-run-cli-'));
    runner = new ReferenceRunner({ token: created.token, baseUrl: service.baseUrl, name: 'cli rack', slots: 4, labels: [], images: ['macos-15'], dataDir, bootMs: 0, version: '1.0.0', out: () => undefined });
    runner.start();
    await waitFor(async () => (await api('GET', `/v1/runners/${created.runner_id}`)).body.status === 'online', 20_000, 'the runner online');
    const set = (await api('POST', '/v1/test_sets', { name: 'cli set', cases: [] })).body as { test_set_id: string };
    setId = set.test_set_id;
    const save = 'open Notes\ntype "Hello"\nkey cmd+s\ndone "Saved Hello"';
    const batch = (cases: unknown[], testSetId?: string) => api('POST', '/v1/test_cases/batch', { cases, ...(testSetId ? { test_set_id: testSetId } : {}) });
    const inSet = (await batch(
      [
        { key: 'passes', name: 'passes', prompt: save, start_state: 'macos-15', success: { check_script: 'grep -q Hello $HOME/Documents/Untitled.txt' } },
        { key: 'fails', name: 'fails', prompt: save, start_state: 'macos-15', success: { check_script: 'test -f $HOME/Documents/missing.txt' } },
      ],
      setId,
    )).body.data as Array<{ test_case_id: string }>;
    const waits = (await batch([{ key: 'waits', name: 'waits', prompt: WAITS_FOR_APPROVAL, start_state: 'macos-15', success: { check_script: 'true' } }])).body.data as Array<{ test_case_id: string }>;
    caseIds = { passes: inSet[0]!.test_case_id, fails: inSet[1]!.test_case_id, waits: waits[0]!.test_case_id };
  });
  after(async () => {
    // Runs left going (the Ctrl+C test's) are cancelled so the runner can stop cleanly.
    for (const run of (await runs().catch(() => [])) ?? []) if (run.status === 'queued' || run.status === 'running') await api('POST', `/v1/test_runs/${run.test_run_id}/cancel`);
    await runner?.stop();
    await service?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('without --wait queues the run and prints it as JSON, exit 0', async () => {
    const result = await evals(['run', '--cases', `${caseIds.passes},${caseIds.fails}`, '--repeat', '2', '--metadata', 'commit=abc123', 'ci=yes']);
    expect(result.code, result.stderr).to.equal(0);
    const printed = JSON.parse(result.stdout) as TestRun;
    expect(printed).to.include({ object: 'test_run', status: 'queued', case_count: 2, repeat: 2, test_set_id: null });
    expect(printed.metadata).to.deep.equal({ commit: 'abc123', ci: 'yes' });
    expect((await api('GET', `/v1/test_runs/${printed.test_run_id}`)).status).to.equal(200);
    // The run was queued for real; cancelled here so the next tests have the runner's slots to themselves.
    expect((await api('POST', `/v1/test_runs/${printed.test_run_id}/cancel`)).status).to.be.oneOf([200, 409]);
  });

  it('--wait prints one JSON line per change of the counts, then the summary, exit 0 at or above --min-pass-rate', async () => {
    const result = await evals(['run', '--set', setId, '--wait', '--min-pass-rate', '0.5']);
    expect(result.code, result.stderr).to.equal(0);
    const lines = jsonLines(result.stdout);
    const progress = lines.slice(0, -1);
    expect(progress.length).to.be.greaterThan(0);
    expect(progress.every((line) => line.event === 'progress')).to.equal(true);
    expect(progress[0]).to.include({ status: 'queued', done: 0 });
    // Each progress line is a change: no two consecutive lines repeat the same counts.
    for (let i = 1; i < progress.length; i += 1) expect(JSON.stringify([progress[i]!.status, progress[i]!.tries])).to.not.equal(JSON.stringify([progress[i - 1]!.status, progress[i - 1]!.tries]));
    const summary = lines.at(-1)!;
    expect(summary).to.deep.include({ event: 'summary', status: 'completed', pass_rate: 0.5 });
    expect(summary.tries).to.include({ total: 2, passed: 1, failed: 1, error: 0 });
    expect(summary.cases).to.deep.equal([
      { test_case_id: caseIds.passes, key: 'passes', passed: 1, scored: 1, tries: 1, pass_rate: 1, pass_at_k: 1, pass_hat_k: 1, flaky: false },
      { test_case_id: caseIds.fails, key: 'fails', passed: 0, scored: 1, tries: 1, pass_rate: 0, pass_at_k: 0, pass_hat_k: 0, flaky: false },
    ]);
    // What it printed is what the service holds.
    expect((await api('GET', `/v1/test_runs/${summary.test_run_id}`)).body.summary.pass_rate).to.equal(0.5);
  });

  it('--min-pass-rate above the achieved rate exits 3 with a stderr line, after the summary', async () => {
    const result = await evals(['run', '--set', setId, '--wait', '--min-pass-rate', '0.9']);
    expect(result.code, result.stderr).to.equal(3);
    expect(jsonLines(result.stdout).at(-1)).to.deep.include({ event: 'summary', status: 'completed', pass_rate: 0.5 });
    expect(result.stderr).to.contain('pass rate 0.5 is below --min-pass-rate 0.9');
  });

  it('a cancelled run exits 4', async () => {
    const waiting = start(['run', '--cases', caseIds.waits, '--wait']);
    const runId = await waitFor(() => jsonLines(waiting.output.stdout).find((line) => line.event === 'progress' && line.tries.running > 0)?.test_run_id as string | undefined, 30_000, 'a try running');
    expect((await api('POST', `/v1/test_runs/${runId}/cancel`)).status).to.equal(200);
    const result = await waiting.done;
    expect(result.code, result.stderr).to.equal(4);
    expect(jsonLines(result.stdout).at(-1)).to.deep.include({ event: 'summary', status: 'cancelled' });
    expect(result.stderr).to.contain(`${runId} was cancelled`);
  });

  it('Ctrl+C stops the waiting, not the run, and says how to follow it', async () => {
    const waiting = start(['run', '--cases', caseIds.waits, '--wait']);
    const runId = await waitFor(() => jsonLines(waiting.output.stdout)[0]?.test_run_id as string | undefined, 30_000, 'the first progress line');
    waiting.child.kill('SIGINT');
    const result = await waiting.done;
    expect(result.code).to.equal(130);
    expect(result.stderr).to.contain(`stopped waiting; ${runId} goes on (not cancelled)`).and.to.contain(`${service.baseUrl}/v1/test_runs/${runId}`);
    expect((await api('GET', `/v1/test_runs/${runId}`)).body.status).to.be.oneOf(['queued', 'running']);
    expect((await api('POST', `/v1/test_runs/${runId}/cancel`)).status).to.equal(200);
  });

  it('a set that does not exist exits 1 with the service\'s message, nothing queued', async () => {
    const before = (await runs()).length;
    const result = await evals(['run', '--set', 'ts_missing', '--wait']);
    expect(result.code).to.equal(1);
    expect(result.stdout).to.equal('');
    expect(result.stderr).to.contain('no test set ts_missing').and.to.contain('(400)');
    expect((await runs()).length).to.equal(before);
  });

  it('an unreachable service exits 1 with a line naming DESKHAND_BASE_URL', async () => {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    server.close();
    const result = await evals(['run', '--set', setId], { DESKHAND_API_KEY: key, DESKHAND_BASE_URL: `http://127.0.0.1:${port}` });
    expect(result.code).to.equal(1);
    expect(result.stderr).to.contain(`cannot reach http://127.0.0.1:${port} (DESKHAND_BASE_URL)`);
  });

  it('bad options exit 2 with commander\'s message and queue nothing', async () => {
    const before = (await runs()).length;
    const cases: Array<[string[], string]> = [
      [['run'], 'one of --set <test_set_id> or --cases <ids> is required'],
      [['run', '--set', setId, '--cases', caseIds.passes], 'cannot be used with'],
      [['run', '--set', setId, '--repeat', '0'], '--repeat takes a whole number from 1 to 20'],
      [['run', '--set', setId, '--wait', '--min-pass-rate', '1.5'], '--min-pass-rate takes a number from 0 to 1'],
      [['run', '--set', setId, '--min-pass-rate', '0.9'], '--min-pass-rate needs --wait'],
      [['run', '--set', setId, '--version', 'latest'], '--version takes a version number'],
      [['run', '--set', setId, '--bogus'], "unknown option '--bogus'"],
    ];
    const results = await Promise.all(cases.map(([args]) => evals(args)));
    for (const [i, [args, message]] of cases.entries()) {
      const result = results[i]!;
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).to.equal(2);
      expect(result.stderr).to.contain(message);
      expect(result.stdout).to.equal('');
    }
    expect((await runs()).length).to.equal(before);
  });

  it('on a terminal: a progress bar and a table of the cases', () => {
    const run = {
      test_run_id: 'tr_1',
      status: 'running',
      summary: { tries: { total: 40, queued: 28, running: 0, passed: 9, failed: 2, error: 1, cancelled: 0 }, pass_rate: 0.82, cases: [] },
    } as unknown as TestRun;
    expect(progressLine(run)).to.equal('[######--------------] 12/40 tries · 9 passed · 2 failed · 1 error');
    const ended = {
      ...run,
      status: 'completed',
      summary: {
        tries: { total: 4, queued: 0, running: 0, passed: 2, failed: 1, error: 1, cancelled: 0 },
        pass_rate: 0.67,
        cases: [
          { test_case_id: 'tc_1', key: 'rename-report', passed: 2, scored: 2, tries: 2, pass_rate: 1, pass_at_k: 1, pass_hat_k: 1, flaky: false },
          { test_case_id: 'tc_2', key: null, passed: 0, scored: 1, tries: 2, pass_rate: 0, pass_at_k: null, pass_hat_k: null, flaky: false },
        ],
      },
    } as unknown as TestRun;
    expect(summaryTable(ended).split('\n')).to.deep.equal([
      'case           passed  pass@k  pass^k  flaky',
      'rename-report  2/2     1.00    1.00',
      'tc_2           0/1     -       -',
      '',
      'tr_1 completed: pass rate 0.67 (2 of 3 scored tries passed; 1 error, 0 cancelled)',
    ]);
  });
});
