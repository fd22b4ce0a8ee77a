import { expect } from 'chai';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import { startTestService, type TestService } from '../support/service';
import { connectDesktop, follow, script } from '../support/tasks';
import { accessibilityProblems, addMember, consoleSession, launchChromium, signInWithLink } from '../support/console';

/** What the page script sees of the recorded screen: which frame, whether it loaded, and the marks on it. */
interface FrameView {
  src: string;
  naturalWidth: number;
  slider: string;
  marks: Array<{ x: number; y: number; label: string; centerX: number; centerY: number }>;
  image: { left: number; top: number; width: number; height: number };
}

function frameView(page: Page): Promise<FrameView> {
  return page.evaluate(() => {
    // Runs in the page (the test's TypeScript has no DOM types).
    const doc = (globalThis as any).document;
    const image = doc.getElementById('frame-image');
    const box = image.getBoundingClientRect();
    return {
      src: image.getAttribute('src') ?? '',
      naturalWidth: image.complete ? image.naturalWidth : 0,
      slider: doc.getElementById('frame-slider').value,
      image: { left: box.left, top: box.top, width: box.width, height: box.height },
      marks: Array.from(doc.querySelectorAll('.frame-marker')).map((marker: any) => {
        const at = marker.getBoundingClientRect();
        return { x: Number(marker.dataset.x), y: Number(marker.dataset.y), label: marker.dataset.label, centerX: at.left + at.width / 2, centerY: at.top + at.height / 2 };
      }),
    };
  });
}

/** Waits until frame `seq` is shown and its PNG has loaded in the browser. */
async function frameShown(page: Page, taskId: string, seq: number): Promise<FrameView> {
  await page.waitForFunction(
    ([id, n]) => {
      const image = (globalThis as any).document.getElementById('frame-image');
      return image.getAttribute('src') === `/v1/tasks/${id}/recording/${n}` && image.complete && image.naturalWidth > 0;
    },
    [taskId, seq] as const,
  );
  return frameView(page);
}

const SCREEN = { width: 1440, height: 900 };

