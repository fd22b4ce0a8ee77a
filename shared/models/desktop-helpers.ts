/**
 * What every backend needs to know about the person's computer to turn a model's intent into
 * desktop actions: app names per system, where a label is on screen, how keys are written.
 */
import { LAUNCHER_APP } from '../desktop/computer';
import type { DesktopAction, Observation, Rect } from '../desktop/protocol';
import { keyForOs, SHORTCUT_MODIFIER } from '../desktop/keys';
import type { DesktopOs } from '../desktop/os';
import { actionFailures, outcomeText } from './agent-tools';
import type { TurnOutcome } from './model.types';

/** `mac`, `windows` or `linux`; anything else is treated like a Mac (shared/desktop/os.ts). */
export { desktopOs, type DesktopOs } from '../desktop/os';

/**
 * The generic app names of docs/simulator.md (and Terminal, which the simulator lacks), what each
 * system calls them, and what the Windows taskbar button shows (the simulator's tooltip label, as
 * on a real taskbar). The Linux session's launcher shows the generic names.
 */
type AppNames = Record<DesktopOs, string> & { taskbar: string };

/** On Linux, the app as the window list names it (WM_CLASS class in lower case, docs/linux-desktop.md). */
export const APPS: Readonly<Record<string, AppNames>> = Object.freeze({
  Browser: { mac: 'Safari', windows: 'msedge.exe', linux: 'chromium', taskbar: 'Microsoft Edge' },
  Mail: { mac: 'Mail', windows: 'outlook.exe', linux: 'thunderbird', taskbar: 'Outlook' },
  Files: { mac: 'Finder', windows: 'explorer.exe', linux: 'thunar', taskbar: 'File Explorer' },
  Settings: { mac: 'System Settings', windows: 'SystemSettings.exe', linux: 'xfce4-settings-manager', taskbar: 'Settings' },
  Store: { mac: 'App Store', windows: 'WinStore.App.exe', linux: 'gnome-software', taskbar: 'Microsoft Store' },
  Notes: { mac: 'TextEdit', windows: 'notepad.exe', linux: 'mousepad', taskbar: 'Notepad' },
  // Windows Terminal, the default terminal of Windows 11 (cmd.exe runs inside it there).
  Terminal: { mac: 'Terminal', windows: 'WindowsTerminal.exe', linux: 'xterm', taskbar: 'Terminal' },
});

/** The generic name an app goes by (matched case-insensitively), and its names; null for other names. */
function appEntry(name: string): { generic: string; names: AppNames } | null {
  const wanted = name.trim().toLowerCase();
  const generic = Object.keys(APPS).find((g) => g.toLowerCase() === wanted);
  return generic ? { generic, names: APPS[generic] } : null;
}

/**
 * The system's name for an app: a generic name (matched case-insensitively) maps through
 * `APPS`; any other name is taken as the system's own name and returned unchanged.
 */
export function systemAppName(name: string, os: DesktopOs): string {
  return appEntry(name)?.names[os] ?? name.trim();
}

export function centre(rect: Rect): { x: number; y: number } {
  return { x: Math.round(rect.x + rect.width / 2), y: Math.round(rect.y + rect.height / 2) };
}

/**
 * Where an element with this label is on screen. Looks in the simulator's `visible_labels`
 * first (exact, then case-insensitive), then in `elements` (apps with element info). When a
 * label appears more than once the first entry wins: both lists run from the topmost window down.
 */
export function findLabel(observation: Observation | null, label: string): Rect | null {
  if (!observation) return null;
  const candidates: Array<{ label: string; bounds: Rect }> = [
    ...(observation.visible_labels ?? []),
    ...(observation.elements ?? []),
  ];
  const exact = candidates.find((c) => c.label === label);
  if (exact) return exact.bounds;
  const lower = label.toLowerCase();
  return candidates.find((c) => c.label.toLowerCase() === lower)?.bounds ?? null;
}

/**
 * The labels under which the simulator may show a browser's address bar in `visible_labels`
 * (compared case-insensitively). An element with role `address_bar` is found without them.
 */
export const ADDRESS_BAR_LABELS: readonly string[] = Object.freeze([
  'Address bar',
  'Address',
  'Address and search bar',
  'Search or enter website name',
  'URL',
]);

/** Where the browser's address bar is, or null when no browser shows one. */
export function findAddressBar(observation: Observation | null): Rect | null {
  if (!observation) return null;
  const byRole = (observation.elements ?? []).find((e) => e.role === 'address_bar');
  if (byRole) return byRole.bounds;
  const wanted = new Set(ADDRESS_BAR_LABELS.map((l) => l.toLowerCase()));
  return (observation.visible_labels ?? []).find((l) => wanted.has(l.label.toLowerCase()))?.bounds ?? null;
}

