import { createCanvas, loadImage } from '@napi-rs/canvas';
import { expect } from 'chai';
import { DESKHAND_APP, DRAWN_ELEMENTS_PROPERTY } from '../../../shared/desktop/computer';
import type { PersonMessage, Rect } from '../../../shared/desktop/protocol';
import { startLinuxApp } from '../../../desktop/src/app';
import { XInput } from '../../../desktop/src/input';
import { LinuxComputer, OWN_WINDOW_KEYBOARD_REFUSAL, OWN_WINDOW_REFUSAL } from '../../../desktop/src/linux-computer';
import { PersonWindow } from '../../../desktop/src/person-window';
import { ScreenCapture, type Frame } from '../../../desktop/src/screen-capture';
import { listWindows } from '../../../desktop/src/windows';
import { X11Connection } from '../../../desktop/src/x11-connection';
import { openProbeWindow, startDesktop, until, type ProbeWindow, type RealDesktop } from '../../support/linux-desktop';

// The person's window on a real X server (Xvfb + openbox): what it shows for each `show`
// message, the person's clicks and typing (real XTEST input on a connection of the test's own)
// and the PersonMessage each produces, that it never takes the keyboard from the app in use,
// and that the Linux computer refuses every step of the agent that would land on it.

const TASK = 'task_person_window';
/** The app the agent works in: a managed window of the test's own that records its input. */
const APP_SIZE = { x: 40, y: 60, width: 600, height: 420 };

function center(bounds: Rect): { x: number; y: number } {
  return { x: Math.round(bounds.x + bounds.width / 2), y: Math.round(bounds.y + bounds.height / 2) };
}

function rgbAt(frame: Frame, x: number, y: number): [number, number, number] {
  const offset = (y * frame.width + x) * 4;
  return [frame.rgba[offset], frame.rgba[offset + 1], frame.rgba[offset + 2]];
}

/** Rows `top` to `bottom` of column `x` with a strong red (the high-risk band and border). */
function redRows(frame: Frame, x: number, top: number, bottom: number): number {
  let count = 0;
  for (let y = top; y < bottom; y++) {
    const [r, g, b] = rgbAt(frame, x, y);
    if (r > 180 && g < 90 && b < 90) count++;
  }
  return count;
}

