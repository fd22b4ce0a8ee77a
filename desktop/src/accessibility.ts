import type { Writable } from 'node:stream';
import * as dbus from '@jellybrick/dbus-next';
import type { ElementInfo, ElementRole, GuardrailCategory, Rect } from '../../shared/desktop/protocol';
import { atspiRoleName } from './atspi-roles';
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
  /**
   * Take names, roles and states from the apps' AT-SPI caches (the default); false walks every
   * element with calls of its own, the way an app without a cache is always read.
   */
  cache?: boolean;
}

const SNAPSHOT_DEFAULTS: Required<SnapshotOptions> = { maxElements: 2000, timeMs: 2000, callTimeoutMs: 1000, maxTextLength: 2000, cache: true };

const ACCESSIBLE = 'org.a11y.atspi.Accessible';
const REGISTRY_ROOT = { bus: 'org.a11y.atspi.Registry', path: '/org/a11y/atspi/accessible/root' };
const REGISTRY = { bus: 'org.a11y.atspi.Registry', path: '/org/a11y/atspi/registry' };
const CACHE_PATH = '/org/a11y/atspi/cache';
const NULL_PATH = '/org/a11y/atspi/null';

/** AT-SPI StateType bit numbers (at-spi2-core's atspi-constants.h). */
const STATE = { ACTIVE: 1, CHECKED: 4, EDITABLE: 7, ENABLED: 8, FOCUSABLE: 11, FOCUSED: 12, MODAL: 16, MULTI_LINE: 17, SELECTED: 23, SENSITIVE: 24, SHOWING: 25, VISIBLE: 30, MANAGES_DESCENDANTS: 31, IS_DEFAULT: 39 } as const;
const COORDS_SCREEN = 0;

const TEXT_ROLES = new Set<ElementRole>(['text_field', 'text_area', 'address_bar', 'static_text']);
const DOCUMENT_ROLES = new Set(['document web', 'document frame']);

interface ObjectRef {
  bus: string;
  path: string;
}

/** What the walk reads of an element before mapping it. */
interface ElementRead {
  atspiRole: string;
  name: string;
  states: ElementStates;
  active: boolean;
  extents: unknown[] | null;
  children: unknown[] | null;
}

interface Walked {
  element: AccessibleElement;
  children: ObjectRef[];
  /** AT-SPI's ACTIVE state. */
  active: boolean;
}

/** What an app's AT-SPI cache says of one of its objects (an item of Cache.GetItems), read when asked. */
interface CachedItem {
  /** The parent's id, as the element ids are made. */
  parentId: string;
  /** The index in the parent's children; -1 once the parent no longer lists it (a page navigated away from). */
  index: number;
  childCount: number;
  atspiRole: string;
  name: string;
  /** The StateType bits, two words, as GetState gives them. */
  states: number[];
}

/**
 * An app read through its cache: the cached items by id, and the replies of the calls made ahead
 * for the elements the cache says are showing, by `${id} ${interface}.${member}`.
 */
interface AppCache {
  items: Map<string, CachedItem>;
  ahead: Map<string, Promise<unknown[] | null>>;
}

/** One item of Cache.GetItems: `((so)(so)(so)iiassusau)`. */
type CacheItemReply = [[string, string], [string, string], [string, string], number, number, string[], string, number, string, number[]];

/** AT-SPI is not reachable: no session bus, no org.a11y.Bus, or its bus refused the connection. */
export class AccessibilityUnavailable extends Error {
  override readonly name = 'AccessibilityUnavailable';
}

/**
 * A client of the desktop's accessibility tree (AT-SPI over D-Bus). It finds the accessibility
 * bus the way every assistive technology does, by asking `org.a11y.Bus` on the session bus, and
 * reads each app's tree with plain method calls (no introspection), a level of the tree at a time
 * with the calls of a level in flight together, bounded in count and time.
 *
 * Where an app keeps an AT-SPI cache (Cache.GetItems: every object's role, name, states and
 * parent, read when asked), names, roles and states come from it in one call per app. The tree
 * itself is still taken live: Chromium's cache keeps the objects it had when the cache was built
 * and never gains a page loaded after (a followed link, a reload), so the elements are the ones
 * the live child lists name, from the app's windows down; the cache only says which elements are
 * showing, so that their extents and child lists are asked for all at once, and an element the
 * cache lacks is read with calls of its own. An app without a cache is walked as before.
 */
