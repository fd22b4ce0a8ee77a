import { loadImage, createCanvas } from '@napi-rs/canvas';
import { expect } from 'chai';
import { XInput, InputError, parseCombo } from '../../../desktop/src/input';
import { ScreenCapture, type Frame } from '../../../desktop/src/screen-capture';
import { waitForStillScreen } from '../../../desktop/src/screen-still';
import { X11Connection } from '../../../desktop/src/x11-connection';
import { openProbeWindow, startDesktop, until, type ProbeWindow, type RealDesktop } from '../../support/linux-desktop';

// The X connection, the screen, XTEST input and the still-screen wait, each against a real X
// server (Xvfb + openbox), checked with plain X windows of the test's own that record the input
// events they receive.

const PROBE = { x: 100, y: 120, width: 200, height: 150 };
const PROBE_RGB = 0xc81e5a;

async function pixelsOf(png: Buffer): Promise<{ width: number; height: number; at: (x: number, y: number) => [number, number, number, number] }> {
  const image = await loadImage(png);
  const canvas = createCanvas(image.width, image.height);
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const data = context.getImageData(0, 0, image.width, image.height).data;
  return {
    width: image.width,
    height: image.height,
    at: (x, y) => {
      const offset = (y * image.width + x) * 4;
      return [data[offset], data[offset + 1], data[offset + 2], data[offset + 3]];
    },
  };
}

function rgbAt(frame: Frame, x: number, y: number): number {
  const offset = (y * frame.width + x) * 4;
  return (frame.rgba[offset] << 16) | (frame.rgba[offset + 1] << 8) | frame.rgba[offset + 2];
}

