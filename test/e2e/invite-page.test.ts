import fs from 'node:fs';
import { expect } from 'chai';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, waitFor, type TestService } from '../support/service';

/** Debian's Chromium, installed by `scripts/setup.sh --test`; the test never downloads a browser. */
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Distinct colours and the spread of brightness among the pixels of a PNG. */
async function pixelVariety(png: Buffer): Promise<{ width: number; height: number; colours: number; darkest: number; lightest: number }> {
  const image = await loadImage(png);
  const canvas = createCanvas(image.width, image.height);
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const { data } = context.getImageData(0, 0, image.width, image.height);
  const colours = new Set<number>();
  let darkest = 255;
  let lightest = 0;
  for (let i = 0; i < data.length; i += 4) {
    const [r, g, b] = [data[i]!, data[i + 1]!, data[i + 2]!];
    colours.add((r << 16) | (g << 8) | b);
    const brightness = Math.round((r + g + b) / 3);
    darkest = Math.min(darkest, brightness);
    lightest = Math.max(lightest, brightness);
  }
  return { width: image.width, height: image.height, colours: colours.size, darkest, lightest };
}

/**
 * How the code element is laid out, run in the page (a string: these tests compile without the
 * DOM's types): the distinct tops of its text's line boxes (1: one line), its text's height
 * against one line's, and whether it or the page is wider than shown.
 */
const CODE_LAYOUT = `(() => {
  const element = document.querySelector('[data-testid="code"]');
  const range = document.createRange();
  range.selectNodeContents(element);
  const lineTops = new Set([...range.getClientRects()].map((rect) => Math.round(rect.top)));
  return {
    lines: lineTops.size,
    textHeight: range.getBoundingClientRect().height,
    lineHeight: parseFloat(getComputedStyle(element).lineHeight),
    scrollWidth: element.scrollWidth,
    clientWidth: element.clientWidth,
    pageWidth: document.documentElement.scrollWidth,
  };
})()`;

