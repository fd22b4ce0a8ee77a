import { expect } from 'chai';
import type { Browser } from 'playwright-core';
import { startTestService, type TestService } from '../support/service';
import { launchChromium } from '../support/console';

describe('Bull Board at /admin/queues', () => {
  it('is closed without DESKHAND_ADMIN_TOKEN', async () => {
    const service = await startTestService({}, ['web']);
    try {
      const response = await service.api(null, 'GET', '/admin/queues');
      expect(response.status).to.equal(403);
      expect(response.body.error.type).to.equal('permission');
    } finally {
      await service.stop();
    }
  });

  describe('with an admin token', () => {
    const token = 'support-token-0123456789';
    let service: TestService;
    before(async () => {
      service = await startTestService({ DESKHAND_ADMIN_TOKEN: token }, ['web']);
    });
    after(async () => service.stop());

    it('refuses an org API key and a wrong token with 401', async () => {
      const { key } = await service.newOrg();
      expect((await service.api(key, 'GET', '/admin/queues')).status).to.equal(401);
      expect((await service.api('wrong-token-000000000', 'GET', '/admin/queues')).status).to.equal(401);
    });

    it('serves the board and its queue list to the token, by Bearer or Basic', async () => {
      const page = await service.api(token, 'GET', '/admin/queues');
      expect(page.status).to.equal(200);
      expect(page.body).to.contain('<html');
      const basic = Buffer.from(`support:${token}`).toString('base64');
      const queues = await service.api(null, 'GET', '/admin/queues/api/queues', undefined, { authorization: `Basic ${basic}` });
      expect(queues.status).to.equal(200);
      const names = queues.body.queues.map((q: { name: string }) => q.name).sort();
      expect(names).to.deep.equal(['evals', 'guardrails', 'maintenance', 'task-steps', 'tool-calls', 'webhooks']);
    });
  });
});

describe('Bull Board in a browser (Chromium)', function () {
  this.timeout(60_000);
  const token = 'support-token-0123456789';
  let service: TestService;
  let browser: Browser;
  before(async () => {
    service = await startTestService({ DESKHAND_ADMIN_TOKEN: token }, ['web']);
    browser = await launchChromium();
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('shows the queues and requests nothing from outside the service (no web fonts, no CDN)', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'support', password: token } });
    const page = await context.newPage();
    const requested: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    try {
      const response = await page.goto(`${service.baseUrl}/admin/queues`);
      expect(response?.status()).to.equal(200);
      expect(await response?.text()).to.not.match(/https?:\/\/(?!127\.0\.0\.1)[^"' ]*\.(css|js|woff2?)|fonts\.googleapis/);
      await page.getByText('task-steps').first().waitFor();
      await page.waitForLoadState('networkidle');
      expect(requested.length).to.be.greaterThan(1);
      expect(requested.filter((url) => !url.startsWith(`${service.baseUrl}/`))).to.deep.equal([]);
    } finally {
      await context.close();
    }
  });
});
