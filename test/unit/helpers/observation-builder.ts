/**
 * Hand-made screens for guardrail tests: devices, capabilities, and a small builder for
 * observations laid out like the simulator's (spec/simulator.md) apps and pages, and like the
 * Linux app's (docs/linux-desktop.md: apps by WM_CLASS, the session's launcher, the person's window).
 */
import { DESKHAND_APP, LAUNCHER_APP } from '../../../shared/desktop/computer';
import type {
  Capabilities,
  DesktopAction,
  DeviceInfo,
  ElementInfo,
  ElementRole,
  GuardrailCategory,
  Observation,
  Rect,
  WindowInfo,
} from '../../../shared/desktop/protocol';
import { judgeAction, type AddressBarBuffer, type Decision, type JudgeInput } from '../../../shared/guardrails/engine';
import { normalizeGuardrails, type GuardrailsInput } from '../../../shared/guardrails/guardrails.types';

export const MAC: DeviceInfo = { os: 'mac', name: 'test-mac', width: 1440, height: 900, app_version: '1.0.20' };
export const OLD_MAC: DeviceInfo = { ...MAC, app_version: '1.0.19' };
export const WINDOWS: DeviceInfo = { os: 'windows', name: 'test-pc', width: 1440, height: 900, app_version: '1.0.20' };
/** The Linux (X11) app, deskhand-desktop; its version numbers start again at 0.1.0. */
export const LINUX: DeviceInfo = { os: 'linux', name: 'test-linux', width: 1440, height: 900, app_version: '0.1.0' };

/** A Mac app 1.0.20+ with Accessibility: sees everything. */
export const MAC_CAPS: Capabilities = { accessibility: true, page_addresses: true, element_info: true };
/** Before 1.0.20: windows only. */
export const OLD_MAC_CAPS: Capabilities = { accessibility: true, page_addresses: false, element_info: false };
/** Windows: windows only. */
export const WINDOWS_CAPS: Capabilities = { accessibility: false, page_addresses: false, element_info: false };
/** A Mac whose app lacks Accessibility permission. */
export const NO_AX_CAPS: Capabilities = { accessibility: false, page_addresses: false, element_info: false };
/** The Linux app with the desktop's accessibility bus (AT-SPI): elements, categories, page addresses. */
export const LINUX_CAPS: Capabilities = { accessibility: true, page_addresses: true, element_info: true };
/** The Linux app that cannot reach the accessibility bus: windows from X11 only. */
export const LINUX_NO_AX_CAPS: Capabilities = { accessibility: false, page_addresses: false, element_info: false };

export const rect = (x: number, y: number, width: number, height: number): Rect => ({ x, y, width, height });

/** The centre of a rectangle: where a test clicks. */
export const centre = (r: Rect): { x: number; y: number } => ({ x: r.x + Math.floor(r.width / 2), y: r.y + Math.floor(r.height / 2) });

export interface ElementOptions {
  category?: GuardrailCategory | null;
  is_default?: boolean;
}

export class ScreenBuilder {
  private readonly windows: WindowInfo[] = [];
  private readonly elements: ElementInfo[] = [];
  private focusedApp: string | null = null;
  private focusedElement: ElementInfo | null = null;
  private dialogInfo: { title: string; app: string } | null = null;
  private screenText: string | null = null;
  private elementInfo = true;

  /** Adds a window below those added before (add the topmost first). */
  window(app: string, bounds: Rect, opts: { url?: string | null; system?: boolean; title?: string } = {}): this {
    const w: WindowInfo = { app, title: opts.title ?? app, bounds, system: opts.system ?? false };
    if (opts.url !== undefined) w.url = opts.url;
    this.windows.push(w);
    return this;
  }

  element(app: string, role: ElementRole, label: string, bounds: Rect, opts: ElementOptions = {}): this {
    this.elements.push({ app, role, label, bounds, category: opts.category ?? null, is_default: opts.is_default ?? false });
    return this;
  }

  /** Gives an app the keyboard focus, and optionally one of its elements (by label). */
  focus(app: string | null, label?: string): this {
    this.focusedApp = app;
    if (label !== undefined) {
      const e = this.elements.find((el) => el.label === label);
      if (!e) throw new Error(`no element labelled ${label}`);
      this.focusedElement = e;
    } else {
      this.focusedElement = null;
    }
    return this;
  }

