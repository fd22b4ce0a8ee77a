import { DESKHAND_APP, type DesktopComputer } from '../../shared/desktop/computer';
import type { ActionResult, Capabilities, DesktopAction, ElementInfo, HelloMessage, Observation, Point, Rect, ShowMessage } from '../../shared/desktop/protocol';
import { elementCategory } from '../../shared/guardrails/element-categories';
import { AccessibilityClient, AccessibilityUnavailable, toElementInfo, type AccessibilitySnapshot, type SnapshotOptions } from './accessibility';
import { matchAccessibleWindows } from './hit-test';
import { InputError, XInput } from './input';
import type { PersonWindow } from './person-window';
import { BROWSER_APPS } from './roles';
import { ScreenCapture, type Frame } from './screen-capture';
import { waitForStillScreen, type StillOptions } from './screen-still';
import { listWindows, toWindowInfo, type X11Window } from './windows';
import { X11Connection } from './x11-connection';

export interface LinuxComputerOptions {
  /** The X display (`:0`); `$DISPLAY` by default. */
  display?: string;
  /** The D-Bus session bus, through which the accessibility bus is found; `$DBUS_SESSION_BUS_ADDRESS` by default. */
  sessionBusAddress?: string;
  /** The app's version, reported in the hello. */
  appVersion: string;
  /** The device's name, reported in the hello. */
  name: string;
  /** How the wait for a still screen after an act goes (quiet time, cap). */
  still?: StillOptions;
  /** Bounds of one accessibility walk. */
  snapshot?: SnapshotOptions;
  /**
   * Ask toolkits to expose their trees, as a screen reader does (default true): Chromium shows
   * no page elements until it is asked or started with accessibility on.
   */
  enableToolkits?: boolean;
}

/** The longest `wait` step, as on the simulated computer. */
export const MAX_WAIT_MS = 60_000;
/** The most text of the screen an observation carries. */
const MAX_SCREEN_TEXT = 20_000;
/** A step whose point lands on the Deskhand app's own window. */
export const OWN_WINDOW_REFUSAL = "That is the Deskhand app's own window, where the person answers and approves; the agent cannot act on it.";
/** Typing or a key while the Deskhand app's own window has the keyboard. */
export const OWN_WINDOW_KEYBOARD_REFUSAL =
  "The Deskhand app's own window has the keyboard focus (the person is typing an answer there); the agent cannot type or press keys into it.";
/** What screenshots show where the person's window shows a secret to type. */
const SECRET_COVER = [0x9e, 0x9e, 0x9e] as const;

/**
 * A real Linux (X11) desktop behind the one computer interface the simulated computer serves:
 * XTEST input, the screen read through MIT-SHM or GetImage, the EWMH window list and the AT-SPI
 * tree, each a module of its own (docs/linux-desktop.md). After an act it waits for the screen
 * to be still (frame comparison, capped), then reports that frame and what is on it. Acts run
 * one at a time, in order. It never acts on the Deskhand app's own windows (the person's window):
 * such a step is refused before any input is sent. With a person's window attached, `show`
 * draws the service's messages there, and the secret a person is asked to type is painted over
 * in the screenshots.
 */
export class LinuxComputer implements DesktopComputer {
  readonly os = 'linux' as const;
  readonly capabilities: Capabilities;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private person: PersonWindow | null = null;

  private constructor(
    private readonly options: LinuxComputerOptions,
    private readonly connection: X11Connection,
    private readonly input: XInput,
    private readonly capture: ScreenCapture,
    /** Null when the accessibility bus cannot be reached: then no elements, page addresses or text. */
    private readonly accessibility: AccessibilityClient | null,
    /** Why the accessibility bus cannot be reached, when it cannot. */
    readonly accessibilityProblem: string | null,
  ) {
    const reachable = accessibility !== null;
    this.capabilities = { accessibility: reachable, element_info: reachable, page_addresses: reachable };
  }

