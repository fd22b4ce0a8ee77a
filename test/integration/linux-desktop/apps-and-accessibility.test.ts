import * as dbus from '@jellybrick/dbus-next';
import { expect } from 'chai';
import path from 'node:path';
import { atspiRoleName } from '../../../desktop/src/atspi-roles';
import { AccessibilityClient, type AccessibilitySnapshot, type AccessibleElement, type AccessibleWindow } from '../../../desktop/src/accessibility';
import { hitTest, matchAccessibleWindows } from '../../../desktop/src/hit-test';
import { XInput } from '../../../desktop/src/input';
import { ScreenCapture } from '../../../desktop/src/screen-capture';
import { waitForStillScreen } from '../../../desktop/src/screen-still';
import { listWindows, type X11Window } from '../../../desktop/src/windows';
import { X11Connection } from '../../../desktop/src/x11-connection';
import { launchChromium, openProbeWindow, servePages, startDesktop, until, type RealDesktop } from '../../support/linux-desktop';

// The window list, the accessibility tree, hit-testing and input against real apps on a real
// desktop: Chromium (accessibility on) showing a page served by this test, Mousepad (GTK 3) and
// xterm (no accessibility), under openbox, with the AT-SPI bus behind a private session bus.

const SHOP = `<!doctype html>
<html><head><meta charset="utf-8"><title>Deskhand test shop</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1>Checkout</h1>
<p><button id="buy" style="font-size:20px;padding:10px 24px" onclick="document.title='Bought'">Buy now</button></p>
<p><input id="name" aria-label="Your name" style="font-size:18px;width:320px"></p>
<p><input id="secret" type="password" aria-label="Password" style="font-size:18px"></p>
<p><a href="#details" style="font-size:20px">Order details</a></p>
</body></html>`;

