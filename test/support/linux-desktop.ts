import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { eventMask as x11EventMask, type XEvent } from 'x11';
import { AccessibilityClient } from '../../desktop/src/accessibility';
import { listWindows, type X11Window } from '../../desktop/src/windows';
import { X11Connection } from '../../desktop/src/x11-connection';

/**
 * A real Linux desktop for one test file: Xvfb on a free display (`-displayfd`), openbox, a
 * private D-Bus session bus with the AT-SPI bus behind it (at-spi-bus-launcher and
 * at-spi2-registryd, started by the session bus on first use), and the apps a test opens.
 * Everything runs with HOME and XDG_RUNTIME_DIR in a fresh temporary folder and a marker in its
 * environment; `stop` ends each process it started (its whole process group) and waits for it,
 * then ends anything still carrying the marker (processes that left their group, such as
 * Chromium's crash handler), and removes the folder.
 */
export interface RealDesktop {
  /** `:N` */
  display: string;
  width: number;
  height: number;
  /** DISPLAY, DBUS_SESSION_BUS_ADDRESS, HOME, XDG_RUNTIME_DIR and the marker, for the apps and the parts under test. */
  env: NodeJS.ProcessEnv;
  /** The temporary folder (HOME is inside it). */
  dir: string;
  /** Starts an app on this desktop; it is ended by `stop`. */
  launch(command: string, args: string[], extraEnv?: NodeJS.ProcessEnv): ChildProcess;
  /** Waits (polling, bounded) for a window on screen that matches. */
  waitForWindow(match: (window: X11Window) => boolean, what: string, timeoutMs?: number): Promise<X11Window>;
  stop(): Promise<void>;
}

export interface DesktopOptions {
  width?: number;
  height?: number;
  /** A D-Bus session bus and the AT-SPI bus (default true). */
  accessibility?: boolean;
}

const MARKER = 'DESKHAND_TEST_DESKTOP';

/** Polls `condition` with growing pauses until it gives a truthy value; throws after `timeoutMs`. */
export async function until<T>(condition: () => Promise<T> | T, what: string, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let pause = 10;
  let lastError: unknown = null;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (error) {
      lastError = error;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? ` (last error: ${lastError.message})` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((resolve) => setTimeout(resolve, pause));
    pause = Math.min(pause * 2, 200);
  }
}

