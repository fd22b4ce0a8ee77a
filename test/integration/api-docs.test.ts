import fs from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser } from 'playwright-core';
import { startTestService, type TestService } from '../support/service';

/** Debian's Chromium, installed by `scripts/setup.sh --test`; the test never downloads a browser. */
const CHROMIUM = '/usr/bin/chromium';

describe('GET /docs and GET /', function () {
  this.timeout(60_000);
  let service: TestService;
  before(async () => {
    service = await startTestService({}, ['web']);
  });
  after(async () => service.stop());

  it('GET / points to /docs, /openapi.json and /healthz', async () => {
    const index = await service.api(null, 'GET', '/');
    expect(index.status).to.equal(200);
    const base = service.running.container.config.baseUrl.replace(/\/+$/, '');
    expect(index.body).to.deep.include({ docs: `${base}/docs`, openapi: `${base}/openapi.json`, health: `${base}/healthz` });
  });

  it('serves the reference page with every script and stylesheet it names from this service, under a policy that runs only those', async () => {
    const page = await fetch(`${service.baseUrl}/docs`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.match(/^text\/html/);
    const policy = page.headers.get('content-security-policy') ?? '';
    expect(policy).to.include("default-src 'none'").and.include("script-src 'self'");
    expect(policy).not.to.match(/script-src[^;]*(unsafe-inline|unsafe-eval|https?:)/);
    const html = await page.text();
    expect(html).not.to.match(/<script>(?!<\/script>)/); // no inline script: the policy would refuse it
    const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((match) => match[1]!).filter((url) => !url.endsWith('.json'));
    expect(assets).to.have.length.greaterThanOrEqual(3);
    for (const asset of assets) {
      expect(asset, 'a path on this service, not another host').to.match(/^\/[^/]/);
      const response = await fetch(`${service.baseUrl}${asset}`);
      expect(response.status, asset).to.equal(200);
      expect(response.headers.get('content-type'), asset).to.match(/javascript|css/);
      expect((await response.text()).length, asset).to.be.greaterThan(100);
    }
    expect((await fetch(`${service.baseUrl}/docs/assets/package.json`)).status).to.equal(404);
    expect((await fetch(`${service.baseUrl}/docs/assets/..%2Fpackage.json`)).status).to.equal(404);
  });

  describe('in a browser without the internet (Chromium)', () => {
    let browser: Browser;
    before(async () => {
      if (!fs.existsSync(CHROMIUM)) throw new Error(`Chromium is not installed at ${CHROMIUM}; install it with \`bash scripts/setup.sh --test\`.`);
      browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'], timeout: 30_000 });
    });
    after(async () => browser?.close());

    it('renders the operations of /openapi.json, loading nothing from elsewhere', async () => {
      const context = await browser.newContext();
      const elsewhere: string[] = [];
      const refused: string[] = [];
      // Anything not asked of this service fails, as it would offline.
      await context.route('**/*', (route) => {
        const url = route.request().url();
        if (url.startsWith(service.baseUrl)) return route.continue();
        elsewhere.push(url);
        return route.abort();
      });
      const page = await context.newPage();
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) refused.push(message.text());
      });
      const response = await page.goto(`${service.baseUrl}/docs`);
      expect(response?.status()).to.equal(200);
      await page.locator('.opblock').first().waitFor({ state: 'visible', timeout: 30_000 });
      const operations = await page.locator('.opblock').count();
      const document = (await service.api(null, 'GET', '/openapi.json')).body;
      const documented = Object.values(document.paths as Record<string, object>).reduce((sum, operations) => sum + Object.keys(operations).length, 0);
      expect(operations).to.equal(documented);
      expect(await page.locator('.opblock-summary-path', { hasText: '/v1/tasks/{task_id}' }).first().isVisible()).to.equal(true);
      expect(elsewhere).to.deep.equal([]);
      expect(refused).to.deep.equal([]);
      await context.close();
    });
  });
});