describe("Linux desktop: the person's window", function () {
  this.timeout(20_000);
  let desktop: RealDesktop;
  let app: ProbeWindow;
  let computer: LinuxComputer;
  let window: PersonWindow;
  /** The person's own mouse and keyboard. */
  let person: { connection: X11Connection; input: XInput };
  let capture: ScreenCapture;
  const said: PersonMessage[] = [];

  const control = async (label: string): Promise<{ x: number; y: number }> => {
    const found = await until(() => window.elements().find((element) => element.label === label), `"${label}" in the person's window`, 5000);
    return center(found.bounds);
  };
  const personClicks = async (label: string): Promise<void> => {
    const at = await control(label);
    await person.input.click(at.x, at.y);
  };
  /** What the person's window says after `act` (the first message it sends from then on). */
  const messageAfter = async (act: () => Promise<unknown>): Promise<PersonMessage> => {
    const count = said.length;
    await act();
    await until(() => said.length > count, 'a message from the person', 5000);
    return said[count];
  };
  /** Where the app in use is on the screen (its client area; openbox places it). */
  let APP: Rect;
  const focus = async (): Promise<string | null> => (await listWindows(person.connection)).focusedApp;

  before(async function () {
    this.timeout(60_000);
    desktop = await startDesktop({ accessibility: false });
    app = await openProbeWindow(desktop.display, APP_SIZE, 0x2a6f97, {
      managed: true,
      properties: [
        { name: 'WM_CLASS', type: 'STRING', format: 8, data: 'notes\0Notes\0' },
        { name: '_NET_WM_NAME', type: 'UTF8_STRING', format: 8, data: 'The app in use' },
      ],
    });
    APP = (await desktop.waitForWindow((found) => found.app === 'notes', 'the app in use')).client;
    const connection = await X11Connection.open(desktop.display);
    person = { connection, input: await XInput.open(connection) };
    capture = new ScreenCapture(connection);
    // The person works in the app: a click on it makes it the active window.
    await person.input.click(APP.x + 300, APP.y + 300);
    await until(async () => (await focus()) === 'notes', 'the app to have the focus');
    // No accessibility bus on this desktop: the computer sees windows, not elements.
    computer = await LinuxComputer.open({ display: desktop.display, sessionBusAddress: '', appVersion: '0.1.0', name: 'test', still: { quietMs: 60, capMs: 1500 } });
    window = await PersonWindow.open({ display: desktop.display, onPerson: (message) => said.push(message) });
    computer.attachPersonWindow(window);
  });

  after(async function () {
    this.timeout(30_000);
    await capture?.close();
    await computer?.close();
    await person?.input.close();
    await person?.connection.close();
    await app?.close();
    await desktop?.stop();
  });

  it('is off the screen while there is nothing to show', async () => {
    await window.flush();
    expect(window.visible).to.equal(false);
    expect(window.elements()).to.deep.equal([]);
    expect((await listWindows(person.connection)).windows.map((listed) => listed.app)).not.to.include(DESKHAND_APP);
  });

  it("shows the running task's banner with Stop in the top-right corner, above the others, without taking the focus", async () => {
    computer.show({ kind: 'banner', task_id: TASK, agent_name: 'Acme Helper', running: true });
    computer.show({ kind: 'narration', task_id: TASK, text: 'Opening the printer settings' });
    await window.flush();
    const { windows, focusedApp } = await listWindows(person.connection);
    const own = windows[0];
    expect(own).to.include({ app: DESKHAND_APP, instance: DESKHAND_APP, appClass: DESKHAND_APP, title: 'Deskhand', system: false, id: window.windowId });
    expect(own.bounds.x + own.bounds.width).to.equal(desktop.width - 8);
    expect(own.bounds).to.include({ y: 8, width: 360 });
    expect(focusedApp, 'the app in use keeps the keyboard').to.equal('notes');
    expect(window.elements().map((element) => [element.role, element.label])).to.deep.equal([['button', 'Stop']]);
    // What it publishes for the Linux computer: the same controls, relative to the window.
    const published = JSON.parse((await person.connection.text(window.windowId, DRAWN_ELEMENTS_PROPERTY))!) as Array<{ label: string; bounds: Rect }>;
    expect(published.map((element) => element.label)).to.deep.equal(['Stop']);
    expect(published[0].bounds.x + own.client.x).to.equal(window.elements()[0].bounds.x);
    // Drawn: its dark header across the top of the window.
    const frame = await capture.frame();
    expect(rgbAt(frame, own.bounds.x + 200, own.bounds.y + 4)).to.deep.equal([0x26, 0x32, 0x38]);

    expect(await messageAfter(() => personClicks('Stop'))).to.deep.equal({ kind: 'stop', task_id: TASK });
    await until(() => !window.elements().some((element) => element.label === 'Stop'), 'Stop to be taken');
    expect(await focus(), 'a click on a button does not take the keyboard').to.equal('notes');
  });

  it('shows a question with its options as buttons; a click on one answers with it', async () => {
    computer.show({ kind: 'question', task_id: TASK, question_id: 'q_size', question: 'Which size?', options: ['Small', 'Large'] });
    expect(await messageAfter(() => personClicks('Large'))).to.deep.equal({ kind: 'answer', task_id: TASK, question_id: 'q_size', answer: 'Large' });
    await until(() => !window.elements().some((element) => element.label === 'Small'), 'the question to go');
  });

  it('takes a free-text answer typed by the person, Unicode included, sent with Return, then gives the keyboard back', async () => {
    computer.show({ kind: 'question', task_id: TASK, question_id: 'q_name', question: 'Your name?', options: [] });
    expect(await focus(), 'showing it does not take the keyboard').to.equal('notes');
    const field = await until(() => window.elements().find((element) => element.role === 'text_field'), 'the answer field');
    expect(field.label).to.equal('Your answer');
    expect(window.elements().map((element) => element.label)).to.include('Send');
    await person.input.click(center(field.bounds).x, center(field.bounds).y);
    await until(async () => (await focus()) === DESKHAND_APP, 'the window to take the keyboard for the field');
    await person.input.type('Zoë ✓ 日本x');
    await person.input.key('backspace');
    expect(await messageAfter(() => person.input.key('enter'))).to.deep.equal({ kind: 'answer', task_id: TASK, question_id: 'q_name', answer: 'Zoë ✓ 日本' });
    await until(async () => (await focus()) === 'notes', 'the keyboard to go back to the app in use');
    expect(app.events.filter((event) => event.name === 'KeyPress'), 'nothing the person typed reached the app').to.deep.equal([]);
  });

  it('sends a free-text answer with Send as well', async () => {
    computer.show({ kind: 'question', task_id: TASK, question_id: 'q_city', question: 'Which city?', options: [] });
    await personClicks('Your answer');
    await until(async () => (await focus()) === DESKHAND_APP, 'the keyboard for the field');
    await person.input.type('Lyon');
    expect(await messageAfter(() => personClicks('Send'))).to.deep.equal({ kind: 'answer', task_id: TASK, question_id: 'q_city', answer: 'Lyon' });
    await until(async () => (await focus()) === 'notes', 'the keyboard to go back');
  });

  it('shows approvals with Approve and Deny, a high-risk one drawn in red, and sends the decisions', async () => {
    computer.show({ kind: 'approval', task_id: TASK, approval_id: 'a_normal', what: 'Click "Install driver"', risk: 'normal', category: 'install' });
    computer.show({ kind: 'approval', task_id: TASK, approval_id: 'a_high', what: 'Click "Buy now" for 49 €', risk: 'high', category: 'purchase' });
    await window.flush();
    const buttons = window.elements();
    expect(buttons.map((element) => element.label)).to.deep.equal(['Approve', 'Deny', 'Approve', 'Deny']);
    const [normalApprove, , highApprove] = buttons;
    const own = (await listWindows(person.connection)).windows[0];
    const frame = await capture.frame();
    // Each approval's card lies above its buttons: the normal one's below the window's header
    // and the banner, the high one's below the normal one's buttons.
    const x = own.bounds.x + 40;
    expect(redRows(frame, x, own.bounds.y + 26, normalApprove.bounds.y)).to.equal(0);
    expect(redRows(frame, x, normalApprove.bounds.y + normalApprove.bounds.height, highApprove.bounds.y)).to.be.greaterThan(10);
    expect(await focus()).to.equal('notes');

    const [deny] = window.elements().filter((element) => element.label === 'Deny');
    expect(await messageAfter(() => person.input.click(center(deny.bounds).x, center(deny.bounds).y))).to.deep.equal({ kind: 'decision', task_id: TASK, approval_id: 'a_normal', decision: 'deny' });
    await until(() => window.elements().filter((element) => element.label === 'Approve').length === 1, 'the denied approval to go');
    expect(await messageAfter(() => personClicks('Approve'))).to.deep.equal({ kind: 'decision', task_id: TASK, approval_id: 'a_high', decision: 'approve' });
  });

  it('shows a secret to type with "I typed it", and keeps the secret out of what it publishes and of the screenshots', async () => {
    const secret = 'correct-horse-42';
    computer.show({ kind: 'type_secret', task_id: TASK, request_id: 'r_password', field: 'Password', text: secret });
    await control('I typed it');
    const published = await person.connection.text(window.windowId, DRAWN_ELEMENTS_PROPERTY);
    expect(published).not.to.contain(secret);
    const [area] = window.secretAreas();
    expect(area.width).to.be.greaterThan(100);
    // On the screen the person reads it (on its pale box); in the computer's screenshot the box is painted over.
    expect(rgbAt(await capture.frame(), area.x + 3, area.y + 3)).to.deep.equal([0xf3, 0xe5, 0xf5]);
    const observed = await computer.observe();
    const image = await loadImage(observed.screenshot);
    const canvas = createCanvas(image.width, image.height);
    canvas.getContext('2d').drawImage(image, 0, 0);
    const pixel = canvas.getContext('2d').getImageData(area.x + 3, area.y + 3, 1, 1).data;
    expect([pixel[0], pixel[1], pixel[2]]).to.deep.equal([0x9e, 0x9e, 0x9e]);

    expect(await messageAfter(() => personClicks('I typed it'))).to.deep.equal({ kind: 'typed_secret', task_id: TASK, request_id: 'r_password' });
    await until(() => window.secretAreas().length === 0, 'the secret to go');
  });

  it('removes an item on clear, and shows the end until the person dismisses it', async () => {
    computer.show({ kind: 'question', task_id: TASK, question_id: 'q_cleared', question: 'Anything else?', options: ['No'] });
    await control('No');
    computer.show({ kind: 'clear', task_id: TASK, item_id: 'q_cleared' });
    await until(() => !window.elements().some((element) => element.label === 'No'), 'the cleared question to go');
    computer.show({ kind: 'approval', task_id: TASK, approval_id: 'a_left', what: 'Delete the file', risk: 'normal', category: 'delete' });
    await control('Approve');
    computer.show({ kind: 'summary', task_id: TASK, text: 'The printer is set up.' });
    computer.show({ kind: 'ended', task_id: TASK, status: 'completed', message: 'Done' });
    // The end takes the banner and what was left open of the task with it.
    await until(() => window.elements().map((element) => element.label).join() === 'Dismiss', 'only the end to be left');
    expect(window.visible).to.equal(true);
    await personClicks('Dismiss');
    await until(() => !window.visible, 'the window to leave the screen');
    expect(said.filter((message) => message.kind === 'decision' && message.approval_id === 'a_left')).to.deep.equal([]);
  });

  describe('the agent cannot act on it', () => {
    before(async () => {
      computer.show({ kind: 'banner', task_id: 'task_own', agent_name: 'Acme Helper', running: true });
      computer.show({ kind: 'approval', task_id: 'task_own', approval_id: 'a_own', what: 'Click "Buy now"', risk: 'high', category: 'purchase' });
      await control('Approve');
    });

    it('refuses a click on Approve before any input: the approval stays open', async () => {
      const count = said.length;
      const result = await computer.act({ type: 'click', ...(await control('Approve')) });
      expect(result.ok).to.equal(false);
      expect(result.error).to.equal(OWN_WINDOW_REFUSAL);
      expect(result.error).to.match(/Deskhand app's own window/);
      // The screen as it is: the window still there, its approval still open.
      expect(result.observation.windows[0]).to.include({ app: DESKHAND_APP });
      expect(result.screenshot.subarray(1, 4).toString('latin1')).to.equal('PNG');
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(said.length, 'no decision was made').to.equal(count);
      expect(window.elements().map((element) => element.label)).to.include('Approve');
    });

    it('refuses a drag that ends on it and a scroll on it, sending nothing', async () => {
      app.events.length = 0;
      const approve = await control('Approve');
      const dragged = await computer.act({ type: 'drag', from: { x: APP.x + 100, y: APP.y + 100 }, to: approve });
      expect(dragged).to.include({ ok: false, error: OWN_WINDOW_REFUSAL });
      const started = await computer.act({ type: 'drag', from: approve, to: { x: APP.x + 100, y: APP.y + 100 } });
      expect(started).to.include({ ok: false, error: OWN_WINDOW_REFUSAL });
      const scrolled = await computer.act({ type: 'scroll', ...approve, dx: 0, dy: 200 });
      expect(scrolled).to.include({ ok: false, error: OWN_WINDOW_REFUSAL });
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(app.events.filter((event) => event.name === 'ButtonPress'), 'the drag never pressed in the app').to.deep.equal([]);
      expect(said.filter((message) => message.kind === 'decision' && message.approval_id === 'a_own')).to.deep.equal([]);
    });

    it('still clicks elsewhere', async () => {
      app.events.length = 0;
      const result = await computer.act({ type: 'click', x: APP.x + 50, y: APP.y + 200 });
      expect(result.ok, result.error).to.equal(true);
      await until(() => app.events.some((event) => event.name === 'ButtonPress'), 'the click in the app');
    });

    it('refuses typing and keys while its field has the keyboard, and types again once the keyboard is back', async () => {
      computer.show({ kind: 'question', task_id: 'task_own', question_id: 'q_own', question: 'Your name?', options: [] });
      await personClicks('Your answer');
      await until(async () => (await focus()) === DESKHAND_APP, 'the keyboard in the field');
      const typed = await computer.act({ type: 'type', text: 'approve' });
      expect(typed).to.include({ ok: false, error: OWN_WINDOW_KEYBOARD_REFUSAL });
      const pressed = await computer.act({ type: 'key', keys: 'enter' });
      expect(pressed).to.include({ ok: false, error: OWN_WINDOW_KEYBOARD_REFUSAL });
      expect(pressed.observation.focused_app).to.equal(DESKHAND_APP);

      // The person answers; the agent's keys never reached the field.
      expect(await messageAfter(() => person.input.type('Ana\n'))).to.deep.equal({ kind: 'answer', task_id: 'task_own', question_id: 'q_own', answer: 'Ana' });
      await until(async () => (await focus()) === 'notes', 'the keyboard back in the app');
      app.events.length = 0;
      const again = await computer.act({ type: 'type', text: 'ok' });
      expect(again.ok, again.error).to.equal(true);
      await until(() => app.events.filter((event) => event.name === 'KeyPress').length === 2, 'the typing in the app');
    });
  });

  // Last: it closes the computer and the window above.
  describe('in the Linux app', () => {
    it("opens the person's window by default and sends what the person does through the client; close takes the window away", async () => {
      await computer.close();
      const lines: Array<Record<string, unknown>> = [];
      // No service at this address: what the person does waits in the client's outbox, and is printed.
      const linux = await startLinuxApp({ baseUrl: 'http://127.0.0.1:9', code: 'ABCD-EFGH', display: desktop.display, sessionBusAddress: '', out: (line) => lines.push(line as Record<string, unknown>), reconnectDelayMs: 100 });
      try {
        expect(linux.personWindow).to.not.equal(null);
        expect(lines.find((line) => line.event === 'computer')).to.include({ person_window: true });
        linux.computer.show({ kind: 'banner', task_id: 'task_app', agent_name: 'Acme Helper', running: true });
        const stop = await until(() => linux.personWindow!.elements().find((element) => element.label === 'Stop'), 'Stop in the app\'s window', 5000);
        await person.input.click(center(stop.bounds).x, center(stop.bounds).y);
        await until(() => lines.find((line) => line.event === 'person'), 'the person line', 5000);
        expect(lines.find((line) => line.event === 'person')).to.deep.equal({ event: 'person', kind: 'stop', task_id: 'task_app' });
      } finally {
        await linux.close();
      }
      expect((await listWindows(person.connection)).windows.map((listed) => listed.app)).not.to.include(DESKHAND_APP);
      const without = await startLinuxApp({ baseUrl: 'http://127.0.0.1:9', code: 'ABCD-EFGH', display: desktop.display, sessionBusAddress: '', out: () => undefined, personWindow: false });
      expect(without.personWindow).to.equal(null);
      await without.close();
    });
  });
});
