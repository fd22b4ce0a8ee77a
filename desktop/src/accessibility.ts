import type { Writable } from 'node:stream';
import * as dbus from '@jellybrick/dbus-next';
import type { ElementInfo, ElementRole, GuardrailCategory, Rect } from '../../shared/desktop/protocol';
import { BROWSER_APPS, protocolRole } from './roles';

/** The states of an element this package reads (AT-SPI StateType bits). */
export interface ElementStates {
  focused: boolean;
  focusable: boolean;
  enabled: boolean;
  editable: boolean;
  showing: boolean;
  multiLine: boolean;
  selected: boolean;
  checked: boolean;
  /** The default button of its dialog. */
  isDefault: boolean;
  modal: boolean;
}

/** One element of an app's accessibility tree that is on screen. */
export interface AccessibleElement {
  /** The app's bus name and the object path: unique while the app runs. */
  id: string;
  /** The parent's id; null for a window. */
  parentId: string | null;
  /** 0 for a window, 1 for its children, … */
  depth: number;
  /** AT-SPI's role name (`push button`, `entry`, `document web`). */
  atspiRole: string;
  /** The protocol's role, or null for containers (panels, fillers, documents). */
  role: ElementRole | null;
  name: string;
  /** In screen pixels. */
  bounds: Rect;
  states: ElementStates;
  /** The text of a text field, text area, address bar or static text; null otherwise, and always for a password field. */
  text: string | null;
  /** The AT-SPI application's name (`mousepad`, `Chromium`). */
  app: string;
  /** Inside a web page (under a browser's document), not the browser's own controls. */
  inPage: boolean;
}

/** An app's top-level window as AT-SPI sees it, with its elements on screen. */
export interface AccessibleWindow {
  app: string;
  /** The app's process id, from the accessibility bus. */
  pid: number | null;
  title: string;
  bounds: Rect;
  /** AT-SPI's ACTIVE state: the window with the keyboard focus. */
  active: boolean;
  /** The address of the page shown, for a browser window; null when not read. */
  url: string | null;
  /** The window itself first, then its showing descendants, parents before children. */
  elements: AccessibleElement[];
}

export interface AccessibilitySnapshot {
  windows: AccessibleWindow[];
  /** The focused element of the active window, if AT-SPI reports one. */
  focused: AccessibleElement | null;
  /** The walk stopped at the element or time bound before reading everything on screen. */
  truncated: boolean;
  elapsedMs: number;
}

export interface SnapshotOptions {
  /** At most this many elements, all windows together. */
  maxElements?: number;
  /** Stop descending after this long. */
  timeMs?: number;
  /** An app that does not answer one call within this long is left out. */
  callTimeoutMs?: number;
  /** The longest text read of one element. */
  maxTextLength?: number;
}

const SNAPSHOT_DEFAULTS: Required<SnapshotOptions> = { maxElements: 2000, timeMs: 2000, callTimeoutMs: 1000, maxTextLength: 2000 };

const ACCESSIBLE = 'org.a11y.atspi.Accessible';
const REGISTRY_ROOT = { bus: 'org.a11y.atspi.Registry', path: '/org/a11y/atspi/accessible/root' };
const NULL_PATH = '/org/a11y/atspi/null';

/** AT-SPI StateType bit numbers (at-spi2-core's atspi-constants.h). */
const STATE = { ACTIVE: 1, CHECKED: 4, EDITABLE: 7, ENABLED: 8, FOCUSABLE: 11, FOCUSED: 12, MODAL: 16, MULTI_LINE: 17, SELECTED: 23, SENSITIVE: 24, SHOWING: 25, VISIBLE: 30, IS_DEFAULT: 39 } as const;
const COORDS_SCREEN = 0;

const TEXT_ROLES = new Set<ElementRole>(['text_field', 'text_area', 'address_bar', 'static_text']);
const DOCUMENT_ROLES = new Set(['document web', 'document frame']);

