import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { startTestService, type TestService } from '../support/service';
import { accessibilityProblems, addMember, launchChromium, signInWithLink } from '../support/console';

describe('signing in to the console in a browser (Chromium)', function () {
  this.timeout(90_000);
  let service: TestService;
  let browser: Browser;
  let orgId: string;

  before(async () => {
    service = await startTestService({}, ['web']);
    ({ orgId } = await service.newOrg('Browser org'));
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('signs in with the link, sets a password, signs out, signs back in with it; the pages pass axe at 390 px', async () => {
    const owner = await addMember(service, orgId, 'owner');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    const page = await context.newPage();
    const offsite: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });

    await signInWithLink(page, owner.signInUrl);
    await page.getByText('You are signed in.').waitFor();
    expect(await page.getByTestId('role').textContent()).to.equal('owner');
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    const cookie = (await context.cookies()).find((entry) => entry.name === 'deskhand_console')!;
    expect(cookie).to.include({ httpOnly: true, secure: true, sameSite: 'Lax' });
    expect(await page.evaluate<string>('document.cookie'), 'the session cookie is out of scripts\' reach').to.not.contain('deskhand_console');

    await page.getByLabel(/New password/).fill('a long enough password');
    await page.getByRole('button', { name: 'Save password' }).click();
    await page.getByText('Password saved.').waitFor();

    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in$/);
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    // Signed out: the console sends the person to sign in, and back where they were after.
    await page.goto(`${service.baseUrl}/console/account`);
    await page.waitForURL(/\/console\/sign-in\?next=/);
    await page.getByLabel('Email').fill(owner.email);
    await page.getByLabel('Password').fill('not the password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    expect(await page.getByTestId('sign-in-error').textContent()).to.equal('Wrong email or password');
    await page.getByLabel('Password').fill('a long enough password');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(/\/console\/account$/);
    expect(await page.getByTestId('who').textContent()).to.equal(owner.email);
    const width = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(width, 'no sideways scrolling at 390 px').to.be.at.most(390);
    expect(offsite).to.deep.equal([]);
    await context.close();
  });

  it('a long email address and org name wrap in the header at 390 px instead of scrolling the page sideways', async () => {
    const { orgId: longOrg } = await service.newOrg('Northern Hemisphere Logistics and Warehousing Cooperative');
    const person = await addMember(service, longOrg, 'member', 'margaret.wollstonecraft-whitmore@operations.example-company.com');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 } });
    const page = await context.newPage();
    await signInWithLink(page, person.signInUrl);
    for (const pathname of ['/console/account', '/console/tasks', '/console/start-states']) {
      await page.goto(`${service.baseUrl}${pathname}`);
      expect(await page.getByTestId('who').textContent()).to.equal(person.email);
      const width = await page.evaluate<number>('document.documentElement.scrollWidth');
      expect(width, `no sideways scrolling at 390 px on ${pathname}`).to.be.at.most(390);
    }
    await context.close();
  });

  it('a page that does not exist answers a not-found page in the console\'s layout', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const response = await page.goto(`${service.baseUrl}/console/no-such-page`);
    expect(response?.status()).to.equal(404);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Not found');
    await context.close();
  });
});
