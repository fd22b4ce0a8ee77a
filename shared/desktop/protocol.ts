/**
 * The desktop protocol: what the service and a person's desktop app say to each other over
 * socket.io. The reference desktop client (`npx deskhand desktop`) and the real apps speak it;
 * the guardrail engine judges actions against the `Observation` the computer last reported.
 *
 * docs/desktop-protocol.md describes the message flow; this file is the single source of the
 * message shapes.
 */

export const GUARDRAIL_CATEGORIES = ['purchase', 'send', 'delete', 'install', 'security', 'terms'] as const;
export type GuardrailCategory = (typeof GUARDRAIL_CATEGORIES)[number];

export interface Point {
  x: number;
  y: number;
}

export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What the app reports about the computer when it connects. */
export interface DeviceInfo {
  /** `mac`, `windows` or `linux` (shared/desktop/os.ts). */
  os: string;
  name: string;
  width: number;
  height: number;
  app_version: string;
}

/** What the app can report; decides which guardrails can be checked on this computer. */
export interface Capabilities {
  /**
   * A Mac app with Accessibility permission, a Linux app that reached the desktop's accessibility
   * bus (AT-SPI); without it the app cannot see or police steps.
   */
  accessibility: boolean;
  /** The app reports the address of the page shown in a browser (macOS, app 1.0.20 or later). */
  page_addresses: boolean;
  /** The app reports what lies under a point: role, label, category, default button (macOS 1.0.20+). */
  element_info: boolean;
}

/**
 * One low-level step the agent asks the computer to do. Keys are written as combos joined with
 * `+`, lowercase: `enter`, `cmd+enter`, `ctrl+enter`, `cmd+space`, `delete`, `backspace`, `space`.
 */
export type DesktopAction =
  | { type: 'screenshot' }
  | { type: 'click'; x: number; y: number; button?: 'left' | 'right'; double?: boolean }
  | { type: 'type'; text: string }
  | { type: 'key'; keys: string }
  | { type: 'drag'; from: Point; to: Point }
  | { type: 'scroll'; x: number; y: number; dx: number; dy: number }
  | { type: 'wait'; ms: number };

/** A window on screen as the system's window list reports it; every app reports these. */
export interface WindowInfo {
  /** The owning app as the system names it: `Safari`, `msedge.exe`, `Dock`, `explorer.exe`. */
  app: string;
  title: string;
  bounds: Rect;
  /** True for parts of the system (Dock, menu bar, Control Center, Spotlight on a Mac). */
  system: boolean;
  /** The page address shown, for a window with web content; only with `page_addresses`. */
  url?: string | null;
}

/** Element roles the apps report. `address_bar` is a browser's location field. */
export type ElementRole =
  | 'button'
  | 'link'
  | 'text_field'
  | 'password_field'
  | 'text_area'
  | 'address_bar'
  | 'item'
  | 'icon'
  | 'menu_item'
  | 'static_text';

/** What lies at a place on screen; only reported with `element_info`. */
export interface ElementInfo {
  role: ElementRole;
  label: string;
  /** What pressing or dropping on it would do, as a guardrail category; null when none. */
  category: GuardrailCategory | null;
  /** The default button of a dialog (Return/Enter/Space presses it). */
  is_default: boolean;
  bounds: Rect;
  /** The app owning the element. */
  app: string;
}

/**
 * What the computer reports after every action: the screen, the windows, and (capabilities
 * permitting) the elements and page addresses. The guardrail engine judges the *next* action
 * against the latest observation.
 */
export interface Observation {
  width: number;
  height: number;
  /** Windows from the topmost down, system parts included. */
  windows: WindowInfo[];
  /** The app whose window has keyboard focus; null when none. */
  focused_app: string | null;
  /** The focused element (a field, a button); only with `element_info`, else null. */
  focused: ElementInfo | null;
  /** Every element on screen with what it would do; null without `element_info`. */
  elements: ElementInfo[] | null;
  /** An open modal dialog, if any. */
  dialog: { title: string; app: string } | null;
  /** Visible text on screen, for screen checks; null when the app cannot read it. */
  text: string | null;
  /**
   * Simulator only: the labels visible on screen and where they are. It stands in for what a
   * vision model reads off the pixels, so that the scripted model can click by label; real apps
   * do not send it and no guardrail reads it.
   */
  visible_labels?: Array<{ label: string; bounds: Rect }>;
}

/** Result of one action on the computer. */
export interface ActionResult {
  ok: boolean;
  /** Why the action could not be carried out (no such element, app not open…). */
  error?: string;
  observation: Observation;
  /** PNG of the screen after the action. */
  screenshot: Buffer;
}

/** Socket.io event names, one place. */
export const DesktopEvents = {
  /** app → service, on connect, with `HelloMessage`; acknowledged with `HelloReply`. */
  hello: 'desktop:hello',
  /** service → app: run one action (`ActMessage`); the app answers with `result`. */
  act: 'desktop:act',
  /** app → service: the outcome of an `act` (`ResultMessage`), with the screen after it. */
  result: 'desktop:result',
  /** service → app: what the person sees (narration, banner, questions, approvals). */
  show: 'desktop:show',
  /** app → service: the person answered a question, decided an approval or pressed Stop. */
  person: 'desktop:person',
  /** service → app: the team disconnected the session; the app forgets the code. */
  released: 'desktop:released',
} as const;

export interface ActMessage {
  task_id: string;
  /**
   * Names this action; the result must carry it back. After a reconnect the service may send the
   * same act again: the app runs an `act_id` once and answers a repeat with the same result.
   */
  act_id: string;
  action: DesktopAction;
}

export interface ResultMessage {
  task_id: string;
  act_id: string;
  result: ActionResult;
}

export interface HelloMessage {
  code: string;
  device: DeviceInfo;
  capabilities: Capabilities;
}

export type HelloReply =
  | { ok: true; session_id: string; agent: { display_name: string; greeting: string } }
  | { ok: false; code: 'unknown_code' | 'expired' | 'invalid'; message: string };

/** What the person's screen shows; sent by the service, rendered by the app. */
export type ShowMessage =
  | { kind: 'banner'; task_id: string; agent_name: string; running: boolean }
  | { kind: 'narration'; task_id: string; text: string; step?: string }
  | { kind: 'summary'; task_id: string; text: string }
  | { kind: 'question'; task_id: string; question_id: string; question: string; options: string[] }
  | { kind: 'approval'; task_id: string; approval_id: string; what: string; risk: 'normal' | 'high'; category: GuardrailCategory | null }
  | { kind: 'type_secret'; task_id: string; request_id: string; field: string; text: string }
  | { kind: 'clear'; task_id: string; item_id: string }
  | { kind: 'ended'; task_id: string; status: string; message: string };

/** What the person did, sent by the app. */
export type PersonMessage =
  | { kind: 'answer'; task_id: string; question_id: string; answer: string }
  | { kind: 'decision'; task_id: string; approval_id: string; decision: 'approve' | 'deny' }
  | { kind: 'stop'; task_id: string }
  | { kind: 'typed_secret'; task_id: string; request_id: string };