const NEXT_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>Deskhand next page</title></head>
<body style="margin:24px;font:18px sans-serif">
<h1>Next</h1>
<p><button style="font-size:20px;padding:10px 24px">Next page button</button></p>
</body></html>`;

const UNICODE = 'héllo ✓ 日本';

/** What a snapshot says of each element and window, to compare two snapshots element for element. */
function described(snap: AccessibilitySnapshot): unknown[] {
  return snap.windows.map((window) => ({
    app: window.app,
    pid: window.pid,
    title: window.title,
    bounds: window.bounds,
    active: window.active,
    url: window.url,
    elements: window.elements.map(({ id, parentId, depth, atspiRole, role, name, bounds, states, text, app, inPage }) => ({ id, parentId, depth, atspiRole, role, name, bounds, states, text, app, inPage })),
  }));
}

function center(bounds: { x: number; y: number; width: number; height: number }): { x: number; y: number } {
  return { x: Math.round(bounds.x + bounds.width / 2), y: Math.round(bounds.y + bounds.height / 2) };
}

/** A point of `window` that no window above it covers (windows topmost first). */
function visiblePoint(window: X11Window, windows: X11Window[]): { x: number; y: number } {
  const above = windows.slice(0, windows.indexOf(window));
  const { x, y, width, height } = window.bounds;
  for (let row = 1; row < 10; row++) {
    for (let column = 1; column < 10; column++) {
      const point = { x: Math.round(x + (width * column) / 10), y: Math.round(y + (height * row) / 10) };
      const covered = above.some((other) => point.x >= other.bounds.x && point.y >= other.bounds.y && point.x < other.bounds.x + other.bounds.width && point.y < other.bounds.y + other.bounds.height);
      if (!covered) return point;
    }
  }
  throw new Error(`no visible point on ${window.app}`);
}

describe('Linux desktop: windows, accessibility and hit-testing with real apps', function () {
  this.timeout(60_000);
  let desktop: RealDesktop;
  let pages: Awaited<ReturnType<typeof servePages>>;
  let connection: X11Connection;
  let accessibility: AccessibilityClient;
  let input: XInput;

  const snapshot = (): Promise<AccessibilitySnapshot> => accessibility.snapshot();
  const windowOf = (snap: AccessibilitySnapshot, app: string): AccessibleWindow | undefined => snap.windows.find((window) => window.app.toLowerCase() === app);
  const elementIn = (window: AccessibleWindow | undefined, match: (element: AccessibleElement) => boolean): AccessibleElement | undefined => window?.elements.find(match);
  /** Clicks a part of `app`'s window that nothing covers, and waits until it is on top. */
  const raise = async (app: string): Promise<void> => {
    const { windows } = await listWindows(connection);
    const point = visiblePoint(windows.find((window) => window.app === app)!, windows);
    await input.click(point.x, point.y);
    await until(async () => (await listWindows(connection)).windows[0]?.app === app, `${app} on top`);
  };
  const chromiumElement = async (match: (element: AccessibleElement) => boolean, what: string): Promise<AccessibleElement> =>
    until(async () => elementIn(windowOf(await snapshot(), 'chromium'), match), what, 20_000);

  before(async function () {
    this.timeout(90_000);
    desktop = await startDesktop();
    pages = await servePages({ '/shop.html': SHOP, '/next.html': NEXT_PAGE });
    desktop.launch('mousepad', [path.join(desktop.dir, 'notes.txt')]);
    desktop.launch('xterm', ['-title', 'deskhand xterm', '-geometry', '60x12+700+560']);
    launchChromium(desktop, `${pages.origin}/shop.html`, { x: 0, y: 0, width: 820, height: 760 });
    const mousepad = await desktop.waitForWindow((window) => window.app === 'mousepad', 'mousepad');
    await desktop.waitForWindow((window) => window.app === 'xterm', 'xterm');
    await desktop.waitForWindow((window) => window.app === 'chromium' && window.title.startsWith('Deskhand test shop'), 'chromium showing the shop', 40_000);
    connection = await X11Connection.open(desktop.display);
    // Mousepad takes no position: move it (a ConfigureRequest, as any client may ask) beside Chromium.
    connection.client.ConfigureWindow(mousepad.id, { x: 840, y: 20, width: 420, height: 460 });
    await desktop.waitForWindow((window) => window.app === 'mousepad' && window.bounds.x >= 830, 'mousepad beside Chromium');
    accessibility = await AccessibilityClient.connect(desktop.env.DBUS_SESSION_BUS_ADDRESS);
    input = await XInput.open(connection);
    await chromiumElement((element) => element.role === 'button' && element.name === 'Buy now', 'the page in the accessibility tree');
  });

  after(async function () {
    this.timeout(30_000);
    await input?.close();
    accessibility?.close();
    await connection?.close();
    await pages?.close();
    await desktop?.stop();
  });

  describe('listWindows', () => {
    it('lists each app by WM_CLASS with its title and frame bounds, none of them system', async () => {
      const { windows } = await listWindows(connection);
      const byApp = Object.fromEntries(windows.map((window) => [window.app, window]));
      expect(byApp.chromium.appClass).to.equal('Chromium');
      // Chromium's instance names its profile folder when it has one of its own.
      expect(byApp.chromium.instance).to.match(/^chromium/);
      expect(byApp.mousepad.instance).to.equal('mousepad');
      expect(byApp.xterm.instance).to.equal('xterm');
      expect(byApp.chromium.title).to.equal('Deskhand test shop - Chromium');
      expect(byApp.mousepad.appClass).to.equal('Mousepad');
      expect(byApp.mousepad.title).to.contain('notes.txt');
      expect(byApp.xterm.appClass).to.equal('XTerm');
      expect(byApp.xterm.title).to.equal('deskhand xterm');
      for (const window of windows) {
        expect(window.system, window.app).to.equal(false);
        expect(window.bounds.width).to.be.greaterThan(50);
        expect(window.pid).to.be.a('number');
      }
      // xterm asked for +700+560: openbox puts its frame (title bar included) there.
      expect(byApp.xterm.bounds).to.include({ x: 700, y: 560 });
    });

    it('puts the window clicked last on top and reports its app as focused', async () => {
      for (const app of ['xterm', 'mousepad', 'chromium']) {
        await raise(app);
        const after = await until(async () => {
          const list = await listWindows(connection);
          return list.focusedApp === app ? list : null;
        }, `${app} focused`);
        expect(after.windows[0].active).to.equal(true);
      }
    });

    it('marks a dock as system and reports an open modal dialog', async () => {
      const dock = await openProbeWindow(desktop.display, { x: 0, y: 770, width: 1280, height: 30 }, 0x333333, {
        managed: true,
        properties: [
          { name: '_NET_WM_WINDOW_TYPE', type: 'ATOM', format: 32, data: ['_NET_WM_WINDOW_TYPE_DOCK'] },
          { name: 'WM_CLASS', type: 'STRING', format: 8, data: 'deskhand-panel\0Deskhand-panel\0' },
        ],
      });
      const mousepad = (await listWindows(connection)).windows.find((window) => window.app === 'mousepad')!;
      const dialog = await openProbeWindow(desktop.display, { x: 300, y: 300, width: 300, height: 120 }, 0xeeeeee, {
        managed: true,
        properties: [
          { name: '_NET_WM_WINDOW_TYPE', type: 'ATOM', format: 32, data: ['_NET_WM_WINDOW_TYPE_DIALOG'] },
          { name: '_NET_WM_STATE', type: 'ATOM', format: 32, data: ['_NET_WM_STATE_MODAL'] },
          { name: 'WM_TRANSIENT_FOR', type: 'WINDOW', format: 32, data: [mousepad.id] },
          { name: 'WM_CLASS', type: 'STRING', format: 8, data: 'mousepad\0Mousepad\0' },
          { name: '_NET_WM_NAME', type: 'UTF8_STRING', format: 8, data: 'Save changes?' },
        ],
      });
      try {
        const list = await until(async () => {
          const current = await listWindows(connection);
          return current.windows.some((window) => window.app === 'deskhand-panel') && current.dialog ? current : null;
        }, 'the dock and the dialog in the window list');
        expect(list.windows.find((window) => window.app === 'deskhand-panel')!.system).to.equal(true);
        expect(list.dialog).to.deep.equal({ title: 'Save changes?', app: 'mousepad' });
      } finally {
        await dialog.close();
        await dock.close();
      }
      const after = await until(async () => {
        const current = await listWindows(connection);
        return current.dialog === null && !current.windows.some((window) => window.app === 'deskhand-panel') ? current : null;
      }, 'the dock and the dialog gone');
      expect(after.dialog).to.equal(null);
    });
  });

  describe('AccessibilityClient', () => {
    it('reads the page elements of Chromium with protocol roles, names and screen extents', async () => {
      // Chromium fills its tree in as the page and its own controls are laid out (and the window
      // may just have come back on top of the last test's): read until every element is there.
      const found = await until(async () => {
        const snap = await snapshot();
        const chromium = windowOf(snap, 'chromium');
        if (!chromium) return null;
        const elements = {
          button: elementIn(chromium, (element) => element.name === 'Buy now'),
          name: elementIn(chromium, (element) => element.name === 'Your name'),
          secret: elementIn(chromium, (element) => element.name === 'Password'),
          link: elementIn(chromium, (element) => element.role === 'link' && element.name === 'Order details'),
          bar: elementIn(chromium, (element) => element.role === 'address_bar'),
        };
        return Object.values(elements).every(Boolean) ? { snap, chromium, ...elements } : null;
      }, 'the page\'s elements and the address bar', 20_000);
      const { snap, chromium } = found;
      const [button, name, secret, link, bar] = [found.button!, found.name!, found.secret!, found.link!, found.bar!];
      expect([button.atspiRole, button.role]).to.deep.equal(['push button', 'button']);
      expect([name.atspiRole, name.role]).to.deep.equal(['entry', 'text_field']);
      expect([secret.atspiRole, secret.role, secret.text]).to.deep.equal(['password text', 'password_field', null]);
      expect(link.atspiRole).to.equal('link');
      expect(bar.atspiRole).to.equal('entry');
      for (const element of [button, name, secret, link, bar]) {
        expect(element.states.showing).to.equal(true);
        expect(element.bounds.width).to.be.greaterThan(10);
        expect(element.bounds.x).to.be.within(chromium.bounds.x, chromium.bounds.x + chromium.bounds.width);
        expect(element.bounds.y).to.be.within(chromium.bounds.y, chromium.bounds.y + chromium.bounds.height);
      }
      // The page sits below the browser's toolbar, which holds the address bar.
      expect(button.bounds.y).to.be.greaterThan(bar.bounds.y + bar.bounds.height);
      expect(snap.truncated).to.equal(false);
    });

    it('reads the page address of the browser window, and the address bar shows it', async () => {
      const snap = await snapshot();
      const chromium = windowOf(snap, 'chromium')!;
      expect(chromium.url).to.equal(`${pages.origin}/shop.html`);
      const bar = elementIn(chromium, (element) => element.role === 'address_bar')!;
      expect(bar.text).to.contain(`${new URL(pages.origin).host}/shop.html`);
    });

    it('reads Mousepad as a text area, and nothing of xterm, which has no accessibility', async () => {
      const snap = await snapshot();
      const mousepad = windowOf(snap, 'mousepad')!;
      expect(elementIn(mousepad, (element) => element.role === 'text_area' && element.states.editable)).to.not.equal(undefined);
      expect(elementIn(mousepad, (element) => element.role === 'menu_item' && element.name === 'File')).to.not.equal(undefined);
      const { windows } = await listWindows(connection);
      const matched = matchAccessibleWindows(windows, snap.windows);
      expect(matched.get(windows.find((window) => window.app === 'xterm')!.id)).to.equal(undefined);
      expect(matched.get(windows.find((window) => window.app === 'chromium')!.id)?.app).to.equal('Chromium');
      expect(matched.get(windows.find((window) => window.app === 'mousepad')!.id)?.app).to.equal('mousepad');
    });

    it('keeps the walk within its bounds and says when it stopped short', async () => {
      const small = await accessibility.snapshot({ maxElements: 20 });
      expect(small.truncated).to.equal(true);
      expect(small.windows.reduce((sum, window) => sum + window.elements.length, 0)).to.be.at.most(20 + small.windows.length);
    });
  });

  describe('hitTest', () => {
    const hitAt = async (point: { x: number; y: number }) => {
      const [{ windows }, snap] = await Promise.all([listWindows(connection), snapshot()]);
      return hitTest(point.x, point.y, windows, matchAccessibleWindows(windows, snap.windows));
    };

    it('finds the button at its centre and the link from the text inside it', async () => {
      await raise('chromium');
      const button = await chromiumElement((element) => element.name === 'Buy now', 'the button');
      const buttonHit = await hitAt(center(button.bounds));
      expect(buttonHit?.window.app).to.equal('chromium');
      expect(buttonHit?.element?.id).to.equal(button.id);
      const link = await chromiumElement((element) => element.role === 'link' && element.name === 'Order details', 'the link');
      const linkHit = await hitAt({ x: link.bounds.x + 4, y: center(link.bounds).y });
      expect(linkHit?.element?.id).to.equal(link.id);
    });

    it('gives the topmost window where two overlap, and no element over xterm', async () => {
      await raise('chromium');
      const { windows } = await listWindows(connection);
      const [xterm, chromium] = ['xterm', 'chromium'].map((app) => windows.find((window) => window.app === app)!);
      // A point in both windows: Chromium's while it is on top, xterm's once xterm is.
      const both = { x: Math.round((xterm.bounds.x + chromium.bounds.x + chromium.bounds.width) / 2), y: Math.round((xterm.bounds.y + chromium.bounds.y + chromium.bounds.height) / 2) };
      expect((await hitAt(both))?.window.app).to.equal('chromium');
      await raise('xterm');
      const hit = await hitAt(both);
      expect(hit?.window.app).to.equal('xterm');
      expect(hit?.accessible).to.equal(null);
      expect(hit?.element).to.equal(null);
    });
  });

  describe('acts on real apps', () => {
    it('clicks a web page button, and the page reacts', async () => {
      const button = await chromiumElement((element) => element.name === 'Buy now', 'the button');
      const { x, y } = center(button.bounds);
      await input.click(x, y);
      await desktop.waitForWindow((window) => window.app === 'chromium' && window.title.startsWith('Bought'), 'the page title after the click');
    });

    it('types Unicode into a web page field, read back through AT-SPI; cmd+l focuses the address bar', async () => {
      const field = await chromiumElement((element) => element.name === 'Your name', 'the name field');
      await input.click(center(field.bounds).x, center(field.bounds).y);
      await until(async () => (await snapshot()).focused?.name === 'Your name', 'the name field focused');
      await input.type(UNICODE);
      const typed = await chromiumElement((element) => element.name === 'Your name' && element.text === UNICODE, 'the typed text in the field');
      expect(typed.text).to.equal(UNICODE);
      await input.key('cmd+l');
      const focused = await until(async () => {
        const snap = await snapshot();
        return snap.focused?.role === 'address_bar' ? snap.focused : null;
      }, 'the address bar focused');
      expect(focused.app).to.equal('Chromium');
      await input.key('escape');
    });

    it('types Unicode and a line break into Mousepad, and the screen settles after it', async () => {
      const mousepadAccessible = windowOf(await snapshot(), 'mousepad')!;
      const area = elementIn(mousepadAccessible, (element) => element.role === 'text_area')!;
      await raise('mousepad');
      await input.click(center(area.bounds).x, center(area.bounds).y);
      await input.type(`${UNICODE}\nline two`);
      const capture = new ScreenCapture(connection);
      const settled = await waitForStillScreen(() => capture.frame(), { capMs: 3000 });
      await capture.close();
      expect(settled.still).to.equal(true);
      const text = await until(async () => {
        const current = elementIn(windowOf(await snapshot(), 'mousepad'), (element) => element.id === area.id);
        return current?.text === `${UNICODE}\nline two` ? current.text : null;
      }, 'the typed text in Mousepad');
      expect(text).to.equal(`${UNICODE}\nline two`);
    });
  });

  describe("AccessibilityClient with the apps' caches", () => {
    /** The cache snapshot and the full walk's, taken one after the other until they agree (the apps may be mid-change). */
    const cacheAndWalk = async (): Promise<{ cached: AccessibilitySnapshot; walked: AccessibilitySnapshot }> => {
      let last: { cached: AccessibilitySnapshot; walked: AccessibilitySnapshot } | null = null;
      try {
        return await until(async () => {
          const cached = await accessibility.snapshot();
          const walked = await accessibility.snapshot({ cache: false });
          last = { cached, walked };
          return JSON.stringify(described(cached)) === JSON.stringify(described(walked)) ? last : null;
        }, 'the cache snapshot and the walk agreeing', 15_000);
      } catch (error) {
        if (!last) throw error;
        const { cached, walked } = last as { cached: AccessibilitySnapshot; walked: AccessibilitySnapshot };
        expect(described(cached)).to.deep.equal(described(walked));
        throw error;
      }
    };

    it('names every cached role as GetRoleName does', async () => {
      const bus = dbus.sessionBus({ busAddress: accessibility.address });
      const call = async (destination: string, objectPath: string, iface: string, member: string): Promise<unknown[]> =>
        ((await bus.call(new dbus.Message({ destination, path: objectPath, interface: iface, member })))?.body ?? []) as unknown[];
      try {
        await accessibility.snapshot();
        const [apps] = (await call('org.a11y.atspi.Registry', '/org/a11y/atspi/accessible/root', 'org.a11y.atspi.Accessible', 'GetChildren')) as [Array<[string, string]>];
        let compared = 0;
        const mismatches: string[] = [];
        for (const [appBus] of apps) {
          const items = await call(appBus, '/org/a11y/atspi/cache', 'org.a11y.atspi.Cache', 'GetItems').catch(() => null);
          if (!items) continue;
          for (const [[bus2, objectPath], , , , , , , role] of items[0] as Array<[[string, string], unknown, unknown, number, number, unknown, string, number]>) {
            const answered = await call(bus2, objectPath, 'org.a11y.atspi.Accessible', 'GetRoleName').catch(() => null);
            if (!answered) continue;
            compared++;
            if (atspiRoleName(role) !== answered[0]) mismatches.push(`${role}: ${atspiRoleName(role)} / ${String(answered[0])}`);
          }
        }
        expect(mismatches).to.deep.equal([]);
        expect(compared).to.be.greaterThan(100);
      } finally {
        bus.disconnect();
      }
    });

    it('gives the same snapshot as the full walk, element for element', async () => {
      const { cached, walked } = await cacheAndWalk();
      expect([...new Set(cached.windows.map((window) => window.app))].sort()).to.deep.equal(['Chromium', 'mousepad']);
      expect(walked.windows.reduce((sum, window) => sum + window.elements.length, 0)).to.be.greaterThan(30);
      expect(cached.focused?.id).to.equal(walked.focused?.id);
    });

    it('makes fewer D-Bus calls with the cache than the walk', async () => {
      await cacheAndWalk();
      const before = accessibility.calls;
      await accessibility.snapshot();
      const withCache = accessibility.calls - before;
      await accessibility.snapshot({ cache: false });
      const walking = accessibility.calls - before - withCache;
      expect(withCache).to.be.lessThan(walking);
    });

    it("sees Mousepad's new title and text after typing", async () => {
      const before = windowOf(await snapshot(), 'mousepad')!;
      const area = elementIn(before, (element) => element.role === 'text_area')!;
      await raise('mousepad');
      await input.click(center(area.bounds).x, center(area.bounds).y);
      await input.key('ctrl+end');
      await input.type(' cached');
      // The title marks the file changed (the last test's typing may have marked it already): the
      // window list's title, read from X, and the cached name agree.
      const after = await until(async () => {
        const [mousepad, { windows }] = [windowOf(await snapshot(), 'mousepad'), await listWindows(connection)];
        const text = elementIn(mousepad, (element) => element.id === area.id)?.text;
        const title = windows.find((window) => window.app === 'mousepad')?.title;
        return mousepad && title?.startsWith(mousepad.title) && text?.endsWith(' cached') ? mousepad : null;
      }, "Mousepad's title and text after typing");
      expect(after.title).to.contain('notes.txt');
      await cacheAndWalk();
    });

    it("shows the page Chromium navigated to, not the one it left (Chromium's cache keeps the old one)", async () => {
      await raise('chromium');
      await input.key('cmd+l');
      await until(async () => ((await snapshot()).focused?.role === 'address_bar' ? true : null), 'the address bar focused');
      await input.type(`${pages.origin}/next.html`);
      await input.key('enter');
      const chromium = await until(async () => {
        const window = windowOf(await snapshot(), 'chromium');
        return elementIn(window, (element) => element.role === 'button' && element.name === 'Next page button') ? window : null;
      }, 'the next page in the accessibility tree', 20_000);
      expect(elementIn(chromium, (element) => element.name === 'Buy now')).to.equal(undefined);
      expect(chromium.url).to.equal(`${pages.origin}/next.html`);
      const { cached } = await cacheAndWalk();
      const next = elementIn(windowOf(cached, 'chromium'), (element) => element.name === 'Next page button')!;
      expect(next.inPage).to.equal(true);
      expect(next.bounds.width).to.be.greaterThan(10);
    });
  });
});