  /**
   * Opens the display (required: without it there is nothing to drive) and the accessibility bus
   * (optional: without it the hello says so in its capabilities).
   */
  static async open(options: LinuxComputerOptions): Promise<LinuxComputer> {
    const connection = await X11Connection.open(options.display ?? process.env.DISPLAY);
    try {
      const input = await XInput.open(connection);
      const capture = new ScreenCapture(connection);
      const busAddress = options.sessionBusAddress ?? process.env.DBUS_SESSION_BUS_ADDRESS;
      let accessibility: AccessibilityClient | null = null;
      let problem: string | null = null;
      try {
        if (options.enableToolkits !== false && busAddress) await AccessibilityClient.enableToolkits(busAddress).catch(() => undefined);
        accessibility = await AccessibilityClient.connect(busAddress);
      } catch (error) {
        if (!(error instanceof AccessibilityUnavailable)) throw error;
        problem = error.message;
      }
      return new LinuxComputer(options, connection, input, capture, accessibility, problem);
    } catch (error) {
      await connection.close().catch(() => undefined);
      throw error;
    }
  }

  /** The hello: `os: linux`, the real screen size, the app's version, what it can report. */
  hello(code: string): HelloMessage {
    return {
      code,
      device: { os: 'linux', name: this.options.name, width: this.connection.width, height: this.connection.height, app_version: this.options.appVersion },
      capabilities: { ...this.capabilities },
    };
  }

  /**
   * Carries out one step, waits until the screen is still (capped), and reports that screen. A
   * step that cannot be done (a point off the screen, an unknown key, a malformed step) is
   * `ok: false` with the reason, and the screen as it is.
   */
  act(action: DesktopAction): Promise<ActionResult> {
    return this.enqueue(async () => {
      const invalid = invalidAction(action, this.connection.width, this.connection.height);
      if (invalid) return this.report(await this.capture.frame(), invalid);
      // Before any input: the agent never acts on the app's own window (it could approve its own request).
      const own = await this.ownWindowRefusal(action);
      if (own) return this.report(await this.capture.frame(), own);
      try {
        await this.perform(action);
      } catch (error) {
        if (error instanceof InputError) return this.report(await this.capture.frame(), error.message);
        throw error;
      }
      if (action.type === 'screenshot') return this.report(await this.capture.frame(), null);
      const settled = await waitForStillScreen(() => this.capture.frame(), this.options.still);
      return this.report(settled.frame, null);
    });
  }

  /** The screen now. */
  observe(): Promise<ActionResult> {
    return this.enqueue(async () => this.report(await this.capture.frame(), null));
  }

  /** What the accessibility walk and the window list say now, without a screenshot. */
  inspect(): Promise<Observation> {
    return this.enqueue(() => this.observation());
  }

  /**
   * The person's window this computer shows the service's messages in (app.ts opens it); it is
   * closed with the computer.
   */
  attachPersonWindow(window: PersonWindow): void {
    this.person = window;
  }

  /** The person's window, when one is attached. */
  get personWindow(): PersonWindow | null {
    return this.person;
  }

  /** What the service shows the person goes to the person's window; without one it is dropped. */
  show(message: ShowMessage): void {
    if (!this.closed) this.person?.show(message);
  }

  /** Puts the keyboard mapping back, closes the person's window, the accessibility bus and the display. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
    await this.person?.close().catch(() => undefined);
    await this.input.close().catch(() => undefined);
    await this.capture.close().catch(() => undefined);
    this.accessibility?.close();
    await this.connection.close().catch(() => undefined);
  }

  private enqueue<T>(work: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('The Linux computer is closed.'));
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async perform(action: DesktopAction): Promise<void> {
    switch (action.type) {
      case 'screenshot':
        return;
      case 'click':
        return this.input.click(action.x, action.y, { button: action.button, double: action.double });
      case 'type':
        return this.input.type(action.text);
      case 'key':
        return this.input.key(action.keys);
      case 'drag':
        return this.input.drag(action.from, action.to);
      case 'scroll':
        return this.input.scroll(action.x, action.y, action.dx, action.dy);
      case 'wait':
        // The step is the wait itself; the still-screen wait follows as after any step.
        await new Promise((resolve) => setTimeout(resolve, Math.min(action.ms, MAX_WAIT_MS)));
        return;
    }
  }

  /**
   * Why a step may not run because it would act on the Deskhand app's own window, or null: a
   * click, scroll or either end of a drag whose point is in such a window (the topmost window
   * there), typing or a key while such a window has the keyboard (the window manager's active
   * window, or the X input focus).
   */
  private async ownWindowRefusal(action: DesktopAction): Promise<string | null> {
    const points: Point[] = action.type === 'click' || action.type === 'scroll' ? [action] : action.type === 'drag' ? [action.from, action.to] : [];
    const keyboard = action.type === 'type' || action.type === 'key';
    if (points.length === 0 && !keyboard) return null;
    const { client } = this.connection;
    const [list, focus] = await Promise.all([
      listWindows(this.connection),
      keyboard ? this.connection.request<{ focus: number }>((callback) => client.GetInputFocus(callback)).catch(() => null) : null,
    ]);
    for (const point of points) {
      const top = list.windows.find((window) => contains(window.bounds, point.x, point.y));
      if (top?.app === DESKHAND_APP) return OWN_WINDOW_REFUSAL;
    }
    if (keyboard) {
      if (list.focusedApp === DESKHAND_APP) return OWN_WINDOW_KEYBOARD_REFUSAL;
      if (focus && list.windows.some((window) => window.id === focus.focus && window.app === DESKHAND_APP)) return OWN_WINDOW_KEYBOARD_REFUSAL;
    }
    return null;
  }