describe('the console\'s tasks pages in a browser (Chromium)', function () {
  this.timeout(120_000);
  let service: TestService;
  let browser: Browser;
  let orgId: string;
  let key: string;
  const clients: DesktopClient[] = [];
  const contexts: BrowserContext[] = [];

  const desktop = async () => {
    const made = await connectDesktop(service, key, SCREEN);
    clients.push(made.client);
    return made;
  };
  const startTask = async (code: string, prompt: string): Promise<string> => {
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return started.body.task_id;
  };
  /** A browser page signed in as a new person of `org` with `role`. */
  const signedInPage = async (options: { org?: string; axe?: boolean } = {}) => {
    const member = await addMember(service, options.org ?? orgId, 'member');
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, ...(options.axe ? { bypassCSP: true } : {}) });
    contexts.push(context);
    const page = await context.newPage();
    await signInWithLink(page, member.signInUrl);
    return page;
  };
  const taskUrl = (taskId: string) => `${service.baseUrl}/console/tasks/${taskId}`;

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1' });
    ({ orgId, key } = await service.newOrg('Tasks console org'));
    browser = await launchChromium();
  });
  afterEach(async () => {
    for (const context of contexts.splice(0)) await context.close();
    for (const client of clients.splice(0)) await client.close();
  });
  after(async () => {
    await browser?.close();
    await service?.stop();
  });

  describe('replay of a finished task', () => {
    let taskId: string;
    let events: any[];
    let frames: number;

    before(async () => {
      const { code } = await desktop();
      taskId = await startTask(code, script('open Browser', 'go shop.example.com', 'click "Add to cart"', 'done "Added to the cart"'));
      const followed = await follow(service, key, taskId);
      expect(followed.task.status).to.equal('completed');
      events = followed.events;
      frames = followed.task.recording.frames;
    });

    /** The frame an action made, and the action, for the first action of `type`. */
    const actionOf = (type: string) => {
      const action = events.find((event) => event.type === 'action' && event.data.action.type === type);
      const result = events.find((event) => event.type === 'action_result' && event.data.act_id === action.data.act_id);
      return { action, frame: result.data.frame as number, screen: result.data.screen as { width: number; height: number } };
    };

    it('shows the task, loads frames as images, and moves between them with the keyboard and the slider', async () => {
      const page = await signedInPage();
      await page.goto(taskUrl(taskId));
      expect(await page.getByTestId('status').textContent()).to.equal('completed');
      expect(await page.getByTestId('result').textContent()).to.equal('Added to the cart');
      expect(await page.getByTestId('prompt').textContent()).to.contain('click "Add to cart"');
      await page.getByText(`${events.length} events.`).waitFor();
      const trace = (await service.api(key, 'GET', `/v1/tasks/${taskId}?include=trace`)).body.trace;
      const shownTime = (iso: string) => page.evaluate((at) => new Date(at).toLocaleString(), iso);
      await page.locator('#task-ended').filter({ hasText: await shownTime(trace.ended_at) }).waitFor();
      expect(await page.locator('#task-started').textContent()).to.equal(await shownTime(trace.started_at));

      const first = await frameShown(page, taskId, 1);
      expect(first.naturalWidth).to.equal(SCREEN.width);
      expect(first.slider).to.equal('1');

      await page.locator('#frame-stage').focus();
      await page.keyboard.press('End');
      expect((await frameShown(page, taskId, frames)).slider).to.equal(String(frames));
      await page.keyboard.press('ArrowLeft');
      await frameShown(page, taskId, frames - 1);
      await page.keyboard.press('Home');
      await frameShown(page, taskId, 1);
      await page.keyboard.press('ArrowRight');
      await frameShown(page, taskId, 2);
      await page.keyboard.press('ArrowLeft');
      await page.keyboard.press('ArrowLeft'); // stays on the first
      await frameShown(page, taskId, 1);

      await page.getByRole('slider', { name: 'Frame' }).fill('3');
      await frameShown(page, taskId, 3);
      expect(await page.locator('#frame-caption').textContent()).to.match(new RegExp(`^Frame 3 of ${frames}`));
    });

    it('clicking an event shows its frame, with a marker where the action clicked or typed', async () => {
      const page = await signedInPage();
      await page.goto(taskUrl(taskId));
      await frameShown(page, taskId, 1);

      const click = actionOf('click');
      expect(click.screen).to.deep.equal(SCREEN);
      await page.locator(`#task-events li[data-cursor="${click.action.cursor}"] button`).click();
      const shown = await frameShown(page, taskId, click.frame);
      expect(shown.marks.map(({ x, y, label }) => ({ x, y, label }))).to.deep.equal([{ x: click.action.data.action.x, y: click.action.data.action.y, label: 'Click' }]);
      // The marker sits over the image where the click was, in proportion to the screen.
      const [mark] = shown.marks;
      expect(mark!.centerX - shown.image.left).to.be.closeTo((click.action.data.action.x / SCREEN.width) * shown.image.width, 1.5);
      expect(mark!.centerY - shown.image.top).to.be.closeTo((click.action.data.action.y / SCREEN.height) * shown.image.height, 1.5);
      expect(await page.locator(`#task-events li[data-cursor="${click.action.cursor}"]`).getAttribute('aria-current')).to.equal('true');
      expect(await page.locator('#frame-caption').textContent()).to.equal(`Frame ${click.frame} of ${frames}: after ${click.action.message}`);

      // Typing the address went into the address bar: the mark is on the field that had the focus.
      const typed = actionOf('type');
      expect(typed.action.data.at).to.have.keys('x', 'y');
      await page.locator(`#task-events li[data-cursor="${typed.action.cursor}"] button`).click();
      const typedFrame = await frameShown(page, taskId, typed.frame);
      expect(typedFrame.marks.map(({ x, y, label }) => ({ x, y, label }))).to.deep.equal([{ ...typed.action.data.at, label: 'Typed here' }]);

      // A key press marks nothing.
      const key = actionOf('key');
      await page.locator(`#task-events li[data-cursor="${key.action.cursor}"] button`).click();
      expect((await frameShown(page, taskId, key.frame)).marks).to.deep.equal([]);
    });
  });

  describe('answering from the page', () => {
    it('sends the team\'s answer while the reference desktop client waits; the task then completes', async () => {
      const { code } = await desktop();
      const taskId = await startTask(code, script('ask "Which size?" "S" "M" "L"', 'done "Noted size {answer}"'));
      const page = await signedInPage();
      await page.goto(taskUrl(taskId));
      await page.getByRole('heading', { name: 'The agent asks' }).waitFor();
      expect(await page.locator('.pending-question').textContent()).to.equal('Which size?');
      // Nothing is chosen until the person chooses: Send is refused, with a hint, until then.
      const send = page.getByRole('button', { name: 'Send answer' });
      expect(await page.locator('input[name="answer"]:checked').count(), 'no option preselected').to.equal(0);
      expect(await send.isDisabled()).to.equal(true);
      expect(await page.getByTestId('pending-hint').textContent()).to.equal('Choose an answer to send it.');
      expect(await page.getByTestId('pending-hint').isVisible()).to.equal(true);
      await page.locator('form.pending-form').evaluate((form: any) => form.requestSubmit());
      expect(await page.locator('#pending-status').textContent(), 'a submit without a choice sends nothing').to.equal('');
      expect((await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body.pending).to.include({ type: 'question' });
      await page.getByLabel('M', { exact: true }).check();
      expect(await send.isEnabled()).to.equal(true);
      expect(await page.getByTestId('pending-hint').isHidden()).to.equal(true);
      await send.click();
      await page.getByText('Answer sent.').waitFor();
      await page.getByTestId('result').filter({ hasText: 'Noted size M' }).waitFor();
      expect(await page.getByTestId('status').textContent()).to.equal('completed');
      expect(await page.locator('.task-stop').isHidden()).to.equal(true);
      const { events } = await follow(service, key, taskId);
      expect(events.find((event) => event.type === 'answer').data).to.include({ answered_by: 'operator' });
    });

    it('decides an approval with a note from the page', async () => {
      const { code } = await desktop();
      const taskId = await startTask(code, script('request_approval "Send the weekly report?"', 'done "Sent it"'));
      const page = await signedInPage();
      await page.goto(taskUrl(taskId));
      await page.getByRole('heading', { name: 'Approval needed' }).waitFor();
      expect(await page.locator('.pending-question').textContent()).to.contain('Send the weekly report?');
      await page.getByLabel('Note (optional)').fill('Go ahead');
      await page.getByRole('button', { name: 'Approve' }).click();
      await page.getByText('Approved.').waitFor();
      await page.getByTestId('result').filter({ hasText: 'Sent it' }).waitFor();
      const { events } = await follow(service, key, taskId);
      expect(events.find((event) => event.type === 'decision').data).to.include({ decision: 'approve', note: 'Go ahead', answered_by: 'operator' });
    });

    it('shows the API\'s 409 already_answered when the person at the computer answered first', async () => {
      const { code, client } = await desktop();
      const taskId = await startTask(code, script('ask "Which size?" "S" "M"', 'done "Noted size {answer}"'));
      const page = await signedInPage();
      // Hold the page's follow answers once the question shows, so that the page still offers it
      // after the person answered (as it would in the moment before its next follow answer).
      let hold = false;
      const held: Array<() => Promise<void>> = [];
      await page.route(/\/v1\/tasks\/[^/]+\/events/, async (route: Route) => {
        const response = await route.fetch();
        if (hold) held.push(() => route.fulfill({ response }));
        else await route.fulfill({ response });
      });
      await page.goto(taskUrl(taskId));
      await page.getByRole('heading', { name: 'The agent asks' }).waitFor();
      hold = true;
      const waiting = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
      expect(await client.person({ kind: 'answer', task_id: taskId, question_id: waiting.pending.question_id, answer: 'S' })).to.include({ ok: true });

      await page.getByLabel('M', { exact: true }).check();
      await page.getByRole('button', { name: 'Send answer' }).click();
      const refusal = page.locator('#pending-status');
      await refusal.filter({ hasText: /already/i }).waitFor();
      expect(await refusal.getAttribute('class')).to.contain('error');
      const direct = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { question_id: waiting.pending.question_id, answer: 'M' });
      expect(direct.status).to.equal(409);
      expect(await refusal.textContent()).to.equal(direct.body.error.message);

      hold = false;
      for (const release of held.splice(0)) await release();
      await page.getByTestId('result').filter({ hasText: 'Noted size S' }).waitFor();
      expect(await refusal.textContent(), 'the reason stays after the question goes').to.equal(direct.body.error.message);
    });
  });

  describe('the tasks list', () => {
    it('shows a new task and its status changes without a reload; each row links to the task', async () => {
      const { code } = await desktop();
      const page = await signedInPage();
      await page.goto(`${service.baseUrl}/console/tasks`);
      await page.locator('#tasks-status').filter({ hasText: /shown|No tasks/ }).waitFor();
      let loads = 0;
      page.on('framenavigated', () => loads++);

      const taskId = await startTask(code, script('ask "Go on?"', 'done "Went on"'));
      const row = page.locator(`tr[data-task-id="${taskId}"]`);
      await row.waitFor();
      await row.getByTestId('task-status').filter({ hasText: 'running' }).waitFor();
      expect(await row.textContent()).to.contain('waits for an answer');
      const waiting = await follow(service, key, taskId, (task) => task.pending !== null);
      const answered = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { question_id: waiting.task.pending.question_id, answer: 'yes' });
      expect(answered.status).to.equal(200);
      await row.getByTestId('task-status').filter({ hasText: 'completed' }).waitFor();
      expect(loads, 'no reload').to.equal(0);

      await row.getByRole('link', { name: 'ask "Go on?"' }).click();
      await page.waitForURL(taskUrl(taskId));
      expect(await page.getByTestId('result').textContent()).to.equal('Went on');
    });

    it('filters by status and session, and pages on with next_cursor', async () => {
      const first = await desktop();
      const second = await desktop();
      const done = await startTask(first.code, script('done "one"'));
      await follow(service, key, done);
      const open = await startTask(second.code, script('ask "Wait?"'));
      await follow(service, key, open, (task) => task.pending !== null);
      const page = await signedInPage();

      await page.goto(`${service.baseUrl}/console/tasks`);
      await page.getByLabel('Status').selectOption('running');
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/status=running/);
      await page.locator(`tr[data-task-id="${open}"]`).waitFor();
      const statuses = await page.getByTestId('task-status').allTextContents();
      expect(statuses.length).to.be.greaterThan(0);
      expect(new Set(statuses)).to.deep.equal(new Set(['running']));
      expect(await page.locator(`tr[data-task-id="${done}"]`).count()).to.equal(0);

      await page.goto(`${service.baseUrl}/console/tasks?session_id=${first.code}`);
      await page.locator(`tr[data-task-id="${done}"]`).waitFor();
      expect(await page.locator('#tasks-rows tr').count()).to.equal(1);
      expect(await page.getByLabel('Session code').inputValue()).to.equal(first.code);

      // A malformed filter: the API's 400 message, shown on the page.
      await page.goto(`${service.baseUrl}/console/tasks?agent_id=${encodeURIComponent('Not An Agent!')}`);
      await page.locator('#tasks-status.error').waitFor();

      // More than a page: the rest come with "Older tasks" (next_cursor).
      const all = (await service.api(key, 'GET', '/v1/tasks?limit=100')).body.data.length;
      for (let n = all; n <= 20; n++) {
        const made = await startTask(first.code, script('done "filler"'));
        await follow(service, key, made);
      }
      const total = (await service.api(key, 'GET', '/v1/tasks?limit=100')).body.data.length;
      expect(total).to.be.greaterThan(20);
      await page.goto(`${service.baseUrl}/console/tasks`);
      await page.getByText('20 tasks shown.').waitFor();
      await page.getByRole('button', { name: 'Older tasks' }).click();
      await page.getByText(`${total} tasks shown.`).waitFor();
      expect(await page.getByRole('button', { name: 'Older tasks' }).isHidden()).to.equal(true);
    });
  });

  describe('who may open a task\'s page', () => {
    let taskId: string;
    let prompt: string;

    before(async () => {
      const { code } = await desktop();
      prompt = script('open Notes', 'done "Private result"');
      taskId = await startTask(code, prompt);
      await follow(service, key, taskId);
    });

    it('replay_url opens for a signed-in member of the org', async () => {
      const task = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
      const path = new URL(task.replay_url).pathname;
      expect(path).to.equal(`/console/tasks/${taskId}`);
      const page = await signedInPage();
      const response = await page.goto(`${service.baseUrl}${path}`);
      expect(response?.status()).to.equal(200);
      expect(await page.getByTestId('result').textContent()).to.equal('Private result');
    });

    it('another org\'s user gets the not-found page and none of the task; so does an unknown id', async () => {
      const other = await service.newOrg('Other org');
      const page = await signedInPage({ org: other.orgId });
      const response = await page.goto(taskUrl(taskId));
      expect(response?.status()).to.equal(404);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).to.equal('Not found');
      const html = await page.content();
      expect(html).to.not.contain('Private result');
      expect(html).to.not.contain('open Notes');
      for (const id of ['task_doesnotexist', 'not-a-task']) {
        expect((await page.goto(taskUrl(id)))?.status()).to.equal(404);
      }
    });

    it('a signed-out visitor is sent to sign in and comes back to the task after', async () => {
      const person = await consoleSession(service, orgId, 'member');
      const set = await fetch(`${service.baseUrl}/v1/me/password`, {
        method: 'PUT',
        headers: { cookie: person.cookie, 'x-csrf-token': person.csrfToken, 'content-type': 'application/json' },
        body: JSON.stringify({ password: 'a long enough password' }),
      });
      expect(set.status).to.equal(200);
      const context = await browser.newContext();
      contexts.push(context);
      const page = await context.newPage();
      await page.goto(taskUrl(taskId));
      await page.waitForURL(/\/console\/sign-in\?next=/);
      await page.getByLabel('Email').fill(person.email);
      await page.getByLabel('Password').fill('a long enough password');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.waitForURL(taskUrl(taskId));
      expect(await page.getByTestId('result').textContent()).to.equal('Private result');
    });
  });

  it('has an icon: /favicon.ico is an SVG, cached, linked from the console\'s pages and the invite page, and loads under their policies', async () => {
    const icon = await fetch(`${service.baseUrl}/favicon.ico`);
    expect(icon.status).to.equal(200);
    expect(icon.headers.get('content-type')).to.equal('image/svg+xml');
    expect(icon.headers.get('cache-control')).to.equal('public, max-age=86400');
    expect(icon.headers.get('x-content-type-options')).to.equal('nosniff');
    const svg = await icon.text();
    expect(svg).to.match(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const asset = await fetch(`${service.baseUrl}/console/assets/favicon.svg`);
    expect(asset.headers.get('content-type')).to.equal('image/svg+xml');
    expect(await asset.text()).to.equal(svg);

    /** The page's icon link, and whether an image of it loads under the page's own Content-Security-Policy. */
    const iconOf = (page: Page) =>
      page.evaluate(async () => {
        const doc = (globalThis as any).document;
        const link = doc.querySelector('link[rel="icon"]');
        const image = doc.createElement('img');
        const loaded = await new Promise<boolean>((resolve) => {
          image.onload = () => resolve(true);
          image.onerror = () => resolve(false);
          image.src = link ? link.getAttribute('href') : '/favicon.ico';
        });
        return { href: link?.getAttribute('href') ?? null, type: link?.getAttribute('type') ?? null, loaded, width: image.naturalWidth as number };
      });
    const page = await signedInPage();
    await page.goto(`${service.baseUrl}/console/tasks`);
    expect(await iconOf(page)).to.deep.equal({ href: '/favicon.ico', type: 'image/svg+xml', loaded: true, width: 32 });
    const { code } = (await service.api(key, 'POST', '/v1/sessions', {})).body;
    await page.goto(`${service.baseUrl}/invite/${code}`);
    expect(await iconOf(page)).to.deep.equal({ href: '/favicon.ico', type: 'image/svg+xml', loaded: true, width: 32 });
  });

  it('the list and the task page: axe finds nothing, nothing scrolls sideways at 390 px, nothing fetched from elsewhere', async () => {
    const { code } = await desktop();
    const taskId = await startTask(code, script('open Browser', 'go shop.example.com', 'ask "Which colour would you like for the very long product name here?" "Red" "Blue"'));
    const { events } = await follow(service, key, taskId, (task) => task.pending !== null);
    const click = events.find((event) => event.type === 'action' && event.data.action.type === 'click');
    const member = await addMember(service, orgId, 'member');
    const context = await browser.newContext({ viewport: { width: 390, height: 844 }, bypassCSP: true });
    contexts.push(context);
    const page = await context.newPage();
    const offsite: string[] = [];
    page.on('request', (request) => {
      if (!request.url().startsWith(service.baseUrl)) offsite.push(request.url());
    });
    await signInWithLink(page, member.signInUrl);
    const sideways = () => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);

    await page.goto(`${service.baseUrl}/console/tasks`);
    await page.locator(`tr[data-task-id="${taskId}"]`).waitFor();
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await sideways(), 'no sideways scrolling at 390 px').to.be.at.most(390);

    await page.goto(taskUrl(taskId));
    await page.getByRole('heading', { name: 'The agent asks' }).waitFor();
    await page.waitForFunction(() => (globalThis as any).document.getElementById('frame-image').naturalWidth > 0);
    await page.locator(`#task-events li[data-cursor="${click.cursor}"] button`).click();
    await page.locator('.frame-marker').first().waitFor({ state: 'attached' });
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(await sideways(), 'no sideways scrolling at 390 px').to.be.at.most(390);

    await page.getByRole('button', { name: 'Stop task' }).click();
    await page.getByText('The task was stopped.').waitFor();
    expect(await page.getByTestId('status').textContent()).to.equal('stopped');
    expect(await accessibilityProblems(page)).to.deep.equal([]);
    expect(offsite).to.deep.equal([]);
  });
});