interface ObjectRef {
  bus: string;
  path: string;
}

interface Walked {
  element: AccessibleElement;
  children: ObjectRef[];
}

/** AT-SPI is not reachable: no session bus, no org.a11y.Bus, or its bus refused the connection. */
export class AccessibilityUnavailable extends Error {
  override readonly name = 'AccessibilityUnavailable';
}

/**
 * A client of the desktop's accessibility tree (AT-SPI over D-Bus). It finds the accessibility
 * bus the way every assistive technology does, by asking `org.a11y.Bus` on the session bus, and
 * reads each app's tree with plain method calls (no introspection), a level of the tree at a time
 * with the calls of a level in flight together, bounded in count and time.
 */
export class AccessibilityClient {
  /** Whether the bus's socket is gathering this tick's calls (`writeTogether`). */
  private corked = false;

  private constructor(
    private readonly bus: dbus.MessageBus,
    /** The accessibility bus's address. */
    readonly address: string,
  ) {}

  /**
   * Connects to the accessibility bus of the session at `sessionBusAddress` (default
   * DBUS_SESSION_BUS_ADDRESS). Throws AccessibilityUnavailable when there is none.
   */
  static async connect(sessionBusAddress: string | undefined = process.env.DBUS_SESSION_BUS_ADDRESS, timeoutMs = 5000): Promise<AccessibilityClient> {
    if (!sessionBusAddress) throw new AccessibilityUnavailable('No D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set), so no accessibility bus can be found.');
    let session: dbus.MessageBus | null = null;
    try {
      session = dbus.sessionBus({ busAddress: sessionBusAddress });
      const [address] = (await within(callOn(session, 'org.a11y.Bus', '/org/a11y/bus', 'org.a11y.Bus', 'GetAddress'), timeoutMs)) as [string];
      const bus = dbus.sessionBus({ busAddress: address });
      const client = new AccessibilityClient(bus, address);
      await within(client.call(REGISTRY_ROOT, ACCESSIBLE, 'GetChildren'), timeoutMs);
      return client;
    } catch (error) {
      if (error instanceof AccessibilityUnavailable) throw error;
      throw new AccessibilityUnavailable(`The accessibility bus cannot be reached: ${(error as Error).message}`);
    } finally {
      session?.disconnect();
    }
  }

  /**
   * Asks toolkits to expose their trees (org.a11y.Status IsEnabled, as a screen reader does):
   * Chromium and Qt apps expose nothing until it is set or they are started with accessibility on.
   */
  static async enableToolkits(sessionBusAddress: string | undefined = process.env.DBUS_SESSION_BUS_ADDRESS): Promise<void> {
    const session = dbus.sessionBus({ busAddress: sessionBusAddress });
    try {
      await within(callOn(session, 'org.a11y.Bus', '/org/a11y/bus', 'org.freedesktop.DBus.Properties', 'Set', 'ssv', ['org.a11y.Status', 'IsEnabled', new dbus.Variant('b', true)]), 5000);
    } finally {
      session.disconnect();
    }
  }

  /**
   * The showing windows of every accessible app with their showing elements, the focused
   * element, and browsers' page addresses.
   */
  async snapshot(options: SnapshotOptions = {}): Promise<AccessibilitySnapshot> {
    const settings = { ...SNAPSHOT_DEFAULTS, ...options };
    const started = performance.now();
    const deadline = started + settings.timeMs;
    const budget = { left: settings.maxElements, truncated: false };
    const [apps] = ((await this.callWithin(REGISTRY_ROOT, ACCESSIBLE, 'GetChildren', '', [], settings.callTimeoutMs)) ?? [[]]) as [Array<[string, string]>];
    const perApp = await Promise.all(apps.map(([bus, path]) => this.readApp({ bus, path }, settings, deadline, budget)));
    const windows = perApp.flat();
    const focused = pickFocused(windows);
    return { windows, focused, truncated: budget.truncated, elapsedMs: performance.now() - started };
  }