/** Starts Xvfb, openbox and (by default) the session and accessibility buses. */
export async function startDesktop(options: DesktopOptions = {}): Promise<RealDesktop> {
  const width = options.width ?? 1280;
  const height = options.height ?? 800;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'deskhand-desktop-'));
  const home = path.join(dir, 'home');
  const runtime = path.join(dir, 'runtime');
  mkdirSync(home, { mode: 0o700 });
  mkdirSync(runtime, { mode: 0o700 });
  const children: ChildProcess[] = [];
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    LANG: 'C.UTF-8',
    HOME: home,
    XDG_RUNTIME_DIR: runtime,
    XDG_CONFIG_HOME: path.join(home, '.config'),
    XDG_CACHE_HOME: path.join(home, '.cache'),
    NO_AT_BRIDGE: '0',
    [MARKER]: dir,
  };
  const own = (command: string, args: string[], extraEnv: NodeJS.ProcessEnv = {}, stdio: Array<'ignore' | 'pipe'> = ['ignore', 'ignore', 'ignore']): ChildProcess => {
    // detached: a process group of its own, so that stop() ends what it started too.
    const child = spawn(command, args, { env: { ...env, ...extraEnv }, stdio, detached: true });
    child.on('error', () => undefined);
    children.push(child);
    return child;
  };

  const desktop: RealDesktop = {
    display: '',
    width,
    height,
    env,
    dir,
    launch: (command, args, extraEnv) => own(command, args, extraEnv),
    async waitForWindow(match, what, timeoutMs = 20_000) {
      const connection = await X11Connection.open(desktop.display);
      try {
        return await until(async () => (await listWindows(connection)).windows.find(match), `a window: ${what}`, timeoutMs);
      } finally {
        await connection.close();
      }
    },
    stop: () => stopAll(children, dir),
  };

  try {
    const xvfb = own('Xvfb', ['-displayfd', '3', '-screen', '0', `${width}x${height}x24`, '-nolisten', 'tcp', '-noreset'], {}, ['ignore', 'ignore', 'ignore', 'pipe']);
    const displayNumber = await readLine(xvfb.stdio[3] as NodeJS.ReadableStream, 'Xvfb to print its display number');
    desktop.display = `:${displayNumber.trim()}`;
    env.DISPLAY = desktop.display;

    if (options.accessibility !== false) {
      const bus = own('dbus-daemon', ['--session', '--nofork', '--print-address=1'], {}, ['ignore', 'pipe', 'ignore']);
      env.DBUS_SESSION_BUS_ADDRESS = (await readLine(bus.stdout!, 'dbus-daemon to print its address')).trim();
      // The first client of org.a11y.Bus makes the session bus start at-spi-bus-launcher (and it
      // the accessibility bus, which starts at-spi2-registryd); apps started after find it.
      await until(async () => {
        const client = await AccessibilityClient.connect(env.DBUS_SESSION_BUS_ADDRESS);
        client.close();
        return true;
      }, 'the AT-SPI bus', 15_000);
    }

    own('openbox', ['--sm-disable']);
    const connection = await X11Connection.open(desktop.display);
    try {
      await until(async () => (await connection.cardinals(connection.root, '_NET_SUPPORTING_WM_CHECK')).length > 0, 'openbox to manage the screen');
      // openbox names itself before it is done starting, and a window mapped in between is left
      // unmapped: wait until a window of our own is managed.
      await until(() => managesNewWindows(connection), 'openbox to manage a new window');
    } finally {
      await connection.close();
    }
    return desktop;
  } catch (error) {
    await stopAll(children, dir);
    throw error;
  }
}

/** Maps a small window and says whether the window manager lists it within half a second; the window is destroyed either way. */
async function managesNewWindows(connection: X11Connection): Promise<boolean> {
  const { client } = connection;
  const id = client.AllocID();
  client.CreateWindow(id, connection.root, 0, 0, 10, 10, 0, 0, 0, 0, {});
  client.MapWindow(id);
  try {
    return await until(async () => (await connection.cardinals(connection.root, '_NET_CLIENT_LIST')).includes(id), 'the test window to be managed', 500);
  } catch {
    return false;
  } finally {
    client.DestroyWindow(id);
    await connection.sync();
  }
}

/** Serves `pages` (path → HTML) on the loopback address; closed with `close`. */
export async function servePages(pages: Record<string, string>): Promise<{ origin: string; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    const page = pages[new URL(request.url ?? '/', 'http://localhost').pathname];
    response.writeHead(page === undefined ? 404 : 200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(page ?? 'not found');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Chromium with accessibility on, a throwaway profile inside the desktop's folder, opening `url`. */
export function launchChromium(desktop: RealDesktop, url: string, bounds = { x: 0, y: 0, width: 1000, height: 720 }): ChildProcess {
  return desktop.launch(
    'chromium',
    [
      '--force-renderer-accessibility',
      `--user-data-dir=${path.join(desktop.dir, 'chromium-profile')}`,
      '--no-sandbox',
      '--test-type',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-quic',
      '--disable-features=Translate,MediaRouter',
      '--password-store=basic',
      '--noerrdialogs',
      `--window-position=${bounds.x},${bounds.y}`,
      `--window-size=${bounds.width},${bounds.height}`,
      url,
    ],
    { ACCESSIBILITY_ENABLED: '1' },
  );
}

function readLine(stream: NodeJS.ReadableStream, what: string, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      if (text.includes('\n')) done(null);
    };
    const onEnd = (): void => done(new Error(`the stream ended before ${what}`));
    const done = (error: Error | null): void => {
      clearTimeout(timer);
      stream.removeListener('data', onData);
      stream.removeListener('end', onEnd);
      if (error) reject(error);
      else resolve(text.split('\n')[0]);
    };
    stream.on('data', onData);
    stream.on('end', onEnd);
  });
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()));
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // the group is gone
  }
}