  dialog(title: string, app: string): this {
    this.dialogInfo = { title, app };
    return this;
  }

  text(t: string): this {
    this.screenText = t;
    return this;
  }

  /** As Windows and older apps report: no elements, no focused element. */
  withoutElementInfo(): this {
    this.elementInfo = false;
    return this;
  }

  /** Looks up an element added earlier. */
  at(label: string): Rect {
    const e = this.elements.find((el) => el.label === label);
    if (!e) throw new Error(`no element labelled ${label}`);
    return e.bounds;
  }

  build(): Observation {
    return {
      width: 1440,
      height: 900,
      windows: this.windows.map((w) => ({ ...w })),
      focused_app: this.focusedApp,
      focused: this.elementInfo ? this.focusedElement : null,
      elements: this.elementInfo ? this.elements.map((e) => ({ ...e })) : null,
      dialog: this.dialogInfo,
      text: this.screenText,
    };
  }
}

export const screen = (): ScreenBuilder => new ScreenBuilder();

// ---------------------------------------------------------------------------------------------
// Layouts like the simulator's

export const MENU_BAR = rect(0, 0, 1440, 25);
export const DOCK = rect(300, 840, 840, 60);
export const TASKBAR = rect(0, 860, 1440, 40);
export const APP_WINDOW = rect(0, 25, 1440, 815);
export const ADDRESS_BAR = rect(200, 35, 900, 30);

/** Adds the Mac's system parts (menu bar, Dock with its Trash) under the app windows. */
export function macSystem(b: ScreenBuilder): ScreenBuilder {
  return b
    .window('Menu Bar', MENU_BAR, { system: true })
    .window('Dock', DOCK, { system: true })
    .element('Dock', 'icon', 'Trash', rect(1080, 845, 50, 50), { category: 'delete' })
    .element('Dock', 'icon', 'Mail', rect(400, 845, 50, 50));
}

/** The Linux session's launcher panel along the bottom (docs/linux-desktop.md). */
export const LAUNCHER = rect(0, 860, 1440, 40);
/** The person's window of the Deskhand app, in the top right corner. */
export const PERSON_WINDOW = rect(1040, 40, 380, 320);

/** Adds the Linux session's launcher (`deskhand-launcher`, a system window) with Browser, Notes and Terminal. */
export function linuxSystem(b: ScreenBuilder): ScreenBuilder {
  return b
    .window(LAUNCHER_APP, LAUNCHER, { system: true, title: 'Launcher' })
    .element(LAUNCHER_APP, 'button', 'Browser', rect(10, 865, 110, 30))
    .element(LAUNCHER_APP, 'button', 'Notes', rect(130, 865, 110, 30))
    .element(LAUNCHER_APP, 'button', 'Terminal', rect(250, 865, 110, 30));
}

/**
 * Adds the Deskhand app's own window (`deskhand-desktop`) showing an approval: the question,
 * Approve, Deny and Stop. Add it first to have it on top.
 */
export function personWindow(b: ScreenBuilder): ScreenBuilder {
  return b
    .window(DESKHAND_APP, PERSON_WINDOW, { title: 'Deskhand' })
    .element(DESKHAND_APP, 'static_text', 'Buy the T-shirt?', rect(1060, 60, 340, 40))
    .element(DESKHAND_APP, 'text_field', 'Your answer', rect(1060, 120, 340, 30))
    .element(DESKHAND_APP, 'button', 'Approve', rect(1060, 260, 160, 40))
    .element(DESKHAND_APP, 'button', 'Deny', rect(1240, 260, 160, 40))
    .element(DESKHAND_APP, 'button', 'Stop', rect(1060, 310, 340, 40));
}

/** Each system's browser as its app reports it: Safari, msedge.exe, Chromium by its WM_CLASS. */
const BROWSER_APP = { mac: 'Safari', windows: 'msedge.exe', linux: 'chromium' } as const;

/**
 * A browser window showing `url` with the given page elements, plus the system around it. Windows
 * given in `b` (the person's window, say) lie above the browser.
 */
