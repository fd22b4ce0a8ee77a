import { expect } from 'chai';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startTestService, waitFor, type TestService } from '../support/service';
import { startReceiver, type Receiver } from '../support/receiver';
import { accessibilityProblems, addMember, launchChromium, signInWithLink } from '../support/console';

const REFUSED_MEMBER = 'This needs the admin role (your role is member); ask an admin or owner of the org';

/**
 * The settings pages in Chromium, at 390 px wide: API keys, members and roles, the webhook
 * endpoint with its delivery log, and the audit log. The tests run in order: the last reads the
 * audit log of the changes the others made through the pages.
 */
describe('the console\'s settings pages in a browser (Chromium)', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let receiver: Receiver;
  let orgId: string;
  let orgKey: string;
  let admin: { email: string; signInUrl: string };
  let context: BrowserContext;
  let page: Page;
  const offsite: string[] = [];

  before(async () => {
    service = await startTestService({ DESKHAND_ALLOW_PRIVATE_URLS: '1' });
    ({ orgId, key: orgKey } = await service.newOrg('Settings org'));
    receiver = await startReceiver();
    browser = await launchChromium();
    admin = await addMember(service, orgId, 'admin');
    // bypassCSP only so that axe-core can be injected (accessibilityProblems).
    context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    page = await context.newPage();
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });
    await signInWithLink(page, admin.signInUrl);
  });
  after(async () => {
    await context?.close();
    await browser?.close();
    await receiver?.close();
    await service?.stop();
  });

  /** The page passes axe, has no sideways scroll at 390 px, and fetched nothing from elsewhere. */
  async function checkPage(): Promise<void> {
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    const width = await page.evaluate(() => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth);
    expect(width, 'no sideways scrolling at 390 px').to.be.at.most(390);
    expect(offsite).to.deep.equal([]);
  }

  it('an admin creates an API key (shown once; it works against /v1/me) and revokes it (then 401)', async () => {
    await page.goto(`${service.baseUrl}/console/settings`);
    await page.waitForURL(/\/console\/settings\/api-keys$/);
    await page.locator('tr', { hasText: 'Default key' }).waitFor();
    await page.getByLabel('Name of the new key').fill('CI pipeline');
    await page.getByRole('button', { name: 'Create key' }).click();
    const shown = page.getByTestId('new-key');
    await shown.waitFor();
    const key = (await shown.textContent())!;
    expect(key).to.match(/^dh_test_[0-9A-Za-z]{38}$/);
    expect(await page.getByTestId('create-key-status').textContent()).to.contain('shown only once');
    const me = await service.api(key, 'GET', '/v1/me');
    expect(me.status).to.equal(200);
    expect(me.body.org_id).to.equal(orgId);
    const row = page.locator('tr', { hasText: 'CI pipeline' });
    expect(await row.textContent()).to.contain(`${key.slice(0, 12)}…`);
    await checkPage();

    await page.reload();
    await page.locator('tr', { hasText: 'CI pipeline' }).waitFor();
    expect(await page.content(), 'the key is shown once only').to.not.contain(key);

    await page.getByRole('button', { name: 'Revoke CI pipeline' }).click();
    await page.getByRole('button', { name: 'Yes, revoke CI pipeline' }).click();
    await page.locator('tr', { hasText: 'CI pipeline' }).getByText('revoked', { exact: true }).waitFor();
    expect(await page.getByTestId('keys-status').textContent()).to.equal('Revoked CI pipeline.');
    const refused = await service.api(key, 'GET', '/v1/me');
    expect(refused.status).to.equal(401);
    expect(refused.body.error.message).to.equal('This API key has been revoked');
    expect(await page.getByRole('button', { name: 'Revoke CI pipeline' }).count(), 'a revoked key has nothing to revoke').to.equal(0);
  });

  it('an admin points the webhook at a receiver, sends a test event and sees the attempt in the delivery log; rotates the secret; redelivers', async () => {
    await page.goto(`${service.baseUrl}/console/settings/webhook`);
    await page.getByLabel('task.completed').waitFor();
    await page.getByLabel('URL').fill(receiver.url('/deskhand'));
    await page.getByLabel('task.completed').check();
    await page.getByLabel('task.failed').check();
    await page.getByRole('button', { name: 'Save endpoint' }).click();
    await page.getByTestId('webhook-status').getByText(/^Saved\./).waitFor();
    const firstSecret = (await page.getByTestId('new-secret').textContent())!;
    expect(firstSecret).to.match(/^whsec_/);
    const endpoint = await service.api(orgKey, 'GET', '/v1/webhook');
    expect(endpoint.body).to.include({ url: receiver.url('/deskhand'), has_secret: true });
    expect(endpoint.body.events).to.have.members(['task.completed', 'task.failed']);

    await page.getByRole('button', { name: 'Send a test event' }).click();
    await page.getByTestId('test-status').getByText(/^Sent a test event/).waitFor();
    const [arrived] = await receiver.waitForRequests(1);
    expect(JSON.parse(arrived!.body).type).to.equal('webhook.test');
    const delivery = page.locator('tr[data-status="succeeded"]', { hasText: 'webhook.test' });
    await delivery.waitFor();
    expect(await delivery.locator('.attempt').first().textContent()).to.match(/^HTTP 200 #1 at .+, \d+ ms/);
    await delivery.getByText('Answer').click();
    expect(await delivery.locator('pre').textContent()).to.equal('{"received":true}');
    await checkPage();

    await page.getByRole('button', { name: 'Rotate secret' }).click();
    await page.getByRole('button', { name: 'Yes, rotate' }).click();
    await page.getByTestId('secret-status').getByText(/^Rotated/).waitFor();
    const rotated = (await page.getByTestId('new-secret').textContent())!;
    expect(rotated).to.match(/^whsec_/).and.not.equal(firstSecret);

    await delivery.getByRole('button', { name: /^Redeliver webhook\.test/ }).click();
    const again = await receiver.waitForRequests(2);
    expect(JSON.parse(again[1]!.body).id).to.equal(JSON.parse(arrived!.body).id);
    await page.locator('tr[data-status="succeeded"]', { hasText: 'webhook.test' }).locator('.attempt').nth(1).waitFor();
  });

  it('an admin invites a member (the invitation link shown to send), who joins from it; then changes their role, is refused giving the owner role, and removes them', async () => {
    await page.goto(`${service.baseUrl}/console/settings/members`);
    await page.locator('tr', { hasText: admin.email }).getByText('(you)').waitFor();
    await page.getByLabel('Email').fill('grace@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('member');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByTestId('invite-status').getByText(/^Invited grace@example\.com as member/).waitFor();
    const link = (await page.getByTestId('invite-link').textContent())!;
    expect(link).to.match(/\/console\/invitations\/dhi_/);
    expect(await page.getByTestId('invited-email').textContent()).to.equal('grace@example.com');
    await page.locator('#invitations-body tr', { hasText: 'grace@example.com' }).waitFor();
    expect(await page.locator('#members-body tr', { hasText: 'grace@example.com' }).count(), 'not a member before she accepts').to.equal(0);
    await checkPage();

    // Grace opens the link in her own browser and, new to Deskhand, chooses a password.
    const graceContext = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    try {
      const gracePage = await graceContext.newPage();
      await gracePage.goto(`${service.baseUrl}${new URL(link).pathname}`);
      await gracePage.getByTestId('invitation-summary').getByText(/invites grace@example\.com to the org/).waitFor();
      expect(await accessibilityProblems(gracePage)).to.deep.equal([]);
      await gracePage.getByLabel('Password').fill('grace chose this one');
      await gracePage.getByRole('button', { name: /^Join / }).click();
      await gracePage.waitForURL(/\/console\/tasks/);
      expect(await gracePage.getByTestId('who').textContent()).to.equal('grace@example.com');
    } finally {
      await graceContext.close();
    }
    await page.reload();
    const row = page.locator('#members-body tr', { hasText: 'grace@example.com' });
    await row.waitFor();
    expect(await page.locator('#invitations-body tr', { hasText: 'grace@example.com' }).count(), 'the invitation is spent').to.equal(0);

    await page.getByLabel('Role of grace@example.com').selectOption('admin');
    await page.getByRole('button', { name: 'Change role of grace@example.com' }).click();
    await page.locator('tr', { hasText: 'grace@example.com' }).getByText('grace@example.com is now admin.').waitFor();
    const members = await service.api(orgKey, 'GET', '/v1/members');
    expect(members.body.data.find((m: { email: string }) => m.email === 'grace@example.com').role).to.equal('admin');

    await page.getByLabel('Role of grace@example.com').selectOption('owner');
    await page.getByRole('button', { name: 'Change role of grace@example.com' }).click();
    await page.locator('tr', { hasText: 'grace@example.com' }).getByText('Only an owner can give or take the owner role').waitFor();
    await page.getByLabel('Email').fill('boss@example.com');
    await page.getByLabel('Role', { exact: true }).selectOption('owner');
    await page.getByRole('button', { name: 'Invite' }).click();
    await page.getByTestId('invite-status').getByText('Not invited: Only an owner can make someone an owner', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Remove grace@example.com' }).click();
    await page.getByRole('button', { name: 'Yes, remove grace@example.com' }).click();
    await page.getByText('Removed grace@example.com.').waitFor();
    expect(await page.locator('tr', { hasText: 'grace@example.com' }).count()).to.equal(0);
    const after = await service.api(orgKey, 'GET', '/v1/members');
    expect(after.body.data.map((m: { email: string }) => m.email)).to.not.include('grace@example.com');
  });

  it('a member who opens the API keys page and clicks Create is told why not; the API refused it with 403', async () => {
    const member = await addMember(service, orgId, 'member');
    const memberContext = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    const memberPage = await memberContext.newPage();
    try {
      await signInWithLink(memberPage, member.signInUrl);
      await memberPage.goto(`${service.baseUrl}/console/settings/api-keys`);
      await memberPage.getByTestId('keys-status').getByText(REFUSED_MEMBER, { exact: false }).waitFor();
      const before = (await service.api(orgKey, 'GET', '/v1/api_keys')).body.data.length;
      await memberPage.getByLabel('Name of the new key').fill('Not allowed');
      const answered = memberPage.waitForResponse((response) => response.url().endsWith('/v1/api_keys') && response.request().method() === 'POST');
      await memberPage.getByRole('button', { name: 'Create key' }).click();
      const response = await answered;
      expect(response.status()).to.equal(403);
      expect((await response.json()).error.type).to.equal('permission');
      await memberPage.getByTestId('create-key-status').getByText(`Not created: ${REFUSED_MEMBER}`).waitFor();
      expect(await memberPage.getByTestId('new-key').isVisible()).to.equal(false);
      expect((await service.api(orgKey, 'GET', '/v1/api_keys')).body.data.length, 'no key was made').to.equal(before);
      expect(await accessibilityProblems(memberPage)).to.deep.equal([]);
    } finally {
      await memberContext.close();
    }
  });

  it('the audit log lists these changes with their actors (a person\'s email, a key\'s name and prefix) and filters by action', async () => {
    const scripted = await service.api(orgKey, 'POST', '/v1/api_keys', { name: 'Made by a script' });
    expect(scripted.status).to.equal(200);
    await page.goto(`${service.baseUrl}/console/settings/audit-log`);
    const rowOf = (action: string, text: string) => page.locator('tr', { hasText: action }).filter({ hasText: text });
    await rowOf('api_key.revoked', admin.email).waitFor();
    for (const action of ['api_key.created', 'webhook.created', 'webhook.test_sent', 'webhook.updated', 'webhook.redelivery_requested', 'member.invited', 'member.role_changed', 'member.removed']) {
      expect(await rowOf(action, admin.email).count(), action).to.be.greaterThan(0);
    }
    const byKey = rowOf('api_key.created', 'Made by a script');
    expect(await byKey.locator('td.actor').textContent()).to.equal(`API key Default key (${orgKey.slice(0, 12)}…)`);
    await checkPage();

    await page.getByLabel('Action').fill('member.role_changed');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=member\.role_changed/);
    await page.getByTestId('audit-status').getByText('1 entry.').waitFor();
    const actions = await page.locator('#audit-body tr td:nth-child(2)').allTextContents();
    expect(actions).to.deep.equal(['member.role_changed']);
    expect(await page.locator('#audit-body td.actor').allTextContents()).to.deep.equal([admin.email]);
    expect(await page.getByLabel('Action').inputValue()).to.equal('member.role_changed');

    await page.getByLabel('Action').fill('no.such_action');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No entries match these filters.').waitFor();
  });

  it('the audit log shows 50 entries, then the older ones below them when asked', async () => {
    for (let i = 0; i < 55; i++) expect((await service.api(orgKey, 'POST', '/v1/api_keys', { name: `Paged ${i}` })).status).to.equal(200);
    const listed = await service.api(orgKey, 'GET', '/v1/audit_log?action=api_key.created&limit=100');
    const total = listed.body.data.length as number;
    expect(total).to.be.greaterThan(55).and.lessThan(100);
    await page.goto(`${service.baseUrl}/console/settings/audit-log?action=api_key.created`);
    await page.getByTestId('audit-status').getByText('50 entries shown; older ones follow.').waitFor();
    expect(await page.locator('#audit-body tr').count()).to.equal(50);
    expect(await page.locator('#audit-body tr').first().textContent()).to.contain(listed.body.data[0].object_id);

    await page.getByRole('button', { name: 'Older entries' }).click();
    await page.getByTestId('audit-status').getByText(`${total} entries.`).waitFor();
    const ids = await page.locator('#audit-body tr td:nth-child(3) code').allTextContents();
    expect(ids, 'every entry once, newest first').to.deep.equal(listed.body.data.map((entry: { object_id: string }) => entry.object_id));
    expect(await page.getByRole('button', { name: 'Older entries' }).isHidden()).to.equal(true);
  });

  it('a member opening the audit log sees why it is not shown', async () => {
    const member = await addMember(service, orgId, 'member');
    const memberContext = await browser.newContext();
    const memberPage = await memberContext.newPage();
    try {
      await signInWithLink(memberPage, member.signInUrl);
      await memberPage.goto(`${service.baseUrl}/console/settings/audit-log`);
      await memberPage.getByTestId('audit-status').getByText(`Cannot read the audit log: ${REFUSED_MEMBER}`).waitFor();
      expect(await memberPage.locator('#audit-body tr').count()).to.equal(0);
    } finally {
      await memberContext.close();
    }
  });
});