export class AccessibilityClient {
  /** Whether the bus's socket is gathering this tick's calls (`writeTogether`). */
  private corked = false;
  /** The registration of an event listener that switches the apps' caches on (`switchOnCaches`). */
  private cachesSwitchedOn: Promise<unknown> | null = null;
  /** The method calls made on the bus so far. */
  private callsMade = 0;

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
    if (settings.cache) await this.switchOnCaches(settings.callTimeoutMs);
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

  /** The D-Bus method calls this client has made so far (for the bench). */
  get calls(): number {
    return this.callsMade;
  }

  /** Disconnects from the accessibility bus. */
  close(): void {
    this.bus.disconnect();
  }

  /**
   * Registers an event listener with the registry, once per connection. The listener is not for the
   * events: apps (at-spi2-atk) keep no cache, and Cache.GetItems fails, until some client listens
   * for an event, and they build it when the first one registers (and keep it while the session
   * lasts). It also makes apps send that event, and their cache's add and remove signals, on the
   * bus; `window:shade` (a window rolled up to its title bar) is one that hardly ever happens.
   * Should it fail, no app has a cache and every app is walked.
   */
  private switchOnCaches(timeout: number): Promise<unknown> {
    this.cachesSwitchedOn ??= this.callWithin(REGISTRY, 'org.a11y.atspi.Registry', 'RegisterEvent', 's', ['window:shade'], timeout);
    return this.cachesSwitchedOn;
  }

  private async readApp(app: ObjectRef, settings: Required<SnapshotOptions>, deadline: number, budget: { left: number; truncated: boolean }): Promise<AccessibleWindow[]> {
    const timeout = settings.callTimeoutMs;
    const [name, children, pid, items] = await Promise.all([
      this.property(app, ACCESSIBLE, 'Name', timeout),
      this.callWithin(app, ACCESSIBLE, 'GetChildren', '', [], timeout),
      this.callWithin({ bus: 'org.freedesktop.DBus', path: '/org/freedesktop/DBus' }, 'org.freedesktop.DBus', 'GetConnectionUnixProcessID', 's', [app.bus], timeout),
      settings.cache ? this.cacheItems(app, timeout) : null,
    ]);
    if (!children) return [];
    const appName = typeof name === 'string' ? name : '';
    const inBrowser = BROWSER_APPS.has(appName.toLowerCase());
    const frames = (children[0] as Array<[string, string]>).map(([bus, path]) => ({ bus, path }));
    const cache = items ? this.callAhead(items, frames, inBrowser, settings) : null;
    const windows = await Promise.all(frames.map((frame) => this.readWindow(frame, appName, inBrowser, settings, deadline, budget, cache)));
    return windows.filter((window): window is AccessibleWindow => window !== null).map((window) => ({ ...window, pid: pid ? Number(pid[0]) : null }));
  }

