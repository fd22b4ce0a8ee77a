import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startLinuxApp, type LinuxApp } from '../../desktop/src/app';
import { XInput } from '../../desktop/src/input';
import { startLauncher, type Launcher } from '../../desktop/src/launcher';
import { listWindows } from '../../desktop/src/windows';
import { X11Connection } from '../../desktop/src/x11-connection';
import { startTestService, type TestService } from '../support/service';
import { follow, script } from '../support/tasks';
import { launchChromium, startDesktop, until, type RealDesktop } from '../support/linux-desktop';

// The guardrails and the person's window on a real Linux desktop (Xvfb, openbox, AT-SPI,
// Chromium, Mousepad, the session's launcher), through the whole service and the scripted
// model: what each step would do is judged from the elements AT-SPI reports and the shared
// classifier; the person answers, approves and stops in the app's own window, with a real mouse
// and keyboard (XTEST on a connection of the test's own); the agent is refused on that window.

const SHOP = `<!doctype html>
<html><head><meta charset="utf-8"><title>Linux shop</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1 id="heading">Blue T-shirt</h1>
<p>
<button style="font-size:20px;padding:10px 24px" onclick="fetch('/cart',{method:'POST'}).then(()=>{document.getElementById('heading').textContent='In your cart'})">Add to cart</button>
<button style="font-size:20px;padding:10px 24px" onclick="fetch('/bought',{method:'POST'}).then(()=>{document.getElementById('heading').textContent='Thank you for your order'})">Buy now</button>
</p>
</body></html>`;

const SIGN_IN = `<!doctype html>
<html><head><meta charset="utf-8"><title>Linux sign-in</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1>Welcome back</h1>
<form onsubmit="event.preventDefault();fetch('/signed-in',{method:'POST',body:document.getElementById('pw').value}).then(()=>{document.title='Signed in'})">
<p><input id="pw" type="password" aria-label="Password" style="font-size:20px;width:300px"></p>
<p><button style="font-size:20px;padding:10px 24px">Sign in</button></p>
</form>
</body></html>`;

