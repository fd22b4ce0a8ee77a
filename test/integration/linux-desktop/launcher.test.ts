import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { DESKHAND_APP, DRAWN_ELEMENTS_PROPERTY, LAUNCHER_APP } from '../../../shared/desktop/computer';
import type { ElementInfo, Rect } from '../../../shared/desktop/protocol';
import { elementCategory } from '../../../shared/guardrails/element-categories';
import { LAUNCHER_HEIGHT, parseLauncherApp, startLauncher, type Launcher } from '../../../desktop/src/launcher';
import { LinuxComputer } from '../../../desktop/src/linux-computer';
import { PersonWindow } from '../../../desktop/src/person-window';
import { listWindows } from '../../../desktop/src/windows';
import { X11Connection } from '../../../desktop/src/x11-connection';
import { startDesktop, until, type RealDesktop } from '../../support/linux-desktop';

// The session's launcher on a real desktop (Xvfb, openbox, the AT-SPI bus): a dock along the
// bottom whose buttons the Linux computer reports as elements and clicks like any other, each
// starting its app in the desktop's environment; the `deskhand-launcher` command; and the
// elements of the Linux computer's observation: the launcher's buttons, the person's window's
// controls and an accessible app's (Mousepad's), each with the shared classifier's category.

const ROOT = path.join(__dirname, '..', '..', '..');

function center(bounds: Rect): { x: number; y: number } {
  return { x: Math.round(bounds.x + bounds.width / 2), y: Math.round(bounds.y + bounds.height / 2) };
}