  /**
   * A result: the frame as PNG and the observation, read together. Where the person's window
   * shows a secret to type, the screenshot is painted over: the person reads it off the screen,
   * the recording and the model do not.
   */
  private async report(frame: Frame, error: string | null): Promise<ActionResult> {
    const secrets = this.person?.secretAreas() ?? [];
    if (secrets.length > 0) cover(frame, secrets);
    const [screenshot, observation] = await Promise.all([this.capture.encode(frame), this.observation()]);
    return { ok: error === null, ...(error !== null ? { error } : {}), observation, screenshot };
  }

  /**
   * The windows topmost first, the focused app, an open modal dialog and, through AT-SPI, the
   * elements a person can see (an element counts when its window is the topmost at its centre),
   * the focused element, browsers' page addresses and the text on screen.
   */
  private async observation(): Promise<Observation> {
    const [list, snapshot] = await Promise.all([listWindows(this.connection), this.snapshot()]);
    const onScreen: Observation = {
      width: this.connection.width,
      height: this.connection.height,
      windows: [],
      focused_app: list.focusedApp,
      focused: null,
      elements: null,
      dialog: list.dialog,
      text: null,
    };
    if (!snapshot) {
      onScreen.windows = list.windows.map((window) => toWindowInfo(window));
      return onScreen;
    }
    const matched = matchAccessibleWindows(list.windows, snapshot.windows);
    onScreen.windows = list.windows.map((window) => toWindowInfo(window, BROWSER_APPS.has(window.app) ? (matched.get(window.id)?.url ?? null) : undefined));
    const elements: ElementInfo[] = [];
    const texts: string[] = [];
    const say = (said: string | null): void => {
      if (said && said.trim() && said.trim() !== texts.at(-1)) texts.push(said.trim());
    };
    const windowOf = new Map<string, X11Window>();
    for (const window of list.windows) {
      // What a press does is judged with the dialog the element is in, when its window is one.
      const dialog = window.modal ? window.title : null;
      for (const drawn of window.drawn) {
        const bounds = { ...drawn.bounds, x: window.client.x + drawn.bounds.x, y: window.client.y + drawn.bounds.y };
        if (!visibleIn(bounds, window, list.windows, this.connection)) continue;
        const category = elementCategory({ role: drawn.role, label: drawn.label, dialog });
        elements.push({ role: drawn.role, label: drawn.label, category, is_default: drawn.is_default === true, bounds, app: window.app });
        if (drawn.role !== 'password_field') say(drawn.label);
      }
      const tree = matched.get(window.id);
      if (!tree) continue;
      for (const element of tree.elements) {
        windowOf.set(element.id, window);
        if (element.depth === 0 || !element.states.showing || !visibleIn(element.bounds, window, list.windows, this.connection)) continue;
        if (element.role) elements.push(toElementInfo({ ...element, role: element.role }, window.app, elementCategory({ role: element.role, label: element.name, dialog })));
        say(element.role === 'password_field' ? null : (element.text ?? (element.role === 'static_text' || element.role === 'button' || element.role === 'link' ? element.name : null)));
      }
    }
    onScreen.elements = elements;
    onScreen.focused = focusedElement(snapshot, windowOf, list.focusedApp);
    onScreen.text = texts.join('\n').slice(0, MAX_SCREEN_TEXT);
    return onScreen;
  }