/** The pages of the test's sites; it keeps every request with the host it was sent to and its body. */
async function servePages(): Promise<{ port: number; requests: Array<{ host: string; path: string; body: string }>; close: () => Promise<void> }> {
  const requests: Array<{ host: string; path: string; body: string }> = [];
  const pages: Record<string, string> = { '/shop.html': SHOP, '/sign-in.html': SIGN_IN };
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const path = new URL(request.url ?? '/', 'http://x').pathname;
      requests.push({ host: (request.headers.host ?? '').replace(/:\d+$/, ''), path, body });
      const page = pages[path];
      response.writeHead(page ? 200 : 204, page ? { 'content-type': 'text/html; charset=utf-8' } : {});
      response.end(page ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const DONE = 'done "finished"';

describe('Linux desktop guardrails and the person\'s window end to end (real X11 desktop, scripted model)', function () {
  this.timeout(90_000);
  let desktop: RealDesktop;
  let service: TestService;
  let key: string;
  let pages: Awaited<ReturnType<typeof servePages>>;
  let launcher: Launcher;
  let app: LinuxApp;
  let code: string;
  /** The person's own mouse and keyboard: XTEST on a connection of the test's own. */
  let person: { connection: X11Connection; input: XInput };
  let shop: string;

  before(async function () {
    this.timeout(120_000);
    [desktop, service, pages] = await Promise.all([startDesktop(), startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1' }), servePages()]);
    shop = `127.0.0.1:${pages.port}/shop.html`;
    ({ key } = await service.newOrg());
    const agents: Record<string, object> = {
      helper: {},
      'no-localhost': { guardrails: { sites: { allow: [], block: ['localhost'] } } },
      'no-notes': { guardrails: { apps: { allow: [], block: ['Mousepad'] } } },
    };
    for (const [agentId, config] of Object.entries(agents)) {
      const created = await service.api(key, 'POST', '/v1/agents', { agent_id: agentId, customer_answers: true, customer_approvals: true, ...config });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
    }
    launcher = await startLauncher({ display: desktop.display, env: desktop.env });
    launchChromium(desktop, `http://${shop}`, { x: 0, y: 0, width: 880, height: 700 });
    await desktop.waitForWindow((window) => window.app === 'chromium' && window.title.startsWith('Linux shop'), 'chromium showing the shop', 40_000);
    const connection = await X11Connection.open(desktop.display);
    person = { connection, input: await XInput.open(connection) };
    const created = await service.api(key, 'POST', '/v1/sessions', { agent_id: 'helper' });
    code = created.body.code;
    app = await startLinuxApp({ baseUrl: service.baseUrl, code, display: desktop.display, sessionBusAddress: desktop.env.DBUS_SESSION_BUS_ADDRESS, name: 'linux guardrails', out: () => undefined });
    await app.welcomed;
    await until(async () => (await app.computer.inspect()).elements?.some((element) => element.label === 'Buy now'), 'the shop\'s buttons among the elements', 30_000);
  });

  after(async () => {
    await app?.close();
    await launcher?.close();
    if (person) {
      await person.input.close().catch(() => undefined);
      await person.connection.close().catch(() => undefined);
    }
    await Promise.all([service?.stop(), pages?.close(), desktop?.stop()]);
  });

  // A test that failed midway leaves no task running for the next one.
  afterEach(async () => {
    const session = (await service.api(key, 'GET', `/v1/sessions/${code}`)).body;
    if (session.latest_task_id) await service.api(key, 'POST', `/v1/tasks/${session.latest_task_id}/stop`, {});
  });

  async function start(lines: string[], agentId = 'helper', sessionCode = code): Promise<string> {
    const started = await service.api(key, 'POST', `/v1/sessions/${sessionCode}/tasks`, { prompt: script(...lines), agent_id: agentId });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return started.body.task_id;
  }

  const guardrailsOf = (events: any[]) => events.filter((event) => event.type === 'guardrail').map((event) => event.data);

  /** A control of the person's window by its label, once the window shows it. */
  async function control(label: string): Promise<{ x: number; y: number }> {
    // Read once everything shown so far is drawn: the window lays itself out again as items come and go.
    const found = await until(async () => {
      await app.personWindow!.flush();
      return app.personWindow!.elements().find((element) => element.label === label);
    }, `"${label}" in the person's window`, 15_000);
    return { x: Math.round(found.bounds.x + found.bounds.width / 2), y: Math.round(found.bounds.y + found.bounds.height / 2) };
  }

  async function personClicks(label: string): Promise<void> {
    const at = await control(label);
    await person.input.click(at.x, at.y);
  }

  it('presses a benign button ("Add to cart") at once, with no approval', async () => {
    const taskId = await start([`go ${shop}`, 'click "Add to cart"', DONE]);
    const { task, events } = await follow(service, key, taskId, undefined, 45_000);
    expect(task, JSON.stringify(events.slice(-4))).to.include({ status: 'completed' });
    expect(events.map((event) => event.type)).not.to.include('approval');
    expect(pages.requests.filter((request) => request.path === '/cart')).to.have.length(1);
  });

  it('holds a purchase button for an approval, and presses it only after the team approves', async () => {
    const bought = () => pages.requests.filter((request) => request.path === '/bought').length;
    const before = bought();
    const taskId = await start([`go ${shop}`, 'click "Buy now"', DONE]);
    const waiting = await follow(service, key, taskId, (task) => task.pending?.type === 'approval', 45_000);
    expect(guardrailsOf(waiting.events).at(-1)).to.include({ verdict: 'confirm', rule: 'confirm_category', category: 'purchase', app: 'chromium' });
    expect(bought(), 'nothing bought while the approval waits').to.equal(before);
    await control('Approve'); // the person sees it too
    const decided = await service.api(key, 'POST', `/v1/tasks/${taskId}/respond`, { approval_id: waiting.task.pending.approval_id, decision: 'approve' });
    expect(decided.status).to.equal(200);
    const { task } = await follow(service, key, taskId, undefined, 30_000);
    expect(task).to.include({ status: 'completed' });
    expect(bought()).to.equal(before + 1);
    // Decided by the team: the person's window no longer offers it.
    await until(() => !app.personWindow!.elements().some((element) => element.label === 'Approve'), 'the approval to leave the person\'s window');
  });

  it('lets the person approve in the app\'s window, and refuses the agent\'s own click on "Approve" while the approval stays open', async () => {
    const taskId = await start([`go ${shop}`, 'click "Buy now"', DONE]);
    const waiting = await follow(service, key, taskId, (task) => task.pending?.type === 'approval', 45_000);
    await control('Approve');

    // A second agent on a second session of the same computer tries to approve it for itself.
    const other = await service.api(key, 'POST', '/v1/sessions', { agent_id: 'helper' });
    const intruder = await startLinuxApp({ baseUrl: service.baseUrl, code: other.body.code, display: desktop.display, sessionBusAddress: desktop.env.DBUS_SESSION_BUS_ADDRESS, name: 'second', personWindow: false, out: () => undefined });
    try {
      await intruder.welcomed;
      const attempt = await start(['click "Approve"', DONE], 'helper', other.body.code);
      const attempted = await follow(service, key, attempt, undefined, 30_000);
      expect(guardrailsOf(attempted.events).find((decision) => decision.rule === 'own_window'), JSON.stringify(attempted.events.slice(-4))).to.include({ verdict: 'block', app: 'deskhand-desktop' });
      // The app refuses it too, whatever the service says: sent as an act, the click is not made.
      const at = await control('Approve');
      const refused = await intruder.computer.act({ type: 'click', ...at });
      expect(refused.ok).to.equal(false);
      expect(refused.error).to.match(/Deskhand app's own window/);
    } finally {
      await intruder.close();
    }
    const still = (await service.api(key, 'GET', `/v1/tasks/${taskId}`)).body;
    expect(still.pending).to.include({ type: 'approval', approval_id: waiting.task.pending.approval_id });

    await personClicks('Approve');
    const { task, events } = await follow(service, key, taskId, undefined, 30_000);
    expect(task).to.include({ status: 'completed' });
    expect(events.find((event) => event.type === 'decision')?.data).to.include({ decision: 'approve', answered_by: 'customer' });
  });

  it('lets the person answer a question with an option button and with free text typed in the window', async () => {
    const taskId = await start(['ask "Which size?" "Small" "Large"', 'ask "Your name?"', 'done "{answer}"']);
    await follow(service, key, taskId, (task) => task.pending?.type === 'question', 30_000);
    await personClicks('Large');
    await follow(service, key, taskId, (task) => task.pending?.type === 'question' && task.pending.question === 'Your name?', 30_000);
    const field = await control('Your answer');
    await person.input.click(field.x, field.y);
    await until(async () => (await listWindows(person.connection)).focusedApp === 'deskhand-desktop', 'the person\'s window to take the keyboard for its field');
    await person.input.type('Zoë\n');
    const { task } = await follow(service, key, taskId, undefined, 30_000);
    expect(task).to.include({ status: 'completed', result: 'Zoë' });
  });

  it('stops the task when the person presses Stop', async () => {
    const taskId = await start(['sleep 60', DONE]);
    await follow(service, key, taskId, (task) => task.status === 'running', 30_000);
    // This task's banner, not the last one's: its Stop names this task.
    await until(() => {
      const banner = app.client.view().banner;
      return banner?.task_id === taskId && banner.running;
    }, 'the banner of this task in the person\'s window', 15_000);
    await personClicks('Stop');
    const { task } = await follow(service, key, taskId, undefined, 30_000);
    expect(task.status).to.equal('stopped');
  });

  it('hands a password field to the person, who types it and says so; the agent never types it', async () => {
    const secret = 'correct horse 42';
    const taskId = await start([`go 127.0.0.1:${pages.port}/sign-in.html`, 'click "Password"', `type "${secret}"`, 'ask "Did you type your password?" "Yes"', 'click "Sign in"', DONE]);
    const waiting = await follow(service, key, taskId, (task) => task.pending?.type === 'question', 45_000);
    expect(guardrailsOf(waiting.events).at(-1)).to.include({ verdict: 'person_types', rule: 'password_field' });
    // The agent's click left the keyboard in the password field; the person types there.
    await control('I typed it');
    await person.input.type(secret);
    await personClicks('I typed it');
    await follow(service, key, taskId, (_task, events) => events.some((event) => event.type === 'secret_typed'), 15_000);
    await personClicks('Yes');
    const { task, events } = await follow(service, key, taskId, undefined, 45_000);
    expect(task, JSON.stringify(events.slice(-4))).to.include({ status: 'completed' });
    expect(events.map((event) => event.type)).to.include('secret_typed');
    expect(JSON.stringify(events)).not.to.contain(secret);
    // The page sends the form when the agent clicks Sign in: with the password the person typed.
    const signedIn = await until(() => pages.requests.find((request) => request.path === '/signed-in'), 'the page to send the form', 10_000);
    expect(signedIn.body).to.equal(secret);
  });

  it('refuses a blocked site typed into the address bar; the page is never asked for', async () => {
    const taskId = await start([`go localhost:${pages.port}/shop.html`, DONE], 'no-localhost');
    const { task, events } = await follow(service, key, taskId, undefined, 45_000);
    expect(task.status).to.equal('completed');
    expect(guardrailsOf(events).find((decision) => decision.verdict === 'block')).to.include({ rule: 'sites.block', site: 'localhost' });
    expect(pages.requests.filter((request) => request.host === 'localhost')).to.deep.equal([]);
  });

  it('opens Notes through the session\'s launcher, and refuses typing into a blocked app', async () => {
    const opened = await start(['open Notes', DONE], 'no-notes');
    const first = await follow(service, key, opened, undefined, 45_000);
    expect(first.task.status).to.equal('completed');
    // The launcher is a system part: usable under the app rules, and its button started Mousepad.
    expect(guardrailsOf(first.events).map((decision) => decision.verdict)).not.to.include('block');
    await desktop.waitForWindow((window) => window.app === 'mousepad' && window.active, 'Mousepad opened by the launcher, with the keyboard', 30_000);

    const taskId = await start(['type "not here"', DONE], 'no-notes');
    const { task, events } = await follow(service, key, taskId, undefined, 45_000);
    expect(task.status).to.equal('completed');
    const decisions = guardrailsOf(events);
    expect(decisions.find((decision) => decision.verdict === 'block'), JSON.stringify(decisions)).to.include({ rule: 'apps.block', app: 'mousepad' });
    const typed = events.filter((event) => event.type === 'action' && event.data.action.type === 'type');
    expect(typed, 'no text reached Mousepad').to.deep.equal([]);
  });
});