describe('Linux desktop: screen and input on a real X server', function () {
  this.timeout(30_000);
  let desktop: RealDesktop;
  let connection: X11Connection;
  let probe: ProbeWindow;

  before(async function () {
    // Xvfb, openbox and a D-Bus daemon start in a few seconds on a quiet host, far longer on a busy one.
    this.timeout(90_000);
    desktop = await startDesktop({ accessibility: false });
    connection = await X11Connection.open(desktop.display);
    probe = await openProbeWindow(desktop.display, PROBE, PROBE_RGB);
  });

  after(async function () {
    this.timeout(30_000);
    await probe?.close();
    await connection?.close();
    await desktop?.stop();
  });

  describe('X11Connection', () => {
    it('opens a display by name and reports the screen size', async () => {
      const other = await X11Connection.open(desktop.display);
      expect(other.displayName).to.equal(desktop.display);
      expect([other.width, other.height]).to.deep.equal([1280, 800]);
      await other.close();
      await other.close();
    });

    it('refuses a display that does not exist, with a message naming it', async () => {
      const error = await X11Connection.open(':4093', 2000).then(
        () => null,
        (caught: Error) => caught,
      );
      expect(error?.message).to.contain(':4093');
    });
  });

  describe('ScreenCapture', () => {
    it('takes a PNG of the whole screen at its real size, a test window in its own colour', async () => {
      const capture = new ScreenCapture(connection);
      const png = await capture.png();
      expect(png.subarray(1, 4).toString('latin1')).to.equal('PNG');
      const image = await pixelsOf(png);
      expect([image.width, image.height]).to.deep.equal([1280, 800]);
      expect(image.at(PROBE.x + 100, PROBE.y + 75)).to.deep.equal([0xc8, 0x1e, 0x5a, 255]);
      expect(image.at(PROBE.x + PROBE.width + 5, PROBE.y + 75)).to.not.deep.equal([0xc8, 0x1e, 0x5a, 255]);
      expect(capture.method).to.equal('shm');
      await capture.close();
    });

    it('reads the same pixels with the core GetImage request when MIT-SHM is not used', async () => {
      const shared = new ScreenCapture(connection);
      const core = new ScreenCapture(connection, { shm: false });
      const [a, b] = [await shared.frame(), await core.frame()];
      expect(core.method).to.equal('get-image');
      expect(rgbAt(b, PROBE.x + 10, PROBE.y + 10)).to.equal(PROBE_RGB);
      expect(a.rgba.equals(b.rgba)).to.equal(true);
      await shared.close();
    });
  });

  describe('XInput', () => {
    let input: XInput;
    before(async () => {
      input = await XInput.open(connection);
    });
    after(async () => {
      await input?.close();
    });

    const clear = (): void => {
      probe.events.length = 0;
    };
    const eventsNamed = (name: string) => probe.events.filter((event) => event.name === name);

    it('clicks where it is told: left, right and double', async () => {
      clear();
      await input.click(PROBE.x + 20, PROBE.y + 30);
      await until(() => eventsNamed('ButtonRelease').length === 1, 'the left click');
      const [press] = eventsNamed('ButtonPress');
      expect([press.keycode, press.x, press.y]).to.deep.equal([1, 20, 30]);

      clear();
      await input.click(PROBE.x + 50, PROBE.y + 60, { button: 'right' });
      await until(() => eventsNamed('ButtonRelease').length === 1, 'the right click');
      expect(eventsNamed('ButtonPress').map((event) => [event.keycode, event.x, event.y])).to.deep.equal([[3, 50, 60]]);

      clear();
      await input.click(PROBE.x + 70, PROBE.y + 80, { double: true });
      await until(() => eventsNamed('ButtonRelease').length === 2, 'the double click');
      expect(eventsNamed('ButtonPress').map((event) => event.keycode)).to.deep.equal([1, 1]);
    });

    it('drags: presses at the start, moves with the button held, releases at the end', async () => {
      clear();
      await input.drag({ x: PROBE.x + 10, y: PROBE.y + 10 }, { x: PROBE.x + 150, y: PROBE.y + 110 });
      await until(() => eventsNamed('ButtonRelease').length === 1, 'the drag');
      const press = eventsNamed('ButtonPress')[0];
      const release = eventsNamed('ButtonRelease')[0];
      expect([press.x, press.y]).to.deep.equal([10, 10]);
      expect([release.x, release.y]).to.deep.equal([150, 110]);
      const held = eventsNamed('MotionNotify').filter((event) => ((event.buttons ?? 0) & 0x100) !== 0);
      expect(held.length).to.be.greaterThan(3);
    });

    it('scrolls with wheel buttons 4 to 7, one notch per 50 pixels', async () => {
      clear();
      await input.scroll(PROBE.x + 40, PROBE.y + 40, 0, 150);
      await input.scroll(PROBE.x + 40, PROBE.y + 40, 0, -50);
      await input.scroll(PROBE.x + 40, PROBE.y + 40, -10, 0);
      await input.scroll(PROBE.x + 40, PROBE.y + 40, 100, 0);
      await until(() => eventsNamed('ButtonRelease').length === 7, 'the wheel clicks');
      expect(eventsNamed('ButtonPress').map((event) => event.keycode)).to.deep.equal([5, 5, 5, 4, 6, 7, 7]);
    });

    it('presses key combos: cmd is Control, super the system key, shifted keys with Shift', async () => {
      const codes = await connection.request<number[][]>((callback) =>
        connection.client.GetKeyboardMapping(connection.display.min_keycode, connection.display.max_keycode - connection.display.min_keycode + 1, callback),
      );
      const keysymOf = (keycode: number): number => codes[keycode - connection.display.min_keycode][0];
      await probe.focus();
      clear();
      await input.key('cmd+s');
      await input.key('super');
      await input.key('shift+tab');
      await input.key('enter');
      await until(() => eventsNamed('KeyRelease').length === 6, 'the key presses');
      const presses = eventsNamed('KeyPress').map((event) => ({ keysym: keysymOf(event.keycode!), state: event.buttons ?? 0 }));
      expect(presses.map((press) => press.keysym.toString(16))).to.deep.equal(['ffe3', '73', 'ffeb', 'ffe1', 'ff09', 'ff0d']);
      // `s` went down with Control held (state bit 4), Tab with Shift (bit 1).
      expect(presses[1].state & 4).to.equal(4);
      expect(presses[4].state & 1).to.equal(1);
    });

    it('refuses an unknown key name with a message for the model', async () => {
      expect(() => parseCombo('ctrl+frobnicate')).to.throw(InputError, 'Unknown key "frobnicate"');
      expect(() => parseCombo('hyper+a')).to.throw(InputError, 'not a modifier');
      await input.key('ctrl+frobnicate').then(
        () => expect.fail('should refuse'),
        (error: Error) => expect(error).to.be.instanceOf(InputError),
      );
    });

    it('types characters the layout lacks through a remapped spare keycode, and restores it on close', async () => {
      await probe.focus();
      clear();
      const own = await XInput.open(connection);
      await own.type('a✓日');
      await until(() => eventsNamed('KeyRelease').length === 3, 'three typed keys');
      const mapping = await connection.request<number[][]>((callback) =>
        connection.client.GetKeyboardMapping(connection.display.min_keycode, connection.display.max_keycode - connection.display.min_keycode + 1, callback),
      );
      const typed = eventsNamed('KeyPress').map((event) => mapping[event.keycode! - connection.display.min_keycode][0]);
      expect(typed).to.deep.equal([0x61, 0x1002713, 0x10065e5]);
      const remappedCodes = eventsNamed('KeyPress').slice(1).map((event) => event.keycode!);
      await own.close();
      const after = await connection.request<number[][]>((callback) =>
        connection.client.GetKeyboardMapping(connection.display.min_keycode, connection.display.max_keycode - connection.display.min_keycode + 1, callback),
      );
      for (const code of remappedCodes) expect(after[code - connection.display.min_keycode].every((keysym) => keysym === 0)).to.equal(true);
    });
  });

  describe('waitForStillScreen', () => {
    it('returns once the screen has stopped changing, with the settled frame', async () => {
      const capture = new ScreenCapture(connection);
      const colours = [0x102030, 0x304050, 0x506070, 0x708090, 0x90a0b0, 0xb0c0d0, 0x00ff00];
      let painted = 0;
      let lastPaintAt = 0;
      const painting = (async () => {
        for (const colour of colours) {
          await probe.paint(colour);
          lastPaintAt = performance.now();
          painted++;
          await new Promise((resolve) => setTimeout(resolve, 60));
        }
      })();
      const started = performance.now();
      const result = await waitForStillScreen(() => capture.frame(), { intervalMs: 20, quietMs: 150, capMs: 5000 });
      await painting;
      expect(result.still).to.equal(true);
      expect(painted).to.equal(colours.length);
      expect(result.waitedMs).to.be.greaterThan(lastPaintAt - started);
      expect(result.waitedMs).to.be.lessThan(lastPaintAt - started + 1500);
      expect(rgbAt(result.frame, PROBE.x + 5, PROBE.y + 5)).to.equal(0x00ff00);
      await capture.close();
    });

    it('returns after the quiet time on a screen that does not change', async () => {
      const capture = new ScreenCapture(connection);
      const result = await waitForStillScreen(() => capture.frame(), { intervalMs: 20, quietMs: 100, capMs: 5000 });
      expect(result.still).to.equal(true);
      expect(result.waitedMs).to.be.lessThan(1000);
      await capture.close();
    });

    it('gives up at the cap on a screen that keeps changing, and says so', async () => {
      const capture = new ScreenCapture(connection);
      let running = true;
      let colour = 0;
      const painting = (async () => {
        while (running) {
          await probe.paint((colour = (colour + 0x010203) & 0xffffff));
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
      })();
      const result = await waitForStillScreen(() => capture.frame(), { intervalMs: 20, quietMs: 200, capMs: 600 });
      running = false;
      await painting;
      expect(result.still).to.equal(false);
      expect(result.waitedMs).to.be.within(600, 1500);
      await capture.close();
    });
  });
});