export function browser(
  os: 'mac' | 'windows' | 'linux',
  url: string | null | undefined,
  page: (b: ScreenBuilder, app: string) => ScreenBuilder = (b) => b,
  b: ScreenBuilder = screen(),
): ScreenBuilder {
  const app = BROWSER_APP[os];
  b.window(app, APP_WINDOW, { url });
  b.element(app, 'address_bar', 'Address', ADDRESS_BAR);
  page(b, app);
  if (os === 'mac') macSystem(b);
  else if (os === 'linux') linuxSystem(b);
  else b.window('explorer.exe', TASKBAR, { system: true });
  return b.focus(app);
}

/** shop.example.com: Add to cart (none) and Buy now (purchase). */
export const shopPage = (b: ScreenBuilder, app: string): ScreenBuilder =>
  b
    .element(app, 'static_text', 'Handmade mug', rect(100, 120, 400, 40))
    .element(app, 'button', 'Add to cart', rect(100, 200, 160, 40))
    .element(app, 'button', 'Buy now', rect(300, 200, 160, 40), { category: 'purchase' });

/** mail.example.com: To, Message, Send (send). */
export const mailPage = (b: ScreenBuilder, app: string): ScreenBuilder =>
  b
    .element(app, 'text_field', 'To', rect(100, 120, 600, 30))
    .element(app, 'text_area', 'Message', rect(100, 170, 600, 300))
    .element(app, 'button', 'Send', rect(100, 500, 120, 40), { category: 'send' });

/** login.example.com: Email, Password (a password field), Sign in. */
export const loginPage = (b: ScreenBuilder, app: string): ScreenBuilder =>
  b
    .element(app, 'text_field', 'Email', rect(100, 120, 400, 30))
    .element(app, 'password_field', 'Password', rect(100, 170, 400, 30))
    .element(app, 'button', 'Sign in', rect(100, 220, 120, 40));

/** Mousepad (GTK) editing notes.txt: its text area focused, over the launcher. */
export function mousepad(): ScreenBuilder {
  const b = screen()
    .window('mousepad', rect(100, 60, 900, 700), { title: 'notes.txt - Mousepad' })
    .element('mousepad', 'menu_item', 'File', rect(100, 90, 40, 24))
    .element('mousepad', 'text_area', 'notes.txt', rect(100, 120, 900, 640));
  return linuxSystem(b).focus('mousepad', 'notes.txt');
}

/** Finder with report.txt, Move to Trash (delete) and Empty Trash, over the system parts. */
export function finder(): ScreenBuilder {
  const b = screen()
    .window('Finder', rect(100, 100, 900, 600))
    .element('Finder', 'item', 'report.txt', rect(150, 200, 100, 80))
    .element('Finder', 'button', 'Move to Trash', rect(150, 620, 160, 40), { category: 'delete' })
    .element('Finder', 'button', 'Empty Trash', rect(350, 620, 160, 40));
  return macSystem(b).focus('Finder');
}

// ---------------------------------------------------------------------------------------------
// Judging with defaults

export interface JudgeOptions {
  guardrails?: GuardrailsInput;
  device?: DeviceInfo;
  capabilities?: Capabilities;
  observation?: Observation | null;
  addressBar?: AddressBarBuffer | null;
  secrets?: string[];
  declaredCategory?: GuardrailCategory | null;
}

/** Judges `action` on a Mac 1.0.20 with default guardrails unless told otherwise. */
export function judge(action: DesktopAction, opts: JudgeOptions = {}): Decision {
  const input: JudgeInput = {
    guardrails: normalizeGuardrails(opts.guardrails ?? {}),
    device: opts.device ?? MAC,
    capabilities: opts.capabilities ?? MAC_CAPS,
    observation: opts.observation === undefined ? null : opts.observation,
    action,
    addressBar: opts.addressBar ?? null,
    secrets: opts.secrets,
    declaredCategory: opts.declaredCategory ?? null,
  };
  return judgeAction(input);
}

export const click = (r: Rect): DesktopAction => ({ type: 'click', ...centre(r) });
export const key = (keys: string): DesktopAction => ({ type: 'key', keys });
export const type = (text: string): DesktopAction => ({ type: 'type', text });
export const drag = (from: Rect, to: Rect): DesktopAction => ({ type: 'drag', from: centre(from), to: centre(to) });
