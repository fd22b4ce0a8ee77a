import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { testEnv } from '../support/environment';
import { startTestService, waitFor, type TestService } from '../support/service';
import { accessibilityProblems, addMember, consoleSession, launchChromium, signInWithLink } from '../support/console';

/**
 * The console's evals pages in Chromium, against test runs that really run: a reference runner
 * as a process and the scripted agent and judge (the set-up of test/e2e/test-runs.test.ts).
 */
const bin = path.join(__dirname, '..', '..', 'bin', 'deskhand.js');
const ENV = { DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RUNNER_HEARTBEAT_MS: '300', DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500' };

describe('the console\'s evals pages in a browser (Chromium)', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let orgId: string;
  let key: string;
  let runner: { child: ChildProcessWithoutNullStreams; exited: Promise<unknown> } | null = null;
  let dataDir = '';
  let setId: string;
  let flipId: string;
  let baselineRunId: string;
  let newRunId: string;

  const ok = async (method: string, pathname: string, body?: unknown) => {
    const response = await service.api(key, method, pathname, body);
    expect(response.status, `${method} ${pathname}: ${JSON.stringify(response.body)}`).to.equal(200);
    return response.body;
  };
  const finished = (runId: string) =>
    waitFor(async () => {
      const run = await ok('GET', `/v1/test_runs/${runId}`);
      return run.status === 'completed' || run.status === 'cancelled' ? run : null;
    }, 60_000, `run ${runId} to end`);
  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);

  /** A signed-in member of the org in a phone-sized window; axe needs the CSP bypassed. */
  async function memberPage(org = orgId): Promise<{ context: BrowserContext; page: Page; offsite: string[] }> {
    const member = await addMember(service, org, 'member');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    const page = await context.newPage();
    const offsite: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });
    await signInWithLink(page, member.signInUrl);
    return { context, page, offsite };
  }

  before(async () => {
    service = await startTestService(ENV, ['web', 'worker-agent', 'worker-evals', 'worker-clock']);
    ({ orgId, key } = await service.newOrg('Evals console org'));
    browser = await launchChromium();

    const created = await ok('POST', '/v1/runners', { name: 'evals console rack' });
    dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-console-evals-'));
    const child = spawn(process.execPath, [bin, 'runner', '--token', created.token, '--base-url', service.baseUrl, '--data-dir', dataDir, '--name', 'evals console rack', '--slots', '4', '--images', 'macos-15'], { env: { ...process.env, ...testEnv() } });
    child.stdout.on('data', () => undefined);
    child.stderr.on('data', () => undefined);
    runner = { child, exited: once(child, 'exit') };
    await waitFor(async () => (await ok('GET', `/v1/runners/${created.runner_id}`)).status === 'online', 20_000, 'the runner online');

    setId = (await ok('POST', '/v1/test_sets', { name: 'Console smoke', repeat: 2 })).test_set_id;
    const cases = (await ok('POST', '/v1/test_cases/batch', {
      test_set_id: setId,
      cases: [
        {
          key: 'save-note',
          name: 'Saves a note',
          prompt: 'open Notes\ntype "Hello"\nkey cmd+s\ndone "Saved Hello"',
          start_state: 'macos-15',
          success: { check_script: 'grep -q Hello $HOME/Documents/Untitled.txt', rubric: 'The result says "Saved Hello"' },
        },
        { key: 'flip', name: 'Passes, then fails', prompt: 'done "ok"', start_state: 'macos-15', success: { check_script: 'true' } },
      ],
    })).data as Array<{ test_case_id: string; key: string }>;
    flipId = cases.find((item) => item.key === 'flip')!.test_case_id;
    baselineRunId = (await ok('POST', '/v1/test_runs', { test_set_id: setId })).test_run_id;
    expect((await finished(baselineRunId)).summary.pass_rate).to.equal(1);
    // The next run fixes the case as it is then: its check now fails, so the case regresses.
    await ok('PATCH', `/v1/test_cases/${flipId}`, { success: { check_script: 'false' } });
    newRunId = (await ok('POST', '/v1/test_runs', { test_set_id: setId })).test_run_id;
    await finished(newRunId);
  });
  after(async () => {
    await browser?.close();
    if (runner && runner.child.exitCode === null && runner.child.signalCode === null) runner.child.kill('SIGKILL');
    await runner?.exited;
    await service?.stop();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('a member starts a run from the evals page; its page follows it to the end with its summary, cases and tries linking to their replays', async () => {
    const { context, page, offsite } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals`);
    const baselineRow = page.locator(`#runs-table tr[data-run="${baselineRunId}"]`);
    await baselineRow.waitFor();
    expect(await baselineRow.locator('td').nth(2).textContent()).to.equal('completed');
    expect(await baselineRow.locator('td').nth(4).textContent()).to.equal('Console smoke');
    expect(await baselineRow.locator('td').nth(5).textContent()).to.equal('4 of 4');
    expect(await baselineRow.locator('td').nth(6).textContent()).to.equal('100%');
    expect(await page.locator('#sets-table tbody').textContent()).to.contain('Console smoke');
    expect(await page.locator('#cases-table tbody').textContent()).to.contain('save-note').and.to.contain('flip');
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await scrollWidth(page), 'no sideways scrolling at 390 px').to.be.at.most(390);

    await page.getByLabel('Test set', { exact: true }).selectOption(setId);
    await page.getByRole('button', { name: 'Start run' }).click();
    const started = page.getByTestId('start-status').getByRole('link');
    await started.waitFor();
    const startedId = (await started.textContent())!;
    expect(startedId).to.match(/^tr_/);
    const [run] = (await ok('GET', `/v1/test_runs?test_set_id=${setId}`)).data;
    expect(run.test_run_id, 'the run the page started is the org\'s newest').to.equal(startedId);

    await started.click();
    await page.waitForURL(`${service.baseUrl}/console/evals/runs/${startedId}`);
    // The page reads the run again while it goes on, until it has ended.
    await page.getByTestId('run-status').filter({ hasText: 'completed' }).waitFor({ timeout: 60_000 });
    await page.locator('#tries-table tbody tr[data-try]').nth(3).waitFor();
    expect(await page.getByTestId('tries-done').textContent()).to.equal('4 of 4');
    expect(await page.getByTestId('pass-rate').textContent()).to.equal('50% (2 of 4 scored)');
    expect(await page.getByRole('button', { name: 'Cancel run' }).isHidden(), 'an ended run cannot be cancelled').to.equal(true);

    const caseCells = async (caseKey: string) => page.locator('#cases-table tbody tr').filter({ hasText: caseKey }).locator('td').allTextContents();
    const [saveTries, savePassed, saveRate, saveAtK, saveHatK, saveFlaky] = await caseCells('save-note');
    expect([saveTries, savePassed, saveRate, saveAtK, saveHatK, saveFlaky]).to.deep.equal(['2', '2 of 2', '100%', '100%', '100%', 'no']);
    expect((await caseCells('flip')).slice(0, 6)).to.deep.equal(['2', '0 of 2', '0%', '0%', '0%', 'no']);
    expect((await caseCells('save-note'))[6], 'the average time of its tries').to.match(/\d (ms|s)$/);

    // Each try links to its task's replay page, and shows its verdict with the judge's reasons.
    const tries = (await ok('GET', `/v1/test_runs/${startedId}/tries?limit=100`)).data as Array<{ try_id: string; task_id: string; key: string }>;
    expect(tries).to.have.length(4);
    for (const entry of tries) {
      const row = page.locator(`#tries-table tr[data-try="${entry.try_id}"]`);
      expect(await row.getByRole('link', { name: `Replay ${entry.task_id}` }).getAttribute('href')).to.equal(`/console/tasks/${entry.task_id}`);
    }
    const judged = page.locator(`#tries-table tr[data-try="${tries.find((entry) => entry.key === 'save-note')!.try_id}"]`);
    expect(await judged.textContent()).to.contain('Check: passed (exit 0)').and.to.contain('Rubric: passed (judge: scripted)').and.to.contain('"Saved Hello" was found in the result');
    const flipped = page.locator(`#tries-table tr[data-try="${tries.find((entry) => entry.key === 'flip')!.try_id}"]`);
    expect(await flipped.textContent()).to.contain('Check: failed (exit 1)');
    expect(await flipped.locator('.badge').textContent()).to.equal('failed');

    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await scrollWidth(page), 'no sideways scrolling at 390 px').to.be.at.most(390);

    // A try's link opens its task's page in the console.
    const replayed = tries.find((entry) => entry.key === 'save-note')!;
    await judged.getByRole('link', { name: `Replay ${replayed.task_id}` }).click();
    await page.waitForURL(`${service.baseUrl}/console/tasks/${replayed.task_id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal(`Task ${replayed.task_id}`);
    expect(offsite).to.deep.equal([]);
    await context.close();
  });

  it('two runs ticked in the list open side by side, case by case: what regressed and what did not', async () => {
    const { context, page } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals`);
    await page.getByRole('checkbox', { name: `Compare run ${newRunId}` }).check();
    await page.getByRole('checkbox', { name: `Compare run ${baselineRunId}` }).check();
    await page.getByRole('button', { name: 'Compare the two ticked runs' }).click();
    // The older run is the baseline (A).
    await page.waitForURL(`${service.baseUrl}/console/evals/compare?a=${baselineRunId}&b=${newRunId}`);

    expect(await page.getByTestId('side-A').getByRole('heading').textContent()).to.equal(`Baseline (A): ${baselineRunId}`);
    expect(await page.getByTestId('side-B').getByRole('heading').textContent()).to.equal(`New (B): ${newRunId}`);
    await page.getByTestId('compare-totals').filter({ hasText: 'regressed' }).waitFor();
    expect(await page.getByTestId('compare-totals').textContent()).to.equal('1 regressed, 0 improved, 0 flaky, 1 unchanged (pass rate 100% in A, 50% in B).');
    expect(await page.getByTestId('pass-rate-A').textContent()).to.equal('100%');
    expect(await page.getByTestId('pass-rate-B').textContent()).to.equal('50%');
    expect(await page.locator('#compare-table tr[data-case="flip"] td').allTextContents()).to.deep.equal(['100%', '0%', 'regressed']);
    expect(await page.locator('#compare-table tr[data-case="save-note"] td').allTextContents()).to.deep.equal(['100%', '100%', 'unchanged']);
    // The pickers hold the two runs, to change one and compare again.
    expect(await page.getByLabel('Baseline run (A)').inputValue()).to.equal(baselineRunId);
    expect(await page.getByLabel('New run (B)').inputValue()).to.equal(newRunId);
    expect(await page.getByTestId('side-A').textContent()).to.contain(`Console smoke (${setId})`);

    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await scrollWidth(page), 'no sideways scrolling at 390 px').to.be.at.most(390);

    // Opened without runs, the page offers the org's runs to pick from.
    await page.goto(`${service.baseUrl}/console/evals/compare`);
    await page.locator(`#compare-a option[value="${newRunId}"]`).waitFor({ state: 'attached' });
    expect(await page.getByTestId('side-A').count()).to.equal(0);
    await page.getByLabel('Baseline run (A)').selectOption(newRunId);
    await page.getByLabel('New run (B)').selectOption(baselineRunId);
    await page.getByRole('button', { name: 'Compare', exact: true }).click();
    await page.waitForURL(`${service.baseUrl}/console/evals/compare?a=${newRunId}&b=${baselineRunId}`);
    await page.locator('#compare-table tr[data-case="flip"]').waitFor();
    expect(await page.locator('#compare-table tr[data-case="flip"] td').allTextContents()).to.deep.equal(['0%', '100%', 'improved']);
    await context.close();
  });

  it('a run\'s page follows the run while it goes on, and a member cancels a run from its page', async () => {
    // Nobody answers this approval: each try waits until its run is cancelled.
    const [waits] = (await ok('POST', '/v1/test_cases/batch', {
      cases: [{ key: 'waits', name: 'Waits for an approval', prompt: 'open Browser\ngo shop.example.com\nclick "Buy now"\ndone "Bought"', start_state: 'macos-15', success: { check_script: 'true' } }],
    })).data;
    const followed = await ok('POST', '/v1/test_runs', { test_case_ids: [waits.test_case_id] });
    const { context, page } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals/runs/${followed.test_run_id}`);
    await page.locator('#tries-table tr[data-try]').waitFor();
    expect(await page.getByTestId('run-status').textContent()).to.be.oneOf(['queued', 'running']);
    // Cancelled elsewhere (here through the API), the open page shows it without being reloaded.
    await ok('POST', `/v1/test_runs/${followed.test_run_id}/cancel`);
    await page.getByTestId('run-status').filter({ hasText: 'cancelled' }).waitFor();
    await page.locator('#tries-table tr[data-try] .badge.cancelled').waitFor();
    expect(await page.locator('#run-live').textContent()).to.equal('The run is cancelled.');
    expect(await page.getByRole('button', { name: 'Cancel run' }).isHidden()).to.equal(true);

    const cancelled = await ok('POST', '/v1/test_runs', { test_case_ids: [waits.test_case_id] });
    await page.goto(`${service.baseUrl}/console/evals/runs/${cancelled.test_run_id}`);
    await page.getByRole('button', { name: 'Cancel run' }).click();
    await page.getByText('Run cancelled').waitFor();
    await page.getByTestId('run-status').filter({ hasText: 'cancelled' }).waitFor();
    expect((await ok('GET', `/v1/test_runs/${cancelled.test_run_id}`)).status).to.equal('cancelled');

    // The list offers Cancel on the runs still going.
    const listed = await ok('POST', '/v1/test_runs', { test_case_ids: [waits.test_case_id] });
    await page.goto(`${service.baseUrl}/console/evals`);
    const row = page.locator(`#runs-table tr[data-run="${listed.test_run_id}"]`);
    await row.getByRole('button', { name: `Cancel run ${listed.test_run_id}` }).click();
    await page.getByText(`Run ${listed.test_run_id} cancelled.`).waitFor();
    expect(await page.locator(`#runs-table tr[data-run="${listed.test_run_id}"] .badge`).textContent()).to.equal('cancelled');
    expect((await ok('GET', `/v1/test_runs/${listed.test_run_id}`)).status).to.equal('cancelled');
    await context.close();
  });

  it('shows the API\'s refusal beside the start form, and starts nothing', async () => {
    const gone = (await ok('POST', '/v1/test_sets', { name: 'Deleted soon' })).test_set_id;
    const { context, page } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals`);
    await page.locator(`#start-set option[value="${gone}"]`).waitFor({ state: 'attached' });
    await ok('DELETE', `/v1/test_sets/${gone}`);
    const before = (await ok('GET', '/v1/test_runs?limit=100')).data.length;
    await page.getByLabel('Test set', { exact: true }).selectOption(gone);
    await page.getByRole('button', { name: 'Start run' }).click();
    const status = page.getByTestId('start-status');
    await status.filter({ hasText: gone }).waitFor();
    const refusal = await service.api(key, 'POST', '/v1/test_runs', { test_set_id: gone });
    expect(await status.textContent(), 'the API\'s own message').to.equal(refusal.body.error.message);
    expect(await status.getAttribute('class')).to.contain('error');
    expect((await ok('GET', '/v1/test_runs?limit=100')).data.length).to.equal(before);
    await context.close();
  });

  it('lists runs 20 at a time, newest first, and filters them by test set', async () => {
    const [quick] = (await ok('POST', '/v1/test_cases/batch', {
      cases: [{ key: 'quick', name: 'Quick', prompt: 'done "ok"', start_state: 'macos-15', success: { check_script: 'true' } }],
    })).data;
    // Enough runs for a second page; each is cancelled at once (only the list matters here).
    for (let index = 0; index < 18; index += 1) {
      const run = await ok('POST', '/v1/test_runs', { test_case_ids: [quick.test_case_id] });
      await service.api(key, 'POST', `/v1/test_runs/${run.test_run_id}/cancel`);
    }
    const every = [];
    for (let cursor: string | null = null, first = true; first || cursor; first = false) {
      const page: { data: Array<{ test_run_id: string }>; next_cursor: string | null } = await ok('GET', `/v1/test_runs?limit=100${cursor ? `&cursor=${cursor}` : ''}`);
      every.push(...page.data.map((run) => run.test_run_id));
      cursor = page.next_cursor;
    }
    expect(every.length).to.be.above(20);

    const { context, page } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals`);
    const rows = page.locator('#runs-table tr[data-run]');
    await rows.nth(19).waitFor();
    expect(await rows.count()).to.equal(20);
    await page.getByRole('button', { name: 'Show older runs' }).click();
    await rows.nth(20).waitFor();
    const shown = await rows.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-run')));
    expect(shown, 'every run, newest first, as the API lists them').to.deep.equal(every);
    expect(await page.getByRole('button', { name: 'Show older runs' }).isHidden()).to.equal(true);

    await page.getByLabel('Filter by test set').selectOption(setId);
    await page.locator(`#runs-table tr[data-run="${every[0]}"]`).waitFor({ state: 'detached' });
    const setRuns = (await ok('GET', `/v1/test_runs?test_set_id=${setId}`)).data.map((run: { test_run_id: string }) => run.test_run_id);
    expect(setRuns).to.include.members([baselineRunId, newRunId]);
    expect(await rows.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-run')))).to.deep.equal(setRuns);
    await context.close();
  });

  it('another org\'s run is a not-found page, and so is comparing with it; its API answers 404', async () => {
    const { orgId: otherOrg } = await service.newOrg('Another evals org');
    const { context, page } = await memberPage(otherOrg);
    const response = await page.goto(`${service.baseUrl}/console/evals/runs/${baselineRunId}`);
    expect(response?.status()).to.equal(404);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Not found');
    expect(await page.getByTestId('problem').textContent()).to.equal(`No test run ${baselineRunId}`);
    const compare = await page.goto(`${service.baseUrl}/console/evals/compare?a=${baselineRunId}&b=${newRunId}`);
    expect(compare?.status()).to.equal(404);
    // Its own evals page lists none of the first org's runs.
    await page.goto(`${service.baseUrl}/console/evals`);
    await page.locator('#runs-table tbody td').first().waitFor();
    expect(await page.locator('#runs-table tbody').textContent()).to.equal('No test runs yet.');
    await context.close();

    const session = await consoleSession(service, otherOrg, 'member');
    const api = await fetch(`${service.baseUrl}/v1/test_runs/${baselineRunId}/tries`, { headers: { cookie: session.cookie } });
    expect(api.status).to.equal(404);
  });

  it('the guide the evals page links to shows docs/evals.md, with its section on importing cases', async () => {
    const { context, page } = await memberPage();
    await page.goto(`${service.baseUrl}/console/evals`);
    await page.getByRole('link', { name: 'importing cases from a file' }).click();
    await page.waitForURL(/\/console\/evals\/guide#importing-cases-from-a-file$/);
    expect(await page.locator('#importing-cases-from-a-file').textContent()).to.equal('Importing cases from a file');
    expect(await page.locator('#importing-cases-from-a-file + pre').textContent()).to.contain('npx deskhand evals import FILE');
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await scrollWidth(page), 'no sideways scrolling at 390 px').to.be.at.most(390);
    await context.close();
  });
});
