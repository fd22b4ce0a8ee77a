import { expect } from 'chai';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { spawn, type ChildProcess } from 'node:child_process';
import { writeFileSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { startLinuxApp, type LinuxApp } from '../../desktop/src/app';
import { DESKHAND_BIN } from '../support/cli';
import { startTestService, type TestService } from '../support/service';
import { follow, script } from '../support/tasks';
import { launchChromium, openProbeWindow, startDesktop, until, type ProbeWindow, type RealDesktop } from '../support/linux-desktop';

// The Linux desktop app (desktop/src/app.ts, the same app as `deskhand-desktop`) paired with the
// whole service through a session code, driving a real desktop (Xvfb, openbox, AT-SPI,
// Chromium, Mousepad) for tasks the scripted model runs: `click "LABEL"` finds a page's button
// among the elements AT-SPI reports, `type` and `key cmd+s` save a file in Mousepad, and the
// recording's frames are the real screen.

const GREETING = `<!doctype html>
<html><head><meta charset="utf-8"><title>Deskhand greeting</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1 id="heading">Welcome</h1>
<p><button style="font-size:20px;padding:10px 24px" onclick="fetch('/said-hello',{method:'POST'}).then(()=>{document.getElementById('heading').textContent='Hello said';document.title='Hello said'})">Say hello</button></p>
</body></html>`;

/** The page server: serves the greeting page and records every request it gets. */
async function servePage(): Promise<{ origin: string; requests: string[]; close: () => Promise<void> }> {
  const requests: string[] = [];
  const server = http.createServer((request, response) => {
    requests.push(`${request.method} ${request.url}`);
    if (request.url === '/greeting.html') {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(GREETING);
      return;
    }
    response.writeHead(204);
    response.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('Linux desktop app end to end (real X11 desktop, scripted model)', function () {
  this.timeout(60_000);
  let desktop: RealDesktop;
  let service: TestService;
  let key: string;
  let page: Awaited<ReturnType<typeof servePage>>;
  let app: LinuxApp | null = null;
  let lines: object[] = [];
  let code: string;
  const probes: ProbeWindow[] = [];
  const processes: ChildProcess[] = [];

  before(async function () {
    this.timeout(90_000);
    [desktop, service, page] = await Promise.all([
      startDesktop(),
      startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_ALLOW_PRIVATE_URLS: '1', DESKHAND_RECONNECT_GRACE_MS: '500' }),
      servePage(),
    ]);
    ({ key } = await service.newOrg());
    launchChromium(desktop, `${page.origin}/greeting.html`, { x: 0, y: 0, width: 900, height: 700 });
    await desktop.waitForWindow((window) => window.app === 'chromium' && window.title.startsWith('Deskhand greeting'), 'chromium showing the page', 40_000);
    const created = await service.api(key, 'POST', '/v1/sessions', {});
    expect(created.status).to.equal(200);
    code = created.body.code;
    app = await startLinuxApp({
      baseUrl: service.baseUrl,
      code,
      display: desktop.display,
      sessionBusAddress: desktop.env.DBUS_SESSION_BUS_ADDRESS,
      name: 'test linux desktop',
      out: (line) => lines.push(line),
    });
    await app.welcomed;
  });

  after(async () => {
    for (const probe of probes.splice(0)) await probe.close().catch(() => undefined);
    for (const child of processes.splice(0)) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      child.kill('SIGKILL');
      await new Promise((resolve) => child.once('exit', resolve));
    }
    await app?.close();
    await Promise.all([service?.stop(), page?.close(), desktop?.stop()]);
  });

  const start = async (lines: string[], agentId?: string): Promise<string> => {
    const started = await service.api(key, 'POST', `/v1/sessions/${code}/tasks`, { prompt: script(...lines), ...(agentId ? { agent_id: agentId } : {}) });
    expect(started.status, JSON.stringify(started.body)).to.equal(200);
    return started.body.task_id;
  };

  it('says hello as linux with the real screen size, its version and accessibility', async () => {
    const session = (await service.api(key, 'GET', `/v1/sessions/${code}`)).body;
    expect(session).to.include({ status: 'connected' });
    expect(session.device).to.deep.include({ os: 'linux', name: 'test linux desktop', width: desktop.width, height: desktop.height });
    expect(session.device.app_version).to.match(/^\d+\.\d+\.\d+$/);
    expect(lines.find((line) => (line as { event?: string }).event === 'computer')).to.deep.include({ os: 'linux', capabilities: { accessibility: true, element_info: true, page_addresses: true } });
  });

  it('clicks a benign button by its label on the page Chromium shows, and the page reacts', async () => {
    // Chromium's page tree appears a moment after its window: the label must be on screen first.
    await until(async () => (await app!.computer.inspect()).elements?.some((element) => element.role === 'button' && element.label === 'Say hello'), 'the page\'s button among the elements', 20_000);
    const taskId = await start(['click "Say hello"', 'done "Said hello"']);
    const { task, events } = await follow(service, key, taskId, undefined, 30_000);
    expect(task, JSON.stringify(events.slice(-3))).to.include({ status: 'completed', result: 'Said hello' });
    expect(page.requests).to.include('POST /said-hello');
    const seen = await until(async () => {
      const observation = await app!.computer.inspect();
      return observation.text?.includes('Hello said') ? observation : null;
    }, 'the page to show its change through AT-SPI');
    const chromium = seen.windows.find((window) => window.app === 'chromium');
    expect(chromium?.url).to.equal(`${page.origin}/greeting.html`);
    expect(seen.focused_app).to.equal('chromium');
  });

  it('types Unicode into Mousepad and saves it with cmd+s (Ctrl+S) to the file on disk', async () => {
    const file = path.join(desktop.dir, 'note.txt');
    writeFileSync(file, '');
    desktop.launch('mousepad', [file]);
    await desktop.waitForWindow((window) => window.app === 'mousepad' && window.active, 'mousepad in front with the focus', 20_000);
    await until(async () => (await app!.computer.inspect()).focused?.role === 'text_area', 'Mousepad\'s text area to have the focus', 20_000);
    const text = 'Grüße ✓ 日本\nzweite Zeile';
    // An agent without categories: this test is about typing and saving. (On a loaded host the
    // walk may miss the focused text area; a default agent then rightly asks before typing a
    // space it cannot place: the guardrails scenarios are in linux-desktop-guardrails.test.ts.)
    const agent = await service.api(key, 'POST', '/v1/agents', { agent_id: 'typist', guardrails: { confirm: [] } });
    expect(agent.status, JSON.stringify(agent.body)).to.equal(200);
    const taskId = await start([`type "Grüße ✓ 日本\\nzweite Zeile"`, 'key cmd+s', 'done "Saved"'], 'typist');
    const { task, events } = await follow(service, key, taskId, undefined, 30_000);
    expect(task, JSON.stringify(events.slice(-3))).to.include({ status: 'completed', result: 'Saved' });
    const pressed = events.find((event) => event.type === 'step' && /ctrl\+s/.test(JSON.stringify(event)));
    expect(pressed, 'cmd+s became ctrl+s on Linux').to.not.equal(undefined);
    await until(() => readFileSync(file, 'utf8').replace(/\n$/, '') === text, 'the file on disk to hold the typed text', 10_000);
  });

  it('keeps recording frames that are the real screen: the display\'s size and a marker the test put on it', async () => {
    const marker = { x: 1100, y: 700, width: 120, height: 60 };
    probes.push(await openProbeWindow(desktop.display, marker, 0xff00ff));
    const taskId = await start(['done "Looked"']);
    const { task } = await follow(service, key, taskId, undefined, 30_000);
    expect(task).to.include({ status: 'completed' });
    expect(task.recording.frames).to.be.greaterThan(0);
    const response = await fetch(`${service.baseUrl}/v1/tasks/${taskId}/recording/${task.recording.frames}`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.status).to.equal(200);
    const image = await loadImage(Buffer.from(await response.arrayBuffer()));
    expect([image.width, image.height]).to.deep.equal([desktop.width, desktop.height]);
    const canvas = createCanvas(image.width, image.height);
    const context = canvas.getContext('2d');
    context.drawImage(image, 0, 0);
    const pixel = context.getImageData(marker.x + marker.width / 2, marker.y + marker.height / 2, 1, 1).data;
    expect([...pixel.slice(0, 3)]).to.deep.equal([255, 0, 255]);
  });

  it('runs as a process with `deskhand desktop --code CODE --display :N`, and stops cleanly on SIGTERM', async () => {
    const created = await service.api(key, 'POST', '/v1/sessions', {});
    const { code: processCode } = created.body;
    const child = spawn(process.execPath, [DESKHAND_BIN, 'desktop', '--code', processCode, '--display', desktop.display, '--base-url', service.baseUrl, '--name', 'linux process'], {
      env: { ...process.env, DBUS_SESSION_BUS_ADDRESS: desktop.env.DBUS_SESSION_BUS_ADDRESS },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    processes.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (exitCode) => resolve(exitCode)));
    try {
      const session = await until(async () => {
        const body = (await service.api(key, 'GET', `/v1/sessions/${processCode}`)).body;
        return body.status === 'connected' ? body : null;
      }, 'the process to pair', 30_000);
      expect(session.device).to.deep.include({ os: 'linux', name: 'linux process', width: desktop.width, height: desktop.height });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited, stderr).to.equal(0);
    const events = stdout.trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event);
    expect(events).to.include.members(['computer', 'connecting', 'hello', 'closed']);
  });
});