/** Whether a process runs: it exists and has not exited (a zombie waits only for its parent to read its end). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe("Linux desktop: the session's launcher", function () {
  this.timeout(30_000);
  let desktop: RealDesktop;
  let connection: X11Connection;
  let computer: LinuxComputer;
  let launcher: Launcher;
  /** Process ids of the apps the launchers started, to check that the desktop's stop ends them. */
  const appPids = new Set<number>();

  const elementsOf = async (app: string): Promise<ElementInfo[]> => ((await computer.inspect()).elements ?? []).filter((element) => element.app === app);
  const button = async (app: string, label: string): Promise<ElementInfo> =>
    until(async () => (await elementsOf(app)).find((element) => element.role === 'button' && element.label === label), `the ${label} button of ${app}`, 10_000);

  before(async function () {
    this.timeout(60_000);
    desktop = await startDesktop();
    connection = await X11Connection.open(desktop.display);
    computer = await LinuxComputer.open({ display: desktop.display, sessionBusAddress: desktop.env.DBUS_SESSION_BUS_ADDRESS, appVersion: '0.1.0', name: 'test', still: { quietMs: 80, capMs: 2000 } });
    launcher = await startLauncher({ display: desktop.display, env: desktop.env, onStart: (event) => event.pid && appPids.add(event.pid) });
  });

  after(async function () {
    this.timeout(30_000);
    await launcher?.close();
    await computer?.close();
    await connection?.close();
    await desktop?.stop();
  });

  it('is a dock along the bottom edge, WM_CLASS deskhand-launcher, with Browser, Notes and Terminal', async () => {
    const { windows, focusedApp } = await listWindows(connection);
    const panel = windows.find((window) => window.app === LAUNCHER_APP)!;
    expect(panel).to.include({ instance: LAUNCHER_APP, appClass: LAUNCHER_APP, system: true, id: launcher.windowId });
    expect(panel.bounds).to.deep.equal({ x: 0, y: desktop.height - LAUNCHER_HEIGHT, width: desktop.width, height: LAUNCHER_HEIGHT });
    expect(focusedApp, 'the launcher takes no keyboard').to.not.equal(LAUNCHER_APP);
    // It keeps its strip free: the window manager's work area ends above it.
    const workArea = await connection.cardinals(connection.root, '_NET_WORKAREA');
    expect(workArea[1] + workArea[3]).to.equal(desktop.height - LAUNCHER_HEIGHT);
    expect(launcher.apps.map((app) => [app.name, app.command.join(' ')])).to.deep.equal([
      ['Browser', 'chromium'],
      ['Notes', 'mousepad'],
      ['Terminal', 'xterm'],
    ]);
    const published = JSON.parse((await connection.text(launcher.windowId, DRAWN_ELEMENTS_PROPERTY))!) as Array<{ role: string; label: string }>;
    expect(published.map((element) => [element.role, element.label])).to.deep.equal([
      ['button', 'Browser'],
      ['button', 'Notes'],
      ['button', 'Terminal'],
    ]);
    const buttons = await elementsOf(LAUNCHER_APP);
    expect(buttons.map((element) => element.label)).to.deep.equal(['Browser', 'Notes', 'Terminal']);
    expect(buttons[1].bounds).to.deep.equal(launcher.elements()[1].bounds);
    expect(buttons[1].bounds.y).to.be.at.least(desktop.height - LAUNCHER_HEIGHT);
  });

  it('opens Mousepad when the Linux computer clicks Notes, in the desktop\'s environment', async () => {
    const notes = await button(LAUNCHER_APP, 'Notes');
    const result = await computer.act({ type: 'click', ...center(notes.bounds) });
    expect(result.ok, result.error).to.equal(true);
    const mousepad = await desktop.waitForWindow((window) => window.app === 'mousepad', 'Mousepad, opened from the launcher');
    if (mousepad.pid) appPids.add(mousepad.pid);
    expect(launcher.started).to.have.length(1);
    await until(async () => (await listWindows(connection)).focusedApp === 'mousepad', 'Mousepad to have the keyboard');
  });

  it('opens xterm when the Linux computer clicks Terminal', async () => {
    const terminal = await button(LAUNCHER_APP, 'Terminal');
    const result = await computer.act({ type: 'click', ...center(terminal.bounds) });
    expect(result.ok, result.error).to.equal(true);
    const xterm = await desktop.waitForWindow((window) => window.app === 'xterm', 'xterm, opened from the launcher');
    if (xterm.pid) appPids.add(xterm.pid);
    expect(launcher.started).to.have.length(2);
  });

  it("reports the launcher's buttons, the person's window's controls and Mousepad's elements, each with the shared classifier's category", async () => {
    const window = await PersonWindow.open({ display: desktop.display, onPerson: () => undefined });
    computer.attachPersonWindow(window);
    computer.show({ kind: 'banner', task_id: 'task_launcher', agent_name: 'Acme Helper', running: true });
    computer.show({ kind: 'approval', task_id: 'task_launcher', approval_id: 'a_1', what: 'Click "Buy now"', risk: 'high', category: 'purchase' });
    await window.flush();
    await button(DESKHAND_APP, 'Approve');
    const observation = await until(async () => {
      const seen = await computer.inspect();
      return seen.elements?.some((element) => element.app === 'mousepad' && element.role === 'text_area') ? seen : null;
    }, "Mousepad's text area among the elements", 15_000);
    const elements = observation.elements!;
    const byApp = (app: string): string[] => elements.filter((element) => element.app === app).map((element) => element.label);
    expect(byApp(LAUNCHER_APP)).to.deep.equal(['Browser', 'Notes', 'Terminal']);
    expect(byApp(DESKHAND_APP)).to.deep.equal(['Stop', 'Approve', 'Deny']);
    expect(observation.windows.find((listed) => listed.app === LAUNCHER_APP)).to.include({ system: true });
    expect(observation.windows.find((listed) => listed.app === DESKHAND_APP)).to.include({ system: false });
    // The drawn controls are where the windows draw them, on the screen.
    const approve = elements.find((element) => element.app === DESKHAND_APP && element.label === 'Approve')!;
    expect(approve.bounds).to.deep.equal(window.elements().find((control) => control.label === 'Approve')!.bounds);
    expect(observation.text).to.contain('Notes');
    // Every element's category is the classifier's, judged from its role and label (no dialog is open).
    expect(observation.dialog).to.equal(null);
    for (const element of elements) {
      expect(element.category, `${element.app} ${element.role} "${element.label}"`).to.equal(elementCategory({ role: element.role, label: element.label, dialog: null }));
    }
  });

  describe('the deskhand-launcher command', () => {
    let child: ChildProcess;

    it('shows exactly the apps given with --app, and starts one with its arguments', async () => {
      // One panel at a time along the bottom.
      await launcher.close();
      child = desktop.launch(process.execPath, [
        '--require',
        require.resolve('tsx/cjs'),
        path.join(ROOT, 'desktop', 'src', 'launcher-main.ts'),
        '--display',
        desktop.display,
        '--app',
        'Notes=mousepad',
        '--app',
        'Console=xterm -title "from the launcher"',
      ], { TSX_TSCONFIG_PATH: path.join(ROOT, 'tsconfig.json') });
      const panel = await desktop.waitForWindow((window) => window.app === LAUNCHER_APP, 'the launcher command\'s panel', 20_000);
      expect(panel.drawn.map((element) => element.label)).to.deep.equal(['Notes', 'Console']);
      const consoleButton = await button(LAUNCHER_APP, 'Console');
      const result = await computer.act({ type: 'click', ...center(consoleButton.bounds) });
      expect(result.ok, result.error).to.equal(true);
      const xterm = await desktop.waitForWindow((window) => window.app === 'xterm' && window.title === 'from the launcher', 'the xterm it started');
      if (xterm.pid) appPids.add(xterm.pid);
    });

    it('takes its panel away on SIGTERM; the apps it started stay', async () => {
      child.kill('SIGTERM');
      await until(() => child.exitCode !== null, 'the launcher command to exit', 10_000);
      expect(child.exitCode).to.equal(0);
      await until(async () => !(await listWindows(connection)).windows.some((window) => window.app === LAUNCHER_APP), 'the panel to go');
      expect((await listWindows(connection)).windows.filter((window) => window.app === 'xterm')).to.have.length(2);
    });
  });

  // Last: it stops the desktop.
  describe('the end of the session', () => {
    it('leaves nothing it started running once the desktop stops', async () => {
      const pids = [...appPids];
      expect(pids.length).to.be.at.least(3);
      expect(pids.filter(alive).length, 'the apps run until then').to.be.greaterThan(0);
      await launcher.close();
      await computer.close();
      await connection.close();
      await desktop.stop();
      expect(pids.filter(alive)).to.deep.equal([]);
    });
  });

  it('reads --app as NAME=COMMAND, quotes kept together', () => {
    expect(parseLauncherApp('Browser=chromium --incognito')).to.deep.equal({ name: 'Browser', command: ['chromium', '--incognito'] });
    expect(parseLauncherApp('Notes="mousepad" "/tmp/my notes.txt"')).to.deep.equal({ name: 'Notes', command: ['mousepad', '/tmp/my notes.txt'] });
    expect(() => parseLauncherApp('Notes')).to.throw('NAME=COMMAND');
    expect(() => parseLauncherApp('=xterm')).to.throw('NAME=COMMAND');
  });
});
