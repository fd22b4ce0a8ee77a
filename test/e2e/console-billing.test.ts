import { expect } from 'chai';
import type { Browser, Page } from 'playwright-core';
import { ManualClock } from '../../shared/clock';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, waitFor, type TestService } from '../support/service';
import { accessibilityProblems, addMember, consoleSession, launchChromium, signInWithLink } from '../support/console';
import { startSleepingTask } from '../support/tasks';
import { sendStripeWebhook, startStripeStandIn, stripeEvent, type StripeStandIn } from '../support/stripe-stand-in';

const WEBHOOK_SECRET = 'whsec_console_billing_0123456789';

describe('the console\'s Billing page (Chromium)', function () {
  this.timeout(120_000);
  let service: TestService;
  let stripe: StripeStandIn;
  let browser: Browser;
  const clock = new ManualClock();
  const desktops: DesktopClient[] = [];

  const billing = () => service.running.container.billing;
  const operator = (orgId: string) => ({ orgId, actor: null });
  /** An org on `plan` (the operator's lever), with `cents` credited when given. */
  const orgOn = async (plan: string, cents = 0) => {
    const org = await service.newOrg('Billing page org');
    await billing().levers.setPlan(org.orgId, plan, operator(org.orgId), { operator: true });
    if (cents) await billing().levers.credit(org.orgId, cents, operator(org.orgId));
    return org;
  };
  /** `/v1` with a console sign-in's cookie, and its CSRF token on changes, as the page's script calls it. */
  const asConsole = async (signedIn: { cookie: string; csrfToken: string }, method: string, path: string, body?: unknown) => {
    const headers: Record<string, string> = { cookie: signedIn.cookie, accept: 'application/json' };
    if (method !== 'GET') headers['x-csrf-token'] = signedIn.csrfToken;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const response = await fetch(service.baseUrl + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as any };
  };
  /** A browser page signed in as a new person of `role`; `axe` contexts bypass the CSP so axe-core can be injected. */
  const openBilling = async (orgId: string, role: 'owner' | 'admin' | 'member', options: { width?: number; axe?: boolean } = {}) => {
    const person = await addMember(service, orgId, role);
    const context = await browser.newContext({ viewport: { width: options.width ?? 1280, height: 900 }, bypassCSP: options.axe ?? false });
    const page = await context.newPage();
    const offsite: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });
    await signInWithLink(page, person.signInUrl);
    await page.goto(`${service.baseUrl}/console/billing`);
    await page.getByTestId('plan-name').filter({ hasNotText: '…' }).waitFor();
    return { page, context, offsite };
  };
  const cellsOf = (page: Page, testId: string) =>
    page.getByTestId(testId).locator('tbody tr').evaluateAll((rows) => rows.map((row) => [...row.querySelectorAll('th, td')].map((cell) => (cell.textContent ?? '').trim())));

  before(async () => {
    stripe = await startStripeStandIn();
    service = await startTestService(
      { DESKHAND_SCRIPTED_MODELS: '1', STRIPE_SECRET_KEY: 'sk_test_standin', STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_BASE: stripe.url },
      undefined,
      { clock },
    );
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const desktop of desktops.splice(0)) await desktop.close();
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
    await stripe?.close();
  });

  it('an owner\'s console sign-in changes the plan over /v1 (cookie + CSRF): 200 and GET /v1/usage shows it; an admin\'s gets 403, and none without the CSRF token', async () => {
    const { orgId } = await orgOn('free');
    const owner = await consoleSession(service, orgId, 'owner');
    const admin = await consoleSession(service, orgId, 'admin');

    const refused = await asConsole(admin, 'PUT', '/v1/plan', { plan_id: 'pay_as_you_go' });
    expect(refused.status).to.equal(403);
    expect(refused.body.error).to.include({ type: 'permission' });
    expect(refused.body.error.message).to.contain('This needs the owner role (your role is admin)');
    const withoutCsrf = await fetch(`${service.baseUrl}/v1/plan`, { method: 'PUT', headers: { cookie: owner.cookie, 'content-type': 'application/json' }, body: JSON.stringify({ plan_id: 'pay_as_you_go' }) });
    expect(withoutCsrf.status).to.equal(403);
    expect(((await withoutCsrf.json()) as any).error).to.include({ code: 'csrf' });
    expect((await asConsole(owner, 'GET', '/v1/usage')).body.plan.plan_id, 'neither refusal changed the plan').to.equal('free');

    const changed = await asConsole(owner, 'PUT', '/v1/plan', { plan_id: 'pay_as_you_go' });
    expect(changed.status).to.equal(200);
    expect(changed.body).to.include({ object: 'plan', plan_id: 'pay_as_you_go', price_per_minute_cents: 10 });
    const usage = await asConsole(owner, 'GET', '/v1/usage');
    expect(usage.status).to.equal(200);
    expect(usage.body.plan).to.deep.equal(changed.body);
    const audit = await asConsole(owner, 'GET', '/v1/audit_log?action=billing.plan_changed');
    expect(audit.body.data[0]).to.deep.include({ actor: { type: 'user', email: owner.email }, data: { from: 'free', to: 'pay_as_you_go' } });
  });

  it('on the page an owner chooses another plan; an admin pressing the same button reads the API\'s 403 beside it', async () => {
    const { orgId, key } = await orgOn('free');
    const admin = await openBilling(orgId, 'admin');
    expect(await admin.page.getByTestId('plan-name').textContent()).to.equal('Free');
    await admin.page.getByRole('button', { name: 'Choose Pay as you go' }).click();
    const row = admin.page.locator('tr[data-plan-id="pay_as_you_go"]');
    await row.getByRole('status').filter({ hasText: 'This needs the owner role' }).waitFor();
    expect(await row.getByRole('status').textContent()).to.equal('This needs the owner role (your role is admin); ask an owner of the org');
    expect(await admin.page.getByTestId('plan-name').textContent()).to.equal('Free');
    await admin.context.close();

    const owner = await openBilling(orgId, 'owner');
    const enterprise = owner.page.locator('tr[data-plan-id="enterprise"]');
    expect(await enterprise.locator('td').last().textContent(), 'a plan the operator sets up has no button').to.contain('Set up on request');
    expect(await owner.page.locator('tr[data-plan-id="free"] td').last().textContent()).to.contain('Current plan');
    await owner.page.getByRole('button', { name: 'Choose Pay as you go' }).click();
    await owner.page.getByTestId('billing-status').filter({ hasText: 'You are now on the Pay as you go plan.' }).waitFor();
    expect(await owner.page.getByTestId('plan-name').textContent()).to.equal('Pay as you go');
    await owner.page.locator('tr[data-plan-id="pay_as_you_go"] td').last().filter({ hasText: 'Current plan' }).waitFor();
    expect(await owner.page.locator('#plan-price').textContent()).to.equal('$0.10');
    expect((await service.api(key, 'GET', '/v1/usage')).body.plan.plan_id).to.equal('pay_as_you_go');
    await owner.context.close();
  });

  it('draws this month\'s minutes of a task that ran (chart and its table), lists the credit, passes axe at 390 px and fetches nothing from elsewhere', async () => {
    const { orgId, key } = await orgOn('pay_as_you_go', 1000);
    const { taskId, desktop } = await startSleepingTask(service, key);
    desktops.push(desktop);
    clock.advance(150_000);
    const stopped = await service.api(key, 'POST', `/v1/tasks/${taskId}/stop`);
    expect(stopped.body.status).to.equal('stopped');
    const billed = stopped.body.billed_minutes as number;
    expect(billed).to.equal(3);
    const today = clock.now().toISOString().slice(0, 10);

    const { page, context, offsite } = await openBilling(orgId, 'owner', { width: 390, axe: true });
    await page.getByTestId('by-day').locator('tbody td', { hasText: today }).waitFor();
    expect(await cellsOf(page, 'by-day')).to.deep.equal([[today, String(billed)]]);
    expect(await cellsOf(page, 'by-agent')).to.deep.equal([['default', String(billed)]]);
    expect(await page.getByTestId('chart-summary').textContent()).to.contain(`${billed} minutes on 1 day; the most on ${today}, ${billed} minutes`);
    expect(await page.getByTestId('minutes-used').textContent()).to.match(new RegExp(`^${billed} \\(${billed} on people's computers`));
    expect(await page.getByTestId('balance').textContent()).to.equal(`$${(10 - billed * 0.1).toFixed(2)}`);

    const canvas = page.locator('#usage-chart');
    const box = (await canvas.boundingBox())!;
    expect(box.width).to.be.greaterThan(0);
    expect(box.height).to.be.greaterThan(0);
    expect(await canvas.getAttribute('aria-label')).to.contain(`${billed} minutes`);
    // The chart holds the same figures: every day of the month, the task's minutes on today.
    const drawn = await page.evaluate<{ labels: string[]; values: number[] }>(
      "(() => { const chart = Chart.getChart(document.getElementById('usage-chart')); return { labels: chart.data.labels, values: chart.data.datasets[0].data }; })()",
    );
    const day = Number(today.slice(8));
    expect(drawn.labels[day - 1]).to.equal(String(day));
    expect(drawn.values[day - 1]).to.equal(billed);
    expect(drawn.values.reduce((sum, value) => sum + value, 0)).to.equal(billed);

    await page.getByTestId('payments').locator('tbody tr').first().waitFor();
    const payments = await cellsOf(page, 'payments');
    expect(payments).to.have.length(1);
    expect(payments[0]!.slice(1, 5)).to.deep.equal(['Credit', '$10.00', '$10.00', 'Credit of $10.00']);

    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await page.evaluate<number>('document.documentElement.scrollWidth'), 'no sideways scrolling at 390 px').to.be.at.most(390);
    expect(offsite).to.deep.equal([]);
    await context.close();
  });

  it('refuses a top-up without a card (409), tops up from the page with a saved card (the Stripe stand-in) and lists it; saves auto top-up; a declined card shows the API\'s 402', async () => {
    const { orgId, key } = await orgOn('pay_as_you_go');
    const { page, context } = await openBilling(orgId, 'admin', { axe: true });
    await page.getByTestId('card-state').filter({ hasText: 'No card is saved yet' }).waitFor();
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await page.getByTestId('top-up-status').filter({ hasText: 'No top-up' }).waitFor();
    expect(await page.getByTestId('top-up-status').textContent()).to.equal('No top-up: Save a card first (POST /v1/billing/card)');

    const setup = await service.api(key, 'POST', '/v1/billing/card');
    expect(setup.status).to.equal(200);
    const customer = (await service.running.container.db('billing_accounts').where({ org_id: orgId }).first()).provider_customer_id;
    const saved = await sendStripeWebhook(service.baseUrl, stripeEvent('setup_intent.succeeded', { id: setup.body.setup_intent_id, object: 'setup_intent', customer, payment_method: 'pm_card_visa', status: 'succeeded' }), WEBHOOK_SECRET);
    expect(saved.status).to.equal(200);

    await page.reload();
    await page.getByTestId('card-state').filter({ hasText: 'A card is saved.' }).waitFor();
    await page.getByLabel('Amount in dollars ($5 to $1,000)').fill('25');
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await page.getByTestId('top-up-status').filter({ hasText: 'Added' }).waitFor();
    expect(await page.getByTestId('top-up-status').textContent()).to.equal('Added $25.00; the balance is $25.00.');
    await page.getByTestId('payments').locator('tbody tr', { hasText: 'Top-up' }).waitFor();
    const [row] = await cellsOf(page, 'payments');
    expect(row!.slice(1, 4)).to.deep.equal(['Top-up', '$25.00', '$25.00']);
    expect(row![4]).to.match(/pi_\d+/);
    await page.getByTestId('balance').filter({ hasText: '$25.00' }).waitFor();
    expect(stripe.requests.filter((request) => request.path === '/v1/payment_intents').map((request) => request.fields.amount)).to.deep.equal(['2500']);

    await page.getByLabel('Top up automatically when the balance runs low').check();
    await page.getByLabel('Amount of each top-up, in dollars ($5 to $1,000)').fill('20');
    await page.getByLabel('When the balance falls below, in dollars').fill('5');
    await page.getByLabel('At most this much a month, in dollars').fill('100');
    await page.getByRole('button', { name: 'Save auto top-up' }).click();
    await page.getByTestId('auto-top-up-status').filter({ hasText: 'Saved' }).waitFor();
    expect(await page.getByTestId('auto-top-up-status').textContent()).to.equal('Saved: auto top-up is on.');
    expect((await service.api(key, 'GET', '/v1/billing')).body.auto_topup).to.include({ enabled: true, amount_cents: 2000, threshold_cents: 500, monthly_limit_cents: 10000 });
    // More a top-up than the month allows: the API's 400 shown under the form, nothing changed.
    await page.getByLabel('At most this much a month, in dollars').fill('10');
    await page.getByRole('button', { name: 'Save auto top-up' }).click();
    await page.getByTestId('auto-top-up-status').filter({ hasText: 'Not saved' }).waitFor();
    expect(await page.getByTestId('auto-top-up-status').textContent()).to.equal('Not saved: amount_cents (2000) must not be more than monthly_limit_cents (1000)');

    stripe.declineNext();
    await page.getByRole('button', { name: 'Top up', exact: true }).click();
    await page.getByTestId('top-up-status').filter({ hasText: 'No top-up' }).waitFor();
    expect(await page.getByTestId('top-up-status').textContent()).to.match(/^No top-up: The card was declined .*update the card/);
    expect(await accessibilityProblems(page), 'with the lists filled and the forms\' answers shown').to.deep.equal([]);
    await context.close();
  });

  it('lists top-ups and credits newest first, 20 at a time, with "Older entries" for the rest', async () => {
    const { orgId } = await orgOn('free');
    for (let n = 1; n <= 22; n++) await billing().levers.credit(orgId, n * 100, operator(orgId), `Credit number ${n}`);
    const { page, context } = await openBilling(orgId, 'owner');
    await page.getByTestId('payments').locator('tbody tr').first().waitFor();
    const first = await cellsOf(page, 'payments');
    expect(first).to.have.length(20);
    expect(first[0]!.slice(1, 5)).to.deep.equal(['Credit', '$22.00', '$253.00', 'Credit number 22']);
    await page.getByRole('button', { name: 'Older entries' }).click();
    await page.getByTestId('payments').locator('tbody tr').nth(21).waitFor();
    const all = await cellsOf(page, 'payments');
    expect(all.map((row) => row[4])).to.deep.equal(Array.from({ length: 22 }, (_, index) => `Credit number ${22 - index}`));
    expect(all[21]!.slice(2, 4)).to.deep.equal(['$1.00', '$1.00']);
    expect(await page.getByRole('button', { name: 'Older entries' }).isHidden()).to.equal(true);
    await context.close();
  });

  describe('on a server without a payment provider', () => {
    let bare: TestService;
    before(async () => {
      bare = await startTestService({}, ['web']);
    });
    after(async () => {
      await bare?.stop();
    });

    it('a top-up and turning on auto top-up show the API\'s 503 payments_unavailable message; a member reads why the top-ups are not shown', async () => {
      const { orgId } = await bare.newOrg('No payments org');
      await bare.running.container.billing.levers.setPlan(orgId, 'free', operator(orgId), { operator: true });
      const open = async (role: 'admin' | 'member') => {
        const person = await addMember(bare, orgId, role);
        const context = await browser.newContext();
        const page = await context.newPage();
        await signInWithLink(page, person.signInUrl);
        await page.goto(`${bare.baseUrl}/console/billing`);
        await page.getByTestId('plan-name').filter({ hasText: 'Free' }).waitFor();
        return { page, context };
      };

      const admin = await open('admin');
      await admin.page.getByTestId('card-state').filter({ hasText: 'Payments are not set up on this server.' }).waitFor();
      await admin.page.getByRole('button', { name: 'Top up', exact: true }).click();
      await admin.page.getByTestId('top-up-status').filter({ hasText: 'No top-up' }).waitFor();
      expect(await admin.page.getByTestId('top-up-status').textContent()).to.equal('No top-up: Payments are not set up on this server (STRIPE_SECRET_KEY is unset); the free plan works without them');
      await admin.page.getByLabel('Top up automatically when the balance runs low').check();
      await admin.page.getByRole('button', { name: 'Save auto top-up' }).click();
      await admin.page.getByTestId('auto-top-up-status').filter({ hasText: 'Not saved' }).waitFor();
      expect(await admin.page.getByTestId('auto-top-up-status').textContent()).to.contain('Payments are not set up on this server');
      expect(await admin.page.getByTestId('payments').locator('tbody').textContent()).to.contain('No top-ups or credits yet.');
      await admin.context.close();

      const member = await open('member');
      await member.page.getByTestId('payments-status').filter({ hasText: 'Cannot read' }).waitFor();
      expect(await member.page.getByTestId('payments-status').textContent()).to.equal('Cannot read the top-ups: This needs the admin role (your role is member); ask an admin or owner of the org');
      // What every member may read is there: the plan and this month's usage.
      await waitFor(async () => (await member.page.getByTestId('free-minutes-left').textContent()) === '60 of 60', 5_000, 'the free minutes left');
      await member.context.close();
    });
  });
});
