/**
 * Hand-made screens for guardrail tests: devices, capabilities, and a small builder for
 * observations laid out like the simulator's (spec/simulator.md) apps and pages.
 */
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

/** A Mac app 1.0.20+ with Accessibility: sees everything. */
export const MAC_CAPS: Capabilities = { accessibility: true, page_addresses: true, element_info: true };
/** Before 1.0.20: windows only. */
export const OLD_MAC_CAPS: Capabilities = { accessibility: true, page_addresses: false, element_info: false };
/** Windows: windows only. */
export const WINDOWS_CAPS: Capabilities = { accessibility: false, page_addresses: false, element_info: false };
/** A Mac whose app lacks Accessibility permission. */
export const NO_AX_CAPS: Capabilities = { accessibility: false, page_addresses: false, element_info: false };

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

/** A browser window showing `url` with the given page elements, plus the system around it. */
export function browser(
  os: 'mac' | 'windows',
  url: string | null | undefined,
  page: (b: ScreenBuilder, app: string) => ScreenBuilder = (b) => b,
): ScreenBuilder {
  const app = os === 'mac' ? 'Safari' : 'msedge.exe';
  const b = screen().window(app, APP_WINDOW, { url });
  b.element(app, 'address_bar', 'Address', ADDRESS_BAR);
  page(b, app);
  if (os === 'mac') macSystem(b);
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