/** The page address the computer last reported (topmost window that has one), if any. */
export function currentUrl(observation: Observation | null): string | null {
  return observation?.windows.find((w) => typeof w.url === 'string' && w.url !== '')?.url ?? null;
}

/**
 * Writes a key combo the protocol's way: lowercase names joined with `+` (`cmd+enter`), with
 * common aliases (`Return`, `Control`, `ArrowUp`…) mapped. On Windows and Linux `cmd` becomes
 * `ctrl`, as a person switching systems would press it. The system key (`super`, `meta`, `win`)
 * is `cmd` on a Mac, `win` on Windows and `super` on Linux (shared/desktop/keys.ts). Returns null
 * for an empty combo.
 */
export function normalizeCombo(combo: string, os: DesktopOs): string | null {
  const parts = combo
    .split('+')
    .map((p) => p.trim())
    .filter((p) => p !== '')
    .map((p) => keyForOs(p, os));
  // A lone "+" means the plus key itself.
  if (parts.length === 0) return combo.includes('+') ? 'plus' : null;
  return parts.join('+');
}

/** The modifier for app shortcuts: Cmd on a Mac, Ctrl on Windows and Linux. */
export function primaryModifier(os: DesktopOs): 'cmd' | 'ctrl' {
  return SHORTCUT_MODIFIER[os];
}

export type PlannedActions = { ok: true; actions: DesktopAction[] } | { ok: false; error: string };

/**
 * How a person opens an app: on a Mac through Spotlight (Cmd+Space, the app's name, Enter); on
 * Windows by clicking the app's taskbar button, found by the app's Windows name (`msedge.exe`)
 * or by what the button shows (`Microsoft Edge`); on Linux by clicking the button of the
 * session's launcher ({@link launcherButton}).
 */
export function openAppActions(app: string, os: DesktopOs, observation: Observation | null): PlannedActions {
  const name = systemAppName(app, os);
  if (os === 'linux') {
    const generic = appEntry(app)?.generic ?? Object.keys(APPS).find((g) => APPS[g].linux === name.toLowerCase());
    const button = launcherButton(observation, generic ? [generic, name] : [name]);
    if (!button) {
      return { ok: false, error: `No launcher button "${generic ?? name}" on the screen (the Linux session's launcher, docs/linux-desktop.md)` };
    }
    return { ok: true, actions: [{ type: 'click', ...centre(button) }] };
  }
  if (os === 'mac') {
    return {
      ok: true,
      actions: [
        { type: 'key', keys: 'cmd+space' },
        { type: 'type', text: name },
        { type: 'key', keys: 'enter' },
      ],
    };
  }
  const shown = appEntry(app)?.names.taskbar;
  const button = findLabel(observation, name) ?? (shown ? findLabel(observation, shown) : null);
  if (!button) return { ok: false, error: `No taskbar button "${shown ?? name}" on the screen` };
  return { ok: true, actions: [{ type: 'click', x: centre(button).x, y: centre(button).y }] };
}

/**
 * The button that opens an app in the Linux session's launcher (`deskhand-launcher`, a panel
 * whose buttons are labelled with the generic names: Browser, Notes, Terminal): the first of
 * `labels` (exact, then case-insensitive, as {@link findLabel} finds them) among the launcher's
 * elements, else among the elements of another system window's app (a desktop's own panel). Page
 * and app elements are never taken for it: a page's "Terminal" link does not open xterm.
 */
function launcherButton(observation: Observation | null, labels: string[]): Rect | null {
  if (!observation?.elements) return null;
  const systemApps = new Set(observation.windows.filter((w) => w.system).map((w) => w.app.toLowerCase()));
  const launcher = observation.elements.filter((e) => e.app.toLowerCase() === LAUNCHER_APP);
  const panels = observation.elements.filter((e) => e.app.toLowerCase() !== LAUNCHER_APP && systemApps.has(e.app.toLowerCase()));
  for (const elements of [launcher, panels]) {
    const only: Observation = { ...observation, visible_labels: undefined, elements };
    for (const label of labels) {
      const found = findLabel(only, label);
      if (found) return found;
    }
  }
  return null;
}

/**
 * How a person goes to an address: click the address bar, type, Enter. Without an address bar
 * on screen, `fallbackShortcut` focuses it with Cmd/Ctrl+L instead (vendor models that ask to
 * navigate); the scripted model reports the step as failed.
 */