/** Process ids whose environment carries this desktop's marker (its apps' descendants, wherever they went). */
function markedProcesses(dir: string): number[] {
  const found: number[] = [];
  const needle = `${MARKER}=${dir}\0`;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').includes(needle)) found.push(Number(entry));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

async function stopAll(children: ChildProcess[], dir: string): Promise<void> {
  // Apps first, the display last: newest first.
  for (const child of [...children].reverse()) {
    signalGroup(child, 'SIGTERM');
    const ended = await Promise.race([exited(child).then(() => true), new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 5000))]);
    if (!ended) {
      signalGroup(child, 'SIGKILL');
      await exited(child);
    }
    // What else the group held (activated services, renderers) goes with it.
    signalGroup(child, 'SIGKILL');
  }
  children.length = 0;
  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    const left = markedProcesses(dir);
    if (left.length === 0) break;
    for (const pid of left) {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    }
    await until(() => markedProcesses(dir).length === 0, 'the desktop processes to end', 5000).catch(() => undefined);
  }
  rmSync(dir, { recursive: true, force: true });
}

/** A plain X window of a test's own, in one colour, that records the input events it gets. */
export interface ProbeWindow {
  id: number;
  connection: X11Connection;
  events: XEvent[];
  /** Repaints the window in `rgb` (0xRRGGBB). */
  paint(rgb: number): Promise<void>;
  /** Gives the window the keyboard focus. */
  focus(): Promise<void>;
  close(): Promise<void>;
}

/**
 * Opens a window at `bounds` painted `rgb`, on its own connection. Override-redirect by default
 * (the window manager leaves it where it is, undecorated); `managed` lets openbox frame it, and
 * `properties` are set before it is mapped (its type, state, class, title).
 */
export async function openProbeWindow(
  display: string,
  bounds: { x: number; y: number; width: number; height: number },
  rgb: number,
  options: { managed?: boolean; properties?: Array<{ name: string; type: string; format: 8 | 32; data: string | number[] | string[] }> } = {},
): Promise<ProbeWindow> {
  const connection = await X11Connection.open(display);
  const { client } = connection;
  const id = client.AllocID();
  const events: XEvent[] = [];
  const mask = x11EventMask;
  client.CreateWindow(id, connection.root, bounds.x, bounds.y, bounds.width, bounds.height, 0, 0, 0, 0, {
    backgroundPixel: rgb,
    overrideRedirect: options.managed ? 0 : 1,
    eventMask: mask.KeyPress | mask.KeyRelease | mask.ButtonPress | mask.ButtonRelease | mask.PointerMotion,
  });
  for (const property of options.properties ?? []) {
    const type = await connection.atom(property.type);
    const name = await connection.atom(property.name);
    let data: string | number[];
    if (Array.isArray(property.data) && typeof property.data[0] === 'string') {
      data = await Promise.all((property.data as string[]).map((atom) => connection.atom(atom)));
    } else {
      data = property.data as string | number[];
    }
    client.ChangeProperty(0, id, name, type, property.format, typeof data === 'string' ? Buffer.from(data, 'utf8') : data);
  }
  client.on('event', (event) => {
    if (event.wid === id) events.push(event);
  });
  client.MapWindow(id);
  await connection.sync();
  return {
    id,
    connection,
    events,
    async paint(color) {
      client.ChangeWindowAttributes(id, { backgroundPixel: color });
      client.ClearArea(id, 0, 0, 0, 0, false);
      await connection.sync();
    },
    async focus() {
      client.SetInputFocus(id, 1);
      await connection.sync();
    },
    async close() {
      client.DestroyWindow(id);
      await connection.sync().catch(() => undefined);
      await connection.close();
    },
  };
}
