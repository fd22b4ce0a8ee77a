import type { DesktopComputer } from '../../shared/desktop/computer';
import type { ActionResult, Capabilities, DesktopAction, ElementInfo, HelloMessage, Observation, Point } from '../../shared/desktop/protocol';
import { AccessibilityClient, AccessibilityUnavailable, toElementInfo, type AccessibilitySnapshot, type AccessibleElement, type SnapshotOptions } from './accessibility';
import { matchAccessibleWindows } from './hit-test';
import { InputError, XInput } from './input';
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

/**
 * A real Linux (X11) desktop behind the one computer interface the simulated computer serves:
 * XTEST input, the screen read through MIT-SHM or GetImage, the EWMH window list and the AT-SPI
 * tree, each a module of its own (docs/linux-desktop.md). After an act it waits for the screen
 * to be still (frame comparison, capped), then reports that frame and what is on it. Acts run
 * one at a time, in order.
 */
export class LinuxComputer implements DesktopComputer {
  readonly os = 'linux' as const;
  readonly capabilities: Capabilities;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;

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

  /** Puts the keyboard mapping back, closes the accessibility bus and the display. Safe to call twice. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue.catch(() => undefined);
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

  /** A result: the frame as PNG and the observation, read together. */
  private async report(frame: Frame, error: string | null): Promise<ActionResult> {
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
    const appOf = new Map<string, string>();
    for (const window of list.windows) {
      const tree = matched.get(window.id);
      if (!tree) continue;
      for (const element of tree.elements) {
        appOf.set(element.id, window.app);
        if (element.depth === 0 || !element.states.showing || !visibleIn(element, window, list.windows, this.connection)) continue;
        if (element.role) elements.push(toElementInfo({ ...element, role: element.role }, window.app));
        const said = element.role === 'password_field' ? null : (element.text ?? (element.role === 'static_text' || element.role === 'button' || element.role === 'link' ? element.name : null));
        if (said && said.trim() && said !== texts.at(-1)) texts.push(said.trim());
      }
    }
    onScreen.elements = elements;
    onScreen.focused = focusedElement(snapshot, appOf, list.focusedApp);
    onScreen.text = texts.join('\n').slice(0, MAX_SCREEN_TEXT);
    return onScreen;
  }

  private async snapshot(): Promise<AccessibilitySnapshot | null> {
    if (!this.accessibility) return null;
    return this.accessibility.snapshot(this.options.snapshot).catch(() => null);
  }
}

/** Whether a person can see the element: its centre is on the screen and its own window is the topmost there. */
function visibleIn(element: AccessibleElement, window: X11Window, windows: X11Window[], screen: { width: number; height: number }): boolean {
  const { bounds } = element;
  if (bounds.width <= 0 || bounds.height <= 0) return false;
  const x = bounds.x + bounds.width / 2;
  const y = bounds.y + bounds.height / 2;
  if (x < 0 || y < 0 || x >= screen.width || y >= screen.height) return false;
  const top = windows.find((candidate) => x >= candidate.bounds.x && y >= candidate.bounds.y && x < candidate.bounds.x + candidate.bounds.width && y < candidate.bounds.y + candidate.bounds.height);
  return top === window;
}

function focusedElement(snapshot: AccessibilitySnapshot, appOf: Map<string, string>, focusedApp: string | null): ElementInfo | null {
  const focused = snapshot.focused;
  if (!focused?.role) return null;
  return toElementInfo({ ...focused, role: focused.role }, appOf.get(focused.id) ?? focusedApp ?? focused.app.toLowerCase());
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