  private async readWindow(
    frame: ObjectRef,
    app: string,
    inBrowser: boolean,
    settings: Required<SnapshotOptions>,
    deadline: number,
    budget: { left: number; truncated: boolean },
    cache: AppCache | null,
  ): Promise<AccessibleWindow | null> {
    const top = await this.readElement(frame, null, 0, app, inBrowser, false, settings, cache);
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
          if (parentInPage) inPage.add(idOf(ref));
          return this.readElement(ref, parent, parent.depth + 1, app, inBrowser, parentInPage, settings, cache);
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
      active: top.element.states.focused || top.active,
      url: inBrowser ? await this.pageAddress(elements, settings.callTimeoutMs, cache) : null,
      elements,
    };
  }

  /**
   * One element, or null when it is gone or not showing: from the app's cache when it has the
   * element (its extents and children already asked for, `callAhead`), else with calls of its own.
   */
  private async readElement(
    ref: ObjectRef,
    parent: AccessibleElement | null,
    depth: number,
    app: string,
    inBrowser: boolean,
    inPage: boolean,
    settings: Required<SnapshotOptions>,
    cache: AppCache | null,
  ): Promise<Walked | null> {
    const timeout = settings.callTimeoutMs;
    const call = (iface: string, member: string, signature = '', body: unknown[] = []) => this.callOrAhead(cache, ref, iface, member, signature, body, timeout);
    const cached = cache?.items.get(idOf(ref));
    const read = cached ? await this.readCached(cached, call) : await this.readLive(ref, timeout);
    if (!read) return null;
    const { atspiRole, name: elementName, states, extents, children } = read;
    const attributes = needsAttributes(atspiRole, inBrowser, inPage) ? (((await call(ACCESSIBLE, 'GetAttributes')) ?? [{}])[0] as Record<string, string>) : {};
    const mapped = protocolRole({ atspiRole, name: elementName, multiLine: states.multiLine, editable: states.editable, inBrowser, inPage, attributes });
    let text: string | null = null;
    if (mapped && TEXT_ROLES.has(mapped)) {
      text = needsTextRead(mapped, elementName) ? await this.readText(ref, settings.maxTextLength, timeout, cache) : elementName;
    }
    const [x, y, width, height] = extents ? (extents[0] as number[]) : [0, 0, 0, 0];
    return {
      element: {
        id: idOf(ref),
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
      active: read.active,
    };
  }

  /** An element the cache lacks, with calls of its own: its state, then, if it is showing, its role, name, extents and children. */
  private async readLive(ref: ObjectRef, timeout: number): Promise<ElementRead | null> {
    // The state first: most of a tree is not showing (closed menus, a browser's hidden views),
    // and neither such an element nor anything under it is read further. Two round trips a
    // level instead of one, for less than half the calls.
    const state = await this.callWithin(ref, ACCESSIBLE, 'GetState', '', [], timeout);
    if (!state) return null;
    const words = state[0] as number[];
    const states = readStates(words);
    if (!states.showing) return null;
    const [role, name, extents, children] = await Promise.all([
      this.callWithin(ref, ACCESSIBLE, 'GetRoleName', '', [], timeout),
      this.property(ref, ACCESSIBLE, 'Name', timeout),
      this.callWithin(ref, 'org.a11y.atspi.Component', 'GetExtents', 'u', [COORDS_SCREEN], timeout),
      this.callWithin(ref, ACCESSIBLE, 'GetChildren', '', [], timeout),
    ]);
    if (!role) return null;
    return { atspiRole: String(role[0]), name: typeof name === 'string' ? name : '', states, active: hasState(words, STATE.ACTIVE), extents, children };
  }

  /** An element the cache has: its role, name and states from the cache, its extents and children from the calls made ahead. */
  private async readCached(cached: CachedItem, call: (iface: string, member: string, signature?: string, body?: unknown[]) => Promise<unknown[] | null>): Promise<ElementRead | null> {
    const states = readStates(cached.states);
    if (!states.showing) return null;
    const [extents, children] = await Promise.all([call('org.a11y.atspi.Component', 'GetExtents', 'u', [COORDS_SCREEN]), mayHaveChildren(cached) ? call(ACCESSIBLE, 'GetChildren') : [[]]]);
    return { atspiRole: cached.atspiRole, name: cached.name, states, active: hasState(cached.states, STATE.ACTIVE), extents, children };
  }

  /**
   * The app's cache by element id, or null when the app keeps none (GetItems fails). An item whose
   * role number the role table does not know is left out, and so read with calls of its own.
   */
  private async cacheItems(app: ObjectRef, timeout: number): Promise<Map<string, CachedItem> | null> {
    const reply = await this.callWithin({ bus: app.bus, path: CACHE_PATH }, 'org.a11y.atspi.Cache', 'GetItems', '', [], timeout);
    if (!reply) return null;
    const items = new Map<string, CachedItem>();
    for (const [[bus, path], , [parentBus, parentPath], index, childCount, , name, role, , states] of reply[0] as CacheItemReply[]) {
      const atspiRole = atspiRoleName(role);
      if (atspiRole === null) continue;
      items.set(idOf({ bus, path }), { parentId: idOf({ bus: parentBus, path: parentPath }), index, childCount, atspiRole, name, states });
    }
    return items;
  }

  /**
   * Asks, all at once, for what reading the app's showing elements will need beyond its cache:
   * the extents and children of each element the cache says is showing under the app's windows,
   * the text of its text fields, a browser's field attributes and its documents' addresses. The
   * replies are taken as the walk reaches the elements; an element the walk does not reach (the
   * cache's tree is not the live one) costs its calls and nothing else.
   */
  private callAhead(items: Map<string, CachedItem>, frames: ObjectRef[], inBrowser: boolean, settings: Required<SnapshotOptions>): AppCache {
    const cache: AppCache = { items, ahead: new Map() };
    const childrenOf = new Map<string, string[]>();
    for (const [id, item] of items) {
      // -1: a child its parent no longer lists (Chromium's page before a navigation).
      if (item.index < 0) continue;
      const siblings = childrenOf.get(item.parentId);
      if (siblings) siblings.push(id);
      else childrenOf.set(item.parentId, [id]);
    }
    const ask = (id: string, iface: string, member: string, signature = '', body: unknown[] = []) =>
      cache.ahead.set(`${id} ${iface}.${member}`, this.callWithin(refOf(id), iface, member, signature, body, settings.callTimeoutMs));
    let left = settings.maxElements;
    let level = frames.map((frame) => ({ id: idOf(frame), inPage: false }));
    while (level.length > 0 && left > 0) {
      const next: typeof level = [];
      for (const { id, inPage } of level) {
        const item = items.get(id);
        const states = item ? readStates(item.states) : null;
        if (!item || !states?.showing || left-- <= 0) continue;
        ask(id, 'org.a11y.atspi.Component', 'GetExtents', 'u', [COORDS_SCREEN]);
        if (mayHaveChildren(item)) ask(id, ACCESSIBLE, 'GetChildren');
        // The protocol role's being a text role does not depend on the attributes (an address bar or a field).
        const mapped = protocolRole({ atspiRole: item.atspiRole, name: item.name, multiLine: states.multiLine, editable: states.editable, inBrowser, inPage, attributes: {} });
        if (needsAttributes(item.atspiRole, inBrowser, inPage)) ask(id, ACCESSIBLE, 'GetAttributes');
        if (mapped && TEXT_ROLES.has(mapped) && needsTextRead(mapped, item.name)) ask(id, 'org.a11y.atspi.Text', 'GetText', 'ii', [0, settings.maxTextLength]);
        if (inBrowser && DOCUMENT_ROLES.has(item.atspiRole)) ask(id, 'org.a11y.atspi.Document', 'GetAttributes');
        const childInPage = inPage || DOCUMENT_ROLES.has(item.atspiRole);
        for (const child of childrenOf.get(id) ?? []) next.push({ id: child, inPage: childInPage });
      }
      level = next;
    }
    return cache;
  }

  /** The reply of a call made ahead for this element (`callAhead`), else of the call made now. */
  private callOrAhead(cache: AppCache | null, ref: ObjectRef, iface: string, member: string, signature: string, body: unknown[], timeout: number): Promise<unknown[] | null> {
    return cache?.ahead.get(`${idOf(ref)} ${iface}.${member}`) ?? this.callWithin(ref, iface, member, signature, body, timeout);
  }

  private async readText(ref: ObjectRef, maxLength: number, timeout: number, cache: AppCache | null = null): Promise<string | null> {
    const reply = await this.callOrAhead(cache, ref, 'org.a11y.atspi.Text', 'GetText', 'ii', [0, maxLength], timeout);
    return reply ? String(reply[0]) : null;
  }

  /**
   * A browser window's page address: the URL its showing document reports (Chromium: the
   * Document attribute `URI`; Firefox: `DocURL`), else the text of its address bar.
   */
  private async pageAddress(elements: AccessibleElement[], timeout: number, cache: AppCache | null): Promise<string | null> {
    const documents = elements.filter((element) => DOCUMENT_ROLES.has(element.atspiRole) && element.bounds.width > 0 && element.bounds.height > 0);
    for (const document of documents) {
      const reply = await this.callOrAhead(cache, refOf(document.id), 'org.a11y.atspi.Document', 'GetAttributes', '', [], timeout);
      const attributes = (reply?.[0] ?? {}) as Record<string, string>;
      const url = attributes.URI || attributes.DocURL;
      if (url) return url;
    }
    const bar = elements.find((element) => element.role === 'address_bar');
    return bar?.text || null;
  }

  private call(ref: ObjectRef, iface: string, member: string, signature = '', body: unknown[] = []): Promise<unknown[]> {
    this.callsMade++;
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

function idOf(ref: ObjectRef): string {
  return `${ref.bus}${ref.path}`;
}

function refOf(id: string): ObjectRef {
  const slash = id.indexOf('/');
  return { bus: id.slice(0, slash), path: id.slice(slash) };
}

/** Whether an element's attributes are read: a browser's own fields (not the page's), to tell its address bar. */
function needsAttributes(atspiRole: string, inBrowser: boolean, inPage: boolean): boolean {
  return inBrowser && !inPage && (atspiRole === 'entry' || atspiRole === 'text');
}

/** Whether an element of a text role has its text read: all but static text with a name, whose name is its text. */
function needsTextRead(role: ElementRole, name: string): boolean {
  return !(role === 'static_text' && name);
}

/**
 * Whether GetChildren may name children of a cached element: the cache counts them live, but an
 * element that manages its descendants (a GTK tree view, a table) may count none and still have some.
 */
function mayHaveChildren(item: CachedItem): boolean {
  return item.childCount !== 0 || hasState(item.states, STATE.MANAGES_DESCENDANTS);
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