  private async snapshot(): Promise<AccessibilitySnapshot | null> {
    if (!this.accessibility) return null;
    return this.accessibility.snapshot(this.options.snapshot).catch(() => null);
  }
}

/** Whether a person can see an element at `bounds`: its centre is on the screen and its own window is the topmost there. */
function visibleIn(bounds: Rect, window: X11Window, windows: X11Window[], screen: { width: number; height: number }): boolean {
  if (bounds.width <= 0 || bounds.height <= 0) return false;
  const x = bounds.x + bounds.width / 2;
  const y = bounds.y + bounds.height / 2;
  if (x < 0 || y < 0 || x >= screen.width || y >= screen.height) return false;
  return windows.find((candidate) => contains(candidate.bounds, x, y)) === window;
}

function contains(bounds: Rect, x: number, y: number): boolean {
  return x >= bounds.x && y >= bounds.y && x < bounds.x + bounds.width && y < bounds.y + bounds.height;
}

function focusedElement(snapshot: AccessibilitySnapshot, windowOf: Map<string, X11Window>, focusedApp: string | null): ElementInfo | null {
  const focused = snapshot.focused;
  if (!focused?.role) return null;
  const window = windowOf.get(focused.id);
  const category = elementCategory({ role: focused.role, label: focused.name, dialog: window?.modal ? window.title : null });
  return toElementInfo({ ...focused, role: focused.role }, window?.app ?? focusedApp ?? focused.app.toLowerCase(), category);
}

/** Paints `areas` of a frame over (clipped to the screen), in place. */
function cover(frame: Frame, areas: Rect[]): void {
  for (const area of areas) {
    const left = Math.max(0, Math.floor(area.x));
    const right = Math.min(frame.width, Math.ceil(area.x + area.width));
    const top = Math.max(0, Math.floor(area.y));
    const bottom = Math.min(frame.height, Math.ceil(area.y + area.height));
    for (let y = top; y < bottom; y++) {
      for (let x = left; x < right; x++) {
        const offset = (y * frame.width + x) * 4;
        frame.rgba[offset] = SECRET_COVER[0];
        frame.rgba[offset + 1] = SECRET_COVER[1];
        frame.rgba[offset + 2] = SECRET_COVER[2];
      }
    }
  }
}

/** Why a step cannot be done as written, or null when it can be tried. */
export function invalidAction(action: unknown, width: number, height: number): string | null {
  const step = action as Partial<Record<string, unknown>> | null;
  if (!step || typeof step !== 'object' || typeof step.type !== 'string') return 'A step is an object with a type.';
  const point = (value: unknown, what: string): string | null => {
    const p = value as Partial<Point> | null;
    if (!p || typeof p !== 'object' || !Number.isFinite(p.x) || !Number.isFinite(p.y)) return `${what} needs numbers x and y.`;
    if (p.x! < 0 || p.y! < 0 || p.x! >= width || p.y! >= height) return `${what} (${p.x}, ${p.y}) is outside the screen (${width}×${height}).`;
    return null;
  };
  switch (step.type) {
    case 'screenshot':
      return null;
    case 'click':
      if (step.button !== undefined && step.button !== 'left' && step.button !== 'right') return 'A click\'s button is left or right.';
      return point(step, 'The click');
    case 'type':
      return typeof step.text === 'string' ? null : 'A type step needs text.';
    case 'key':
      return typeof step.keys === 'string' && step.keys.trim() ? null : 'A key step needs keys, such as ctrl+s.';
    case 'drag':
      return point(step.from, 'The drag\'s start') ?? point(step.to, 'The drag\'s end');
    case 'scroll':
      if (!Number.isFinite(step.dx) || !Number.isFinite(step.dy)) return 'A scroll needs numbers dx and dy.';
      return point(step, 'The scroll');
    case 'wait':
      return Number.isFinite(step.ms) && (step.ms as number) >= 0 ? null : 'A wait needs ms, a number of milliseconds.';
    default:
      return `Unknown step type "${step.type}".`;
  }
}