  /** The whole text of an element (its Text interface), or null when it has none. */
  async text(id: string, maxLength = SNAPSHOT_DEFAULTS.maxTextLength): Promise<string | null> {
    return this.readText(refOf(id), maxLength, SNAPSHOT_DEFAULTS.callTimeoutMs);
  }

  /** Disconnects from the accessibility bus. */
  close(): void {
    this.bus.disconnect();
  }

  private async readApp(app: ObjectRef, settings: Required<SnapshotOptions>, deadline: number, budget: { left: number; truncated: boolean }): Promise<AccessibleWindow[]> {
    const timeout = settings.callTimeoutMs;
    const [name, children, pid] = await Promise.all([
      this.property(app, ACCESSIBLE, 'Name', timeout),
      this.callWithin(app, ACCESSIBLE, 'GetChildren', '', [], timeout),
      this.callWithin({ bus: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus' }, 'org.freedesktop.DBus', 'GetConnectionUnixProcessID', 's', [app.bus], timeout),
    ]);
    if (!children) return [];
    const appName = typeof name === 'string' ? name : '';
    const inBrowser = BROWSER_APPS.has(appName.toLowerCase());
    const frames = (children[0] as Array<[string, string]>).map(([bus, path]) => ({ bus, path }));
    const windows = await Promise.all(frames.map((frame) => this.readWindow(frame, appName, inBrowser, settings, deadline, budget)));
    return windows.filter((window): window is AccessibleWindow => window !== null).map((window) => ({ ...window, pid: pid ? Number(pid[0]) : null }));
  }

  private async readWindow(
    frame: ObjectRef,
    app: string,
    inBrowser: boolean,
    settings: Required<SnapshotOptions>,
    deadline: number,
    budget: { left: number; truncated: boolean },
  ): Promise<AccessibleWindow | null> {
    const top = await this.readElement(frame, null, 0, app, inBrowser, false, settings);
    if (!top || !top.element.states.showing) return null;
    const elements: AccessibleElement[] = [top.element];
    const inPage = new Set<string>();
    let level: Array<{ ref: ObjectRef; parent: AccessibleElement }> = top.children.map((ref) => ({ ref, parent: top.element }));
    while (level.length > 0) {
      if (performance.now() > deadline || budget.left <= 0) {
        budget.truncated = true;
        break;
      }
      if (level.length > budget.left) {
        budget.truncated = true;
        level = level.slice(0, budget.left);
      }
      budget.left -= level.length;
      const read = await Promise.all(
        level.map(({ ref, parent }) => {
          const parentInPage = inPage.has(parent.id) || DOCUMENT_ROLES.has(parent.atspiRole);
          if (parentInPage) inPage.add(`${ref.bus}${ref.path}`);
          return this.readElement(ref, parent, parent.depth + 1, app, inBrowser, parentInPage, settings);
        }),
      );
      const next: typeof level = [];
      for (const walked of read) {
        if (!walked || !walked.element.states.showing) continue;
        elements.push(walked.element);
        for (const ref of walked.children) next.push({ ref, parent: walked.element });
      }
      level = next;
    }
    return {
      app,
      pid: null,
      title: top.element.name,
      bounds: top.element.bounds,
      active: top.element.states.focused || (await this.isActive(frame, settings.callTimeoutMs)),
      url: inBrowser ? await this.pageAddress(elements, settings.callTimeoutMs) : null,
      elements,
    };
  }

  private async readElement(
    ref: ObjectRef,
    parent: AccessibleElement | null,
    depth: number,
    app: string,
    inBrowser: boolean,
    inPage: boolean,
    settings: Required<SnapshotOptions>,
  ): Promise<Walked | null> {
    const timeout = settings.callTimeoutMs;
    // The state first: most of a tree is not showing (closed menus, a browser's hidden views),
    // and neither such an element nor anything under it is read further. Two round trips a
    // level instead of one, for less than half the calls.
    const state = await this.callWithin(ref, ACCESSIBLE, 'GetState', '', [], timeout);
    if (!state) return null;
    const states = readStates(state[0] as number[]);
    if (!states.showing) return null;
    const [role, name, extents, children] = await Promise.all([
      this.callWithin(ref, ACCESSIBLE, 'GetRoleName', '', [], timeout),
      this.property(ref, ACCESSIBLE, 'Name', timeout),
      this.callWithin(ref, 'org.a11y.atspi.Component', 'GetExtents', 'u', [COORDS_SCREEN], timeout),
      this.callWithin(ref, ACCESSIBLE, 'GetChildren', '', [], timeout),
    ]);
    if (!role) return null;
    const atspiRole = String(role[0]);
    const elementName = typeof name === 'string' ? name : '';
    const needsAttributes = inBrowser && !inPage && (atspiRole === 'entry' || atspiRole === 'text');
    const attributes = needsAttributes ? (((await this.callWithin(ref, ACCESSIBLE, 'GetAttributes', '', [], timeout)) ?? [{}])[0] as Record<string, string>) : {};
    const mapped = protocolRole({ atspiRole, name: elementName, multiLine: states.multiLine, editable: states.editable, inBrowser, inPage, attributes });
    let text: string | null = null;
    if (mapped && TEXT_ROLES.has(mapped)) {
      text = (mapped === 'static_text' && elementName) || (await this.readText(ref, settings.maxTextLength, timeout));
    }
    const [x, y, width, height] = extents ? (extents[0] as number[]) : [0, 0, 0, 0];
    return {
      element: {
        id: `${ref.bus}${ref.path}`,
        parentId: parent ? parent.id : null,
        depth,
        atspiRole,
        role: mapped,
        name: elementName,
        bounds: { x, y, width, height },
        states,
        text,
        app,
        inPage,
      },
      children: children ? (children[0] as Array<[string, string]>).filter(([, path]) => path !== NULL_PATH).map(([bus, path]) => ({ bus, path })) : [],
    };
  }

  private async readText(ref: ObjectRef, maxLength: number, timeout: number): Promise<string | null> {
    const reply = await this.callWithin(ref, 'org.a11y.atspi.Text', 'GetText', 'ii', [0, maxLength], timeout);
    return reply ? String(reply[0]) : null;
  }

  private async isActive(frame: ObjectRef, timeout: number): Promise<boolean> {
    const state = await this.callWithin(frame, ACCESSIBLE, 'GetState', '', [], timeout);
    return state ? hasState(state[0] as number[], STATE.ACTIVE) : false;
  }

  /**
   * A browser window's page address: the URL its showing document reports (Chromium: the
   * Document attribute `URI`; Firefox: `DocURL`), else the text of its address bar.
   */
  private async pageAddress(elements: AccessibleElement[], timeout: number): Promise<string | null> {
    const documents = elements.filter((element) => DOCUMENT_ROLES.has(element.atspiRole) && element.bounds.width > 0 && element.bounds.height > 0);
    for (const document of documents) {
      const reply = await this.callWithin(refOf(document.id), 'org.a11y.atspi.Document', 'GetAttributes', '', [], timeout);
      const attributes = (reply?.[0] ?? {}) as Record<string, string>;
      const url = attributes.URI || attributes.DocURL;
      if (url) return url;
    }
    const bar = elements.find((element) => element.role === 'address_bar');
    return bar?.text || null;
  }

  private call(ref: ObjectRef, iface: string, member: string, signature = '', body: unknown[] = []): Promise<unknown[]> {
    this.writeTogether();
    return callOn(this.bus, ref.bus, ref.path, iface, member, signature, body);
  }

  /**
   * The calls made in one tick (a level of the walk: up to hundreds) leave in one write: dbus-next
   * writes each message to its socket at once, a system call each; corking the socket until the
   * next tick gathers them (Node's writev). A walk took 5-10% less time and CPU (docs/benchmarks.md,
   * linux-desktop). Should a dbus-next release no longer keep its socket there, calls go one by one.
   */
  private writeTogether(): void {
    if (this.corked) return;
    const socket = (this.bus as unknown as { _connection?: { stream?: Writable } })._connection?.stream;
    if (typeof socket?.cork !== 'function') return;
    socket.cork();
    this.corked = true;
    process.nextTick(() => {
      this.corked = false;
      socket.uncork();
    });
  }

  /** A call's reply body, or null when the object is gone, the app refuses, or it does not answer in time. */
  private async callWithin(ref: ObjectRef, iface: string, member: string, signature: string, body: unknown[], timeoutMs: number): Promise<unknown[] | null> {
    try {
      return await within(this.call(ref, iface, member, signature, body), timeoutMs);
    } catch {
      return null;
    }
  }

  private async property(ref: ObjectRef, iface: string, name: string, timeoutMs: number): Promise<unknown> {
    const reply = await this.callWithin(ref, 'org.freedesktop.DBus.Properties', 'Get', 'ss', [iface, name], timeoutMs);
    return reply ? (reply[0] as dbus.Variant).value : null;
  }
}

/**
 * An element as the protocol reports it, for an element with a protocol role. `app` is the app as
 * the window list names it (WM_CLASS instance); `category` comes from the shared classifier,
 * which is not part of this package.
 */
export function toElementInfo(element: AccessibleElement & { role: ElementRole }, app: string, category: GuardrailCategory | null = null): ElementInfo {
  return { role: element.role, label: element.name, category, is_default: element.states.isDefault, bounds: { ...element.bounds }, app };
}

function callOn(bus: dbus.MessageBus, destination: string, path: string, iface: string, member: string, signature = '', body: unknown[] = []): Promise<unknown[]> {
  return bus.call(new dbus.Message({ destination, path, interface: iface, member, signature, body })).then((reply) => (reply ? (reply.body as unknown[]) : []));
}

function within<T>(promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

function refOf(id: string): ObjectRef {
  const slash = id.indexOf('/');
  return { bus: id.slice(0, slash), path: id.slice(slash) };
}

function hasState(words: number[], bit: number): boolean {
  return ((words[bit >> 5] ?? 0) >>> (bit & 31)) % 2 === 1;
}

function readStates(words: number[]): ElementStates {
  return {
    focused: hasState(words, STATE.FOCUSED),
    focusable: hasState(words, STATE.FOCUSABLE),
    enabled: hasState(words, STATE.ENABLED) || hasState(words, STATE.SENSITIVE),
    editable: hasState(words, STATE.EDITABLE),
    showing: hasState(words, STATE.SHOWING) && hasState(words, STATE.VISIBLE),
    multiLine: hasState(words, STATE.MULTI_LINE),
    selected: hasState(words, STATE.SELECTED),
    checked: hasState(words, STATE.CHECKED),
    isDefault: hasState(words, STATE.IS_DEFAULT),
    modal: hasState(words, STATE.MODAL),
  };
}

/**
 * The focused element: in the active window first; one with a protocol role before a container;
 * the browser's own controls before the page (Chromium keeps FOCUSED on the page's last focused
 * field while its address bar has the focus); then the deepest.
 */
function pickFocused(windows: AccessibleWindow[]): AccessibleElement | null {
  const ordered = [...windows.filter((window) => window.active), ...windows.filter((window) => !window.active)];
  for (const window of ordered) {
    const focused = window.elements.filter((element) => element.states.focused && element.depth > 0);
    if (focused.length === 0) continue;
    focused.sort((a, b) => Number(b.role !== null) - Number(a.role !== null) || Number(a.inPage) - Number(b.inPage) || b.depth - a.depth);
    return focused[0];
  }
  return null;
}
