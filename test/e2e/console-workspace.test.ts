import fs from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestService, waitFor, type TestService } from '../support/service';
import { accessibilityProblems, addMember, launchChromium, signInWithLink } from '../support/console';
import type { Role } from '../../shared/auth/roles';
import { DesktopClient } from '../../shared/simulator/desktop-client';
import { ReferenceRunner } from '../../shared/simulator/runner/reference-runner';

/**
 * The workspace pages of the console (sessions, agents, start states, runners) in Debian's
 * Chromium: each reads and changes the org through /v1 as the signed-in person, so every check
 * of what the page shows is paired with what the API then says.
 */
describe('the console\'s workspace pages in a browser (Chromium)', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let orgId: string;
  let key: string;
  const contexts: BrowserContext[] = [];
  const desktops: DesktopClient[] = [];
  const runners: ReferenceRunner[] = [];
  const dataDirs: string[] = [];
  /** Anything a page fetched from elsewhere (the console fetches nothing but from itself). */
  const offsite: string[] = [];

  const api = (method: string, pathname: string, body?: unknown) => service.api(key, method, pathname, body);

  /**
   * A browser page signed in as a new person with `role`, at 390 px wide. Only a page that axe
   * checks bypasses the console's CSP (axe is injected as a script).
   */
  async function signedInPage(role: Role, options: { axe?: boolean } = {}): Promise<Page> {
    const person = await addMember(service, orgId, role);
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: options.axe ?? false });
    contexts.push(context);
    const page = await context.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });
    // Deleting asks first; the person says yes.
    page.on('dialog', (dialog) => void dialog.accept());
    await signInWithLink(page, person.signInUrl);
    return page;
  }

  /** Checks what every page must be: no serious accessibility problem, no sideways scroll at 390 px. */
  async function expectUsable(page: Page): Promise<void> {
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    const width = (await page.evaluate('document.documentElement.scrollWidth')) as number;
    expect(width, 'no sideways scrolling at 390 px').to.be.at.most(390);
    expect(offsite).to.deep.equal([]);
  }

  before(async () => {
    service = await startTestService(
      { DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_RUNNER_HEARTBEAT_MS: '300', DESKHAND_RUNNER_OFFLINE_AFTER_MS: '1500', DESKHAND_OPEN_MACHINE_MS: '600000' },
      ['web', 'worker-agent', 'worker-evals', 'worker-clock'],
    );
    ({ orgId, key } = await service.newOrg('Workspace pages'));
    browser = await launchChromium();
  });
  after(async () => {
    await Promise.all(contexts.map((context) => context.close()));
    await Promise.all(desktops.map((desktop) => desktop.close()));
    await Promise.all(runners.map((runner) => runner.stop()));
    await browser?.close();
    await service?.stop();
    for (const dir of dataDirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  describe('sessions', () => {
    it('creates a session from the page: its code, invite link and one-time token; it turns connected when the desktop app pairs', async () => {
      const page = await signedInPage('member', { axe: true });
      await page.goto(`${service.baseUrl}/console/sessions`);
      await page.getByRole('heading', { level: 1, name: 'Sessions' }).waitFor();
      await page.getByRole('button', { name: 'Create session' }).click();
      await page.locator('#created-session').waitFor();

      const code = (await page.getByTestId('created-code').textContent())!;
      expect(code).to.match(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
      const invite = page.getByTestId('created-invite');
      expect(await invite.textContent()).to.contain(code);
      expect(await invite.getAttribute('href')).to.equal(await invite.textContent());
      const token = (await page.getByTestId('created-token').textContent())!;
      expect(token.length).to.be.greaterThan(20);
      await page.getByText(`Session ${code} created.`).waitFor();
      expect(await page.getByTestId('created-status').textContent()).to.equal('waiting');
      const row = page.locator(`tr[data-id="${code}"]`);
      expect(await row.locator('.badge').textContent()).to.equal('waiting');
      expect(await row.getByRole('link', { name: '0 tasks' }).getAttribute('href')).to.equal(`/console/tasks?session_id=${code}`);
      await expectUsable(page);

      const read = await api('GET', `/v1/sessions/${code}`);
      expect(read.status).to.equal(200);
      expect(read.body).to.include({ status: 'waiting', invite_url: await invite.textContent() });

      // The person's desktop app enters the code; the page, left open, follows the session.
      const desktop = new DesktopClient({
        baseUrl: service.baseUrl, code, os: 'mac', appVersion: '1.0.20', name: 'Reception Mac', width: 1440, height: 900, accessibility: true, delayMs: 0, out: () => undefined,
      });
      desktops.push(desktop);
      await desktop.start();
      await page.getByTestId('created-status').getByText('connected').waitFor();
      await row.locator('.badge', { hasText: 'connected' }).waitFor();
      expect(await row.textContent()).to.contain('Reception Mac (mac, 1440×900)');
      expect((await api('GET', `/v1/sessions/${code}`)).body.status).to.equal('connected');
      // A token is shown once: the page opened again does not have it.
      await page.reload();
      await row.waitFor();
      expect(await page.content()).to.not.contain(token);
    });

    it('expires a session from its row; the status filter lists by status', async () => {
      const made = await api('POST', '/v1/sessions', {});
      const code = made.body.code as string;
      const waiting = (await api('POST', '/v1/sessions', {})).body.code as string;
      const page = await signedInPage('member');
      await page.goto(`${service.baseUrl}/console/sessions`);
      const row = page.locator(`tr[data-id="${code}"]`);
      await row.getByRole('button', { name: `Expire session ${code}` }).click();
      await row.locator('.badge', { hasText: 'expired' }).waitFor();
      expect((await api('GET', `/v1/sessions/${code}`)).body.status).to.equal('expired');
      expect(await row.getByRole('button').count(), 'an expired session has nothing left to expire').to.equal(0);

      await page.getByLabel('Status').selectOption('waiting');
      await waitFor(async () => (await page.locator(`tr[data-id="${code}"]`).count()) === 0, 10_000, 'the expired session out of the waiting list');
      await page.locator(`tr[data-id="${waiting}"]`).waitFor();
      const shown = await page.locator('tr[data-id] .badge').allTextContents();
      expect(shown.length).to.be.greaterThan(0);
      expect(new Set(shown)).to.deep.equal(new Set(['waiting']));
      await page.getByLabel('Status').selectOption('expired');
      await page.locator(`tr[data-id="${code}"]`).waitFor();
    });

    it('lists them 20 a page: Next page shows the older ones, First page the newest again', async () => {
      // The org has a few sessions from the tests above; 21 more make a second page.
      const codes: string[] = [];
      for (let i = 0; i < 21; i++) codes.push((await api('POST', '/v1/sessions', {})).body.code as string);
      const page = await signedInPage('member');
      await page.goto(`${service.baseUrl}/console/sessions`);
      const newest = page.locator(`tr[data-id="${codes[20]}"]`);
      await newest.waitFor();
      expect(await page.locator('tr[data-id]').count()).to.equal(20);
      expect(await page.getByRole('button', { name: 'First page' }).isHidden()).to.equal(true);

      await page.getByRole('button', { name: 'Next page' }).click();
      await newest.waitFor({ state: 'detached' });
      const second = (await api('GET', '/v1/sessions?limit=20')).body as { next_cursor: string };
      const expected = ((await api('GET', `/v1/sessions?limit=20&cursor=${encodeURIComponent(second.next_cursor)}`)).body as { data: Array<{ code: string }> }).data.map((session) => session.code);
      await waitFor(async () => JSON.stringify(await page.locator('tr[data-id]').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-id')))) === JSON.stringify(expected), 10_000, 'the second page as the API lists it');
      await page.getByRole('button', { name: 'First page' }).waitFor();

      await page.getByRole('button', { name: 'First page' }).click();
      await newest.waitFor();
      expect(await page.getByRole('button', { name: 'First page' }).isHidden()).to.equal(true);
    });
  });

  describe('agents', () => {
    it('an admin creates an agent, edits its draft (only what changed is sent), publishes it and the version list grows; views and restores version 1', async () => {
      const page = await signedInPage('admin', { axe: true });
      await page.goto(`${service.baseUrl}/console/agents`);
      await page.locator('tr[data-id="default"]').waitFor();
      await expectUsable(page);
      await page.getByLabel(/^Agent id/).fill('front-desk');
      await page.getByLabel(/^Name/).fill('Front desk');
      await page.getByLabel('Instructions').fill('Greet visitors.');
      await page.getByRole('button', { name: 'Create agent' }).click();
      await page.waitForURL(/\/console\/agents\/front-desk$/);
      const created = (await api('GET', '/v1/agents/front-desk')).body;
      expect(created).to.include({ name: 'Front desk', instructions: 'Greet visitors.', version: 1 });

      await page.getByTestId('draft-state').getByText(/No draft/).waitFor();
      await page.locator('[data-testid="versions"] tr[data-id="1"]').waitFor();
      expect(await page.getByTestId('published-version').textContent()).to.equal('1');
      await expectUsable(page);

      await page.getByLabel('Instructions').fill('Greet visitors and sign them in.');
      await page.getByLabel(/^Greeting/).fill('Hello, welcome!');
      await page.getByLabel('Guardrails mode').selectOption('unattended');
      const saving = page.waitForRequest((request) => request.method() === 'PATCH' && request.url().endsWith('/v1/agents/front-desk/draft'));
      await page.getByRole('button', { name: 'Save draft' }).click();
      expect((await saving).postDataJSON(), 'only the fields changed are sent').to.deep.equal({
        instructions: 'Greet visitors and sign them in.',
        greeting: 'Hello, welcome!',
        guardrails: { mode: 'unattended' },
      });
      await page.getByText('Draft saved.').waitFor();
      const draft = (await api('GET', '/v1/agents/front-desk/draft')).body;
      expect(draft).to.include({ has_draft: true, instructions: 'Greet visitors and sign them in.', greeting: 'Hello, welcome!', name: 'Front desk', model: null });
      expect(draft.guardrails).to.include({ mode: 'unattended', max_steps: created.guardrails.max_steps });
      expect(draft.saved_by).to.include({ type: 'user' });
      expect(await page.getByTestId('draft-state').textContent()).to.match(/^A draft based on version 1/);
      expect((await api('GET', '/v1/agents/front-desk')).body.instructions, 'the published version is untouched').to.equal('Greet visitors.');

      await page.getByRole('button', { name: 'Publish draft' }).click();
      await page.getByText('Published version 2.').waitFor();
      await page.locator('[data-testid="versions"] tr[data-id="2"]').waitFor();
      expect(await page.locator('[data-testid="versions"] tr[data-id]').count()).to.equal(2);
      expect(await page.getByTestId('published-version').textContent()).to.equal('2');
      const published = (await api('GET', '/v1/agents/front-desk')).body;
      expect(published).to.include({ version: 2, has_draft: false, instructions: 'Greet visitors and sign them in.' });

      await page.getByRole('button', { name: 'View version 1' }).click();
      await page.getByRole('heading', { name: 'Version 1' }).waitFor();
      expect(await page.getByTestId('version-instructions').textContent()).to.equal('Greet visitors.');
      await page.getByRole('button', { name: 'Restore version 1 into the draft' }).click();
      await page.getByText('Version 1 is in the draft; publish it to run it.').waitFor();
      expect(await page.getByLabel('Instructions').inputValue()).to.equal('Greet visitors.');
      expect(await page.getByTestId('draft-state').textContent()).to.contain('It holds version 1, restored.');
      const restored = (await api('GET', '/v1/agents/front-desk/draft')).body;
      expect(restored).to.include({ has_draft: true, restored_from_version: 1, instructions: 'Greet visitors.' });
      expect((await api('GET', '/v1/agents/front-desk')).body.version, 'restoring publishes nothing').to.equal(2);
      await expectUsable(page);

      await page.getByRole('button', { name: 'Discard draft' }).click();
      await page.getByText('Draft discarded.').waitFor();
      expect((await api('GET', '/v1/agents/front-desk/draft')).body.has_draft).to.equal(false);
      expect(await page.getByLabel('Instructions').inputValue()).to.equal('Greet visitors and sign them in.');
    });

    it('a member may save a draft, but Publish shows the API\'s 403 message beside it and nothing is published; creating is refused the same way', async () => {
      expect((await api('POST', '/v1/agents', { agent_id: 'kiosk', instructions: 'Run the kiosk.' })).status).to.equal(200);
      const page = await signedInPage('member');
      await page.goto(`${service.baseUrl}/console/agents/kiosk`);
      await page.locator('[data-testid="versions"] tr[data-id="1"]').waitFor();
      await page.getByLabel('Instructions').fill('Run the kiosk politely.');
      await page.getByRole('button', { name: 'Save draft' }).click();
      await page.getByText('Draft saved.').waitFor();

      await page.getByRole('button', { name: 'Publish draft' }).click();
      const refusal = page.locator('#draft-actions .ws-message.error');
      await refusal.waitFor();
      expect(await refusal.textContent()).to.equal('This needs the admin role (your role is member); ask an admin or owner of the org');
      const agent = (await api('GET', '/v1/agents/kiosk')).body;
      expect(agent).to.include({ version: 1, has_draft: true, instructions: 'Run the kiosk.' });
      expect(await page.locator('[data-testid="versions"] tr[data-id]').count()).to.equal(1);

      await page.goto(`${service.baseUrl}/console/agents`);
      await page.getByLabel(/^Agent id/).fill('not-allowed');
      await page.getByRole('button', { name: 'Create agent' }).click();
      await page.locator('#new-agent .form-status.error').getByText('This needs the admin role (your role is member)', { exact: false }).waitFor();
      expect((await api('GET', '/v1/agents/not-allowed')).status).to.equal(404);
    });

    it('another org\'s agent, or none, is a not-found page', async () => {
      const other = await service.newOrg('Other org');
      expect((await service.api(other.key, 'POST', '/v1/agents', { agent_id: 'theirs' })).status).to.equal(200);
      const page = await signedInPage('admin');
      for (const agentId of ['theirs', 'nobody']) {
        const response = await page.goto(`${service.baseUrl}/console/agents/${agentId}`);
        expect(response?.status()).to.equal(404);
        expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Not found');
      }
    });
  });

  describe('runners and start states', () => {
    it('registers a runner (its token once), lists it online with its images once it connects, and deletes it', async () => {
      const page = await signedInPage('admin', { axe: true });
      await page.goto(`${service.baseUrl}/console/runners`);
      // The list has loaded: the service's cloud runners (other tests make some), or "No runners yet."
      await page.locator('main table tbody tr').first().waitFor();
      await expectUsable(page);
      await page.getByLabel(/^Name/).fill('Rack in the basement');
      await page.getByRole('button', { name: 'Register runner' }).click();
      await page.getByText('Copy it now: it is shown only this once.').waitFor();
      const token = (await page.getByTestId('runner-token').textContent())!;
      expect(token).to.match(/^dhr_/);
      expect(await page.getByTestId('runner-command').textContent()).to.contain(`--token ${token}`);
      const listed = (await api('GET', '/v1/runners')).body.data.filter((runner: { scope: string }) => runner.scope === 'org');
      expect(listed.map((runner: { name: string }) => runner.name)).to.deep.equal(['Rack in the basement']);
      const runnerId = listed[0].runner_id as string;
      const row = page.locator(`tr[data-id="${runnerId}"]`);
      expect(await row.locator('.badge').textContent()).to.equal('offline');
      expect(await row.textContent()).to.contain('never');
      await expectUsable(page);

      // The runner started with the token shown on the page.
      const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-console-runner-'));
      dataDirs.push(dataDir);
      const runner = new ReferenceRunner({
        token, baseUrl: service.baseUrl, name: 'Rack in the basement', slots: 2, labels: ['basement'], images: ['macos-15', 'windows-11'], dataDir, bootMs: 0, version: '1.0.0', reconnectDelayMs: 100, out: () => undefined,
      });
      runners.push(runner);
      runner.start();
      await row.locator('.badge', { hasText: 'online' }).waitFor();
      expect(await row.textContent()).to.contain('macos-15, windows-11');
      expect(await row.textContent()).to.contain('basement');
      await page.reload();
      await row.locator('.badge', { hasText: 'online' }).waitFor();
      expect(await page.content(), 'the token is not shown again').to.not.contain(token);

      const states = await signedInPage('member', { axe: true });
      await states.goto(`${service.baseUrl}/console/start-states`);
      const image = states.locator('tr[data-id="macos-15"]');
      await image.waitFor();
      expect(await image.locator('.badge').textContent()).to.equal('ready');
      expect(await image.textContent()).to.contain('image');
      await states.locator('tr[data-id="windows-11"]').waitFor();
      await expectUsable(states);

      await row.getByRole('button', { name: 'Delete runner Rack in the basement' }).click();
      await row.waitFor({ state: 'detached' });
      expect((await api('GET', `/v1/runners/${runnerId}`)).status).to.equal(404);
      expect(await page.locator(`tr[data-id="${runnerId}"]`).count(), 'the deleted runner is gone from the list').to.equal(0);
    });

    it('a member registering a runner sees the API\'s 403 message and no runner is made', async () => {
      const before = (await api('GET', '/v1/runners')).body.data.length;
      const page = await signedInPage('member');
      await page.goto(`${service.baseUrl}/console/runners`);
      await page.getByLabel(/^Name/).fill('Not mine to add');
      await page.getByRole('button', { name: 'Register runner' }).click();
      await page.locator('#new-runner .form-status.error').getByText('This needs the admin role (your role is member)', { exact: false }).waitFor();
      expect(await page.getByTestId('runner-token').textContent()).to.equal('');
      expect((await api('GET', '/v1/runners')).body.data.length).to.equal(before);
    });

    it('creates a start state by a script from the page and follows it to ready; opens it (the live view link) and saves it as version 2', async () => {
      const runnerToken = (await api('POST', '/v1/runners', { name: 'rack for states' })).body.token as string;
      const dataDir = fs.mkdtempSync(path.join(tmpdir(), 'deskhand-console-runner-'));
      dataDirs.push(dataDir);
      const runner = new ReferenceRunner({
        token: runnerToken, baseUrl: service.baseUrl, name: 'rack for states', slots: 2, labels: [], images: ['macos-15'], dataDir, bootMs: 0, version: '1.0.0', reconnectDelayMs: 100, out: () => undefined,
      });
      runners.push(runner);
      runner.start();

      const page = await signedInPage('admin', { axe: true });
      await page.goto(`${service.baseUrl}/console/start-states`);
      await page.locator('tr[data-id="macos-15"]').waitFor();
      await page.getByLabel('Name', { exact: true }).fill('Mac with a note');
      await page.getByLabel(/^Made from/).selectOption('macos-15');
      expect(await page.getByLabel('Script', { exact: true }).isVisible(), 'a script is asked for only when the method is script').to.equal(false);
      await page.getByLabel('How it is set up').selectOption('script');
      await page.getByLabel('Script', { exact: true }).fill('echo "Meeting at 3" > $HOME/Documents/meeting.txt');
      await page.getByRole('button', { name: 'Create start state' }).click();
      await page.getByText(/Start state Mac with a note created \(building\)/).waitFor();
      const made = (await api('GET', '/v1/start_states')).body.data.find((state: { name: string }) => state.name === 'Mac with a note');
      expect(made).to.include({ kind: 'state', method: 'script', from: 'macos-15' });
      const row = page.locator(`tr[data-id="${made.start_state_id}"]`);
      await row.locator('.badge', { hasText: 'ready' }).waitFor({ timeout: 30_000 });
      expect(await row.locator('td').nth(3).textContent()).to.equal('1');
      await expectUsable(page);

      await row.getByRole('button', { name: 'Open Mac with a note with a live view' }).click();
      const live = row.getByTestId('live-view');
      await live.waitFor({ timeout: 30_000 });
      const opened = (await api('GET', `/v1/start_states/${made.start_state_id}`)).body;
      expect(opened.status).to.equal('open');
      expect(await live.getAttribute('href')).to.equal(opened.view.screen_url);
      // The live view page exists for that link (on this test service's address).
      const viewPage = await fetch(`${service.baseUrl}${new URL(opened.view.screen_url).pathname}`);
      expect(viewPage.status).to.equal(200);

      await row.getByRole('button', { name: 'Save Mac with a note as its next version' }).click();
      await waitFor(async () => (await row.locator('td').nth(3).textContent()) === '2', 30_000, 'version 2 on the page');
      await row.locator('.badge', { hasText: 'ready' }).waitFor();
      expect((await api('GET', `/v1/start_states/${made.start_state_id}`)).body).to.include({ status: 'ready', version: 2 });

      // A member may look, not open: the API's reason shows beside the button, and the state stays closed.
      const member = await signedInPage('member');
      await member.goto(`${service.baseUrl}/console/start-states`);
      const memberRow = member.locator(`tr[data-id="${made.start_state_id}"]`);
      await memberRow.getByRole('button', { name: 'Open Mac with a note with a live view' }).click();
      await memberRow.locator('.ws-message.error').getByText('This needs the admin role (your role is member)', { exact: false }).waitFor();
      expect((await api('GET', `/v1/start_states/${made.start_state_id}`)).body).to.include({ status: 'ready', view: null });

      await row.getByRole('button', { name: 'Delete Mac with a note' }).click();
      await row.waitFor({ state: 'detached' });
      expect((await api('GET', `/v1/start_states/${made.start_state_id}`)).status).to.equal(404);
    });
  });
});