describe('the invite page in a browser (Chromium)', function () {
  this.timeout(60_000);
  let service: TestService;
  let key: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  /** The session's invite link, pointed at this test service (the link carries BASE_URL). */
  const local = (inviteUrl: string) => {
    const url = new URL(inviteUrl);
    return `${service.baseUrl}${url.pathname}${url.search}`;
  };
  const newSession = async (agent: Record<string, unknown>) => {
    const created = await service.api(key, 'POST', '/v1/agents', agent);
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const session = await service.api(key, 'POST', '/v1/sessions', { agent_id: agent.agent_id });
    expect(session.status, JSON.stringify(session.body)).to.equal(200);
    return session.body as { code: string; invite_url: string };
  };

  before(async () => {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(`Chromium is not installed at ${CHROMIUM}; browser tests need it. Install it with \`bash scripts/setup.sh --test\` (apt-get install chromium).`);
    }
    // chromium.launch gives every browser a fresh temporary profile (user-data dir) of its own.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, timeout: 30_000 }).catch((error: Error) => {
      throw new Error(`Chromium at ${CHROMIUM} did not start: ${error.message}`);
    });
    service = await startTestService({}, ['web']);
    ({ key } = await service.newOrg('Invite page org'));
  });
  beforeEach(async () => {
    // bypassCSP: the page's Content-Security-Policy would stop an injected script by itself;
    // switching it off lets the escaping test show that the HTML alone is safe.
    context = await browser.newContext({ bypassCSP: true, viewport: { width: 1000, height: 900 } });
    page = await context.newPage();
  });
  afterEach(async () => context?.close());
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  it('shows the agent\'s greeting, its display name and the pairing code, and the code renders as a picture', async () => {
    const session = await newSession({ agent_id: 'invite-helper', display_name: 'Acme Helper', greeting: 'Hi! I will set up your printer.' });
    const response = await page.goto(local(session.invite_url));
    expect(response?.status()).to.equal(200);
    expect(response?.headers()['content-security-policy']).to.equal("default-src 'none'; style-src 'unsafe-inline'; img-src 'self'");

    await page.getByTestId('code').waitFor({ state: 'visible' });
    expect(await page.getByTestId('greeting').innerText()).to.equal('Hi! I will set up your printer.');
    expect(await page.locator('h1').innerText()).to.equal('Acme Helper would like to help on your computer');
    expect(await page.getByTestId('code').innerText()).to.equal(session.code);
    expect(await page.title()).to.equal(`Acme Helper: connect with ${session.code}`);
    const visible = await page.locator('body').innerText();
    expect(visible).to.include('Hi! I will set up your printer.').and.include('Acme Helper').and.include(session.code);

    const box = await page.getByTestId('code').boundingBox();
    expect(box, 'the code box has a size on screen').to.not.equal(null);
    const png = await page.getByTestId('code').screenshot();
    expect([...png.subarray(0, 8)]).to.deep.equal([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    expect(png.length).to.be.within(1_000, 500_000);
    const pixels = await pixelVariety(png);
    // The element's own box (device scale 1; whole pixels around a fractional box): 44px type
    // with padding, inside a 560px card.
    expect(pixels.width).to.be.closeTo(box!.width, 2);
    expect(pixels.height).to.be.closeTo(box!.height, 2);
    expect(pixels.width).to.be.within(200, 700);
    expect(pixels.height).to.be.within(50, 200);
    // A blank box is one colour; the code is dark glyphs on a light tint with anti-aliased edges.
    expect(pixels.colours).to.be.greaterThan(20);
    expect(pixels.lightest - pixels.darkest).to.be.greaterThan(100);
  });

  it('answers 404 with "This invite is no longer valid" for an unknown code', async () => {
    const response = await page.goto(`${service.baseUrl}/invite/ZZZZ-ZZZZ`);
    expect(response?.status()).to.equal(404);
    expect(await page.locator('h1').innerText()).to.equal('This invite is no longer valid');
    expect(await page.locator('body').innerText()).to.include('No invite has this code.');
    expect(await page.getByTestId('code').count()).to.equal(0);
  });

  it('answers 404 with "This invite is no longer valid" once the session is expired', async () => {
    const session = await newSession({ agent_id: 'invite-expiring', display_name: 'Soon Gone', greeting: 'Hello there' });
    const before = await page.goto(local(session.invite_url));
    expect(before?.status()).to.equal(200);
    const expired = await service.api(key, 'POST', `/v1/sessions/${session.code}/expire`);
    expect(expired.body.status).to.equal('expired');

    const response = await page.goto(local(session.invite_url));
    expect(response?.status()).to.equal(404);
    expect(await page.locator('h1').innerText()).to.equal('This invite is no longer valid');
    const visible = await page.locator('body').innerText();
    expect(visible).to.include('The code has expired.');
    expect(visible).to.not.include('Hello there');
    expect(visible).to.not.include(session.code);
  });

  it('shows a greeting and a name holding HTML as text, and runs none of it', async () => {
    const greeting = '<script>window.__pwned = "script"</script><img src="x" onerror="window.__pwned = \'img\'"> & "quotes"';
    const session = await newSession({ agent_id: 'invite-escaping', display_name: '<b onclick="x()">Bold</b>', greeting });
    const response = await page.goto(local(session.invite_url));
    expect(response?.status()).to.equal(200);
    await page.getByTestId('greeting').waitFor({ state: 'visible' });
    expect(await page.getByTestId('greeting').innerText()).to.equal(greeting);
    expect(await page.locator('h1').innerText()).to.equal('<b onclick="x()">Bold</b> would like to help on your computer');
    expect(await page.locator('main script, main img, main b').count()).to.equal(0);
    // The <img> would fail to load at once and fire onerror; wait for the page's load to settle.
    await page.waitForLoadState('load');
    expect(await page.evaluate(() => (globalThis as { __pwned?: string }).__pwned)).to.equal(undefined);
    const html = (await response!.text()) as string;
    expect(html).to.include('&lt;script&gt;window.__pwned = &quot;script&quot;&lt;/script&gt;');
  });
  it('uses the service\'s name when the agent has no display_name', async () => {
    const session = await newSession({ agent_id: 'invite-nameless', greeting: 'Hello' });
    await page.goto(local(session.invite_url));
    expect(await page.locator('h1').innerText()).to.equal('Deskhand would like to help on your computer');
  });

  it('keeps the code on one line, without scrolling sideways, on a phone 390 px wide', async () => {
    const session = await newSession({ agent_id: 'invite-phone', display_name: 'Phone Helper', greeting: 'Hi' });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(local(session.invite_url));
    await page.getByTestId('code').waitFor({ state: 'visible' });
    const layout = await page.evaluate<{ lines: number; textHeight: number; lineHeight: number; scrollWidth: number; clientWidth: number; pageWidth: number }>(CODE_LAYOUT);
    expect(layout.lines, JSON.stringify(layout)).to.equal(1);
    expect(layout.textHeight, JSON.stringify(layout)).to.be.at.most(layout.lineHeight + 1);
    expect(layout.scrollWidth, JSON.stringify(layout)).to.be.at.most(layout.clientWidth);
    expect(layout.pageWidth, JSON.stringify(layout)).to.be.at.most(390);
    expect(await page.getByTestId('code').innerText()).to.equal(session.code);
  });

  it('shows the developer hint (npx deskhand desktop) in development', async () => {
    const session = await newSession({ agent_id: 'invite-dev', display_name: 'Dev Helper', greeting: 'Hi' });
    await page.goto(local(session.invite_url));
    expect(await page.getByTestId('developer-hint').innerText()).to.contain(`npx deskhand desktop --code ${session.code}`);
  });

  it('shows no developer hint in production', async () => {
    const production = await startTestService({ DESKHAND_ENV: 'production' }, ['web']);
    try {
      const { key: liveKey } = await production.newOrg('Production invite org');
      const session = await production.api(liveKey, 'POST', '/v1/sessions', {});
      expect(session.status, JSON.stringify(session.body)).to.equal(200);
      const response = await page.goto(`${production.baseUrl}/invite/${session.body.code}`);
      expect(response?.status()).to.equal(200);
      expect(await page.getByTestId('code').innerText()).to.equal(session.body.code);
      expect(await page.getByTestId('developer-hint').count()).to.equal(0);
      expect(await page.locator('body').innerText()).to.not.contain('npx deskhand');
    } finally {
      await production.stop();
    }
  });

  it('shows the session\'s state once a computer paired: connected (with its name), disconnected, ended', async () => {
    const session = await newSession({ agent_id: 'invite-states', display_name: 'State Helper', greeting: 'Hi' });
    const status = async () => (await service.api(key, 'GET', `/v1/sessions/${session.code}`)).body.status as string;
    await page.goto(local(session.invite_url));
    expect(await page.getByTestId('state').count(), 'no state before pairing').to.equal(0);

    const client = new DesktopClient({
      baseUrl: service.baseUrl, code: session.code, os: 'mac', appVersion: '1.0.20', name: 'Ana\'s MacBook', width: 1440, height: 900, accessibility: true, delayMs: 0, out: () => {},
    });
    await client.start();
    try {
      await waitFor(async () => (await status()) === 'connected', 10_000, 'the session connected');
      await page.goto(local(session.invite_url));
      expect(await page.getByTestId('state').getAttribute('data-state')).to.equal('connected');
      expect(await page.getByTestId('state').innerText()).to.contain('Connected to Ana\'s MacBook.');
    } finally {
      await client.close();
    }
    await waitFor(async () => (await status()) === 'disconnected', 10_000, 'the session disconnected');
    const away = await page.goto(local(session.invite_url));
    expect(away?.status()).to.equal(200);
    expect(await page.getByTestId('state').getAttribute('data-state')).to.equal('disconnected');
    expect(await page.getByTestId('state').innerText()).to.contain('Disconnected.');
    expect(await page.getByTestId('code').innerText()).to.equal(session.code);

    expect((await service.api(key, 'POST', `/v1/sessions/${session.code}/expire`)).body.status).to.equal('expired');
    const ended = await page.goto(local(session.invite_url));
    expect(ended?.status()).to.equal(404);
    expect(await page.locator('h1').innerText()).to.equal('This session has ended');
    expect(await page.getByTestId('state').getAttribute('data-state')).to.equal('ended');
    expect(await page.locator('body').innerText()).to.not.contain(session.code);
  });
});