export function navigateActions(
  address: string,
  os: DesktopOs,
  observation: Observation | null,
  fallbackShortcut: boolean,
): PlannedActions {
  const bar = findAddressBar(observation);
  let focus: DesktopAction;
  if (bar) {
    focus = { type: 'click', ...centre(bar) };
  } else if (fallbackShortcut) {
    focus = { type: 'key', keys: `${primaryModifier(os)}+l` };
  } else {
    return { ok: false, error: 'No address bar on the screen (is Browser open?)' };
  }
  return {
    ok: true,
    actions: [focus, { type: 'type', text: address }, { type: 'key', keys: 'enter' }],
  };
}

/** The middle of the screen (where a scroll given no point happens). */
export function screenCentre(width: number, height: number): { x: number; y: number } {
  return { x: Math.round(width / 2), y: Math.round(height / 2) };
}

/** A scroll `direction` (`up`, `down`, `left` or `right`) as pixel deltas; both 0 for anything else. */
export function scrollDelta(direction: unknown, horizontal: number, vertical: number): { dx: number; dy: number } {
  return {
    dx: direction === 'left' ? -horizontal : direction === 'right' ? horizontal : 0,
    dy: direction === 'up' ? -vertical : direction === 'down' ? vertical : 0,
  };
}

/** The browser's Back or Forward shortcut. */
export function historyKeys(direction: 'back' | 'forward', os: DesktopOs): string {
  if (os !== 'mac') return direction === 'back' ? 'alt+left' : 'alt+right';
  return direction === 'back' ? 'cmd+[' : 'cmd+]';
}

/** Clamps a point to the screen. */
export function clampPoint(x: number, y: number, width: number, height: number): { x: number; y: number } {
  const cx = Math.min(Math.max(Math.round(x), 0), Math.max(width - 1, 0));
  const cy = Math.min(Math.max(Math.round(y), 0), Math.max(height - 1, 0));
  return { x: cx, y: cy };
}

/** A move's `step` describes its actions with the one describer the task's events use too. */
export { describeActions } from '../desktop/describe-action';

/** How the actions a vendor's call became went, read from the previous turn's outcome. */
export interface CallOutcome {
  /** The guardrails (or a person) refused some of them: why, as the model should read it. */
  refused: string | null;
  /** Which of them failed on the computer, or null. */
  failures: string | null;
  /** Every one of them was carried out (ok or failed); false when any was refused. */
  ran: boolean;
}

/**
 * The outcome of the actions `first … first + count - 1` of the previous move. Shared by the
 * three backends, which answer each vendor call with it.
 */
export function callOutcome(outcome: TurnOutcome | null, first: number, count: number): CallOutcome {
  const results = outcome && (outcome.kind === 'actions' || outcome.kind === 'refused') ? (outcome.results ?? []) : [];
  const mine = results.slice(first, first + count);
  if (outcome?.kind === 'refused' && mine.length < count) return { refused: outcomeText(outcome).text, failures: null, ran: false };
  return { refused: null, failures: actionFailures(mine)?.replace(/\.+$/, '') ?? null, ran: true };
}

/**
 * Whether a vendor's safety check on a call may be acknowledged: only when a person approved it
 * (`safetyApproved`) and the call's actions then ran. Never when the guardrails refused them, nor
 * when nobody was asked.
 */
export function mayAcknowledgeSafety(safetyApproved: boolean | undefined, call: CallOutcome): boolean {
  return safetyApproved === true && call.ran && call.refused === null;
}

/** Told to a model that asks to hold keys the desktop protocol cannot hold. */
export const HELD_KEYS_UNAVAILABLE =
  'Holding keys during a click, drag or scroll is not available on this computer; do it without them, or use a keyboard shortcut instead.';

/**
 * Applies keys a model holds during a mouse action (Anthropic's `text` on a click or scroll,
 * OpenAI's `keys`). The desktop protocol presses keys but cannot hold them, so only what has an
 * equivalent is carried out: Shift held on a vertical scroll scrolls sideways, as on both
 * systems. Anything else is refused with `HELD_KEYS_UNAVAILABLE` rather than silently dropped,
 * which would turn a Cmd+click into a plain click.
 */
export function withHeldKeys(actions: DesktopAction[], held: string[], os: DesktopOs): PlannedActions {
  const keys = held
    .flatMap((k) => k.split('+'))
    .map((k) => normalizeCombo(k, os))
    .filter((k): k is string => k !== null);
  if (keys.length === 0) return { ok: true, actions };
  if (keys.every((k) => k === 'shift') && actions.every((a) => a.type === 'scroll')) {
    return {
      ok: true,
      actions: actions.map((a) => (a.type === 'scroll' && a.dx === 0 ? { ...a, dx: a.dy, dy: 0 } : a)),
    };
  }
  return { ok: false, error: `${HELD_KEYS_UNAVAILABLE} (asked to hold ${keys.join('+')})` };
}
