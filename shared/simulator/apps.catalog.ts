/**
 * The apps of the simulated computer (docs/simulator.md, "Apps"): their generic names, which
 * `open` uses, and what each system calls them. One table, so that the computer, the scripted
 * model and the docs cannot disagree about a name.
 */

export type SimulatedOs = 'mac' | 'windows';

export const SIMULATED_OSES: readonly SimulatedOs[] = ['mac', 'windows'];

export type AppName = 'Browser' | 'Mail' | 'Files' | 'Settings' | 'Store' | 'Notes';

export interface AppEntry {
  /** The generic name that scripts use (`open Browser`). */
  name: AppName;
  /** The owning app as each system's window list names it. */
  mac: string;
  windows: string;
  /** What the Windows taskbar button shows (its tooltip); the scripted model clicks it by this label. */
  taskbarLabel: string;
  /** Window titles when the app has nothing more specific to show. */
  macTitle: string;
  windowsTitle: string;
  /** Icon colour in the Dock and on the taskbar. */
  color: string;
}

export const APPS: readonly AppEntry[] = Object.freeze([
  { name: 'Browser', mac: 'Safari', windows: 'msedge.exe', taskbarLabel: 'Microsoft Edge', macTitle: 'Start Page', windowsTitle: 'New tab', color: '#1e88e5' },
  { name: 'Mail', mac: 'Mail', windows: 'outlook.exe', taskbarLabel: 'Outlook', macTitle: 'New Message', windowsTitle: 'New Message', color: '#0a84ff' },
  { name: 'Files', mac: 'Finder', windows: 'explorer.exe', taskbarLabel: 'File Explorer', macTitle: 'Documents', windowsTitle: 'Documents - File Explorer', color: '#5ac8fa' },
  { name: 'Settings', mac: 'System Settings', windows: 'SystemSettings.exe', taskbarLabel: 'Settings', macTitle: 'System Settings', windowsTitle: 'Settings', color: '#8e8e93' },
  { name: 'Store', mac: 'App Store', windows: 'WinStore.App.exe', taskbarLabel: 'Microsoft Store', macTitle: 'App Store', windowsTitle: 'Microsoft Store', color: '#007aff' },
  { name: 'Notes', mac: 'TextEdit', windows: 'notepad.exe', taskbarLabel: 'Notepad', macTitle: 'Untitled', windowsTitle: 'Untitled - Notepad', color: '#f5a623' },
] satisfies AppEntry[]);

/** System parts of a Mac, as its window list names their owners. */
export const MAC_SYSTEM_APPS = Object.freeze({
  dock: 'Dock',
  menuBar: 'Menu Bar',
  controlCenter: 'Control Center',
  spotlight: 'Spotlight',
});

/** On Windows the taskbar (like File Explorer and the Run box) belongs to `explorer.exe`. */
export const WINDOWS_SHELL_APP = 'explorer.exe';

/** The label of a browser's address bar on both systems (its role is `address_bar`). */
export const ADDRESS_BAR_LABEL = 'Address bar';

/** The label of the Spotlight search field. */
export const SPOTLIGHT_FIELD_LABEL = 'Spotlight Search';

/** Finds an app by its generic name, case-insensitively. */
export function appByName(name: string): AppEntry | undefined {
  const wanted = name.trim().toLowerCase();
  return APPS.find((app) => app.name.toLowerCase() === wanted);
}

/** The name a system gives an app (`Safari` on a Mac, `msedge.exe` on Windows). */
export function systemAppName(os: SimulatedOs, app: AppEntry): string {
  return os === 'mac' ? app.mac : app.windows;
}

/**
 * What a person (or the scripted model) uses to open a generic app: on a Mac, the text to type
 * into Spotlight; on Windows, the label of the taskbar button to click.
 */
export function launcherFor(os: SimulatedOs, name: string): { via: 'spotlight' | 'taskbar'; label: string } | undefined {
  const app = appByName(name);
  if (!app) return undefined;
  return os === 'mac' ? { via: 'spotlight', label: app.mac } : { via: 'taskbar', label: app.taskbarLabel };
}

/**
 * The apps that Spotlight lists for a query: names starting with it first, then names or generic
 * names containing it (Spotlight also matches keywords, so `browser` finds Safari).
 */
export function spotlightMatches(query: string): AppEntry[] {
  const q = query.trim().toLowerCase();
  if (!q) return [];
  const starts = APPS.filter((app) => app.mac.toLowerCase().startsWith(q));
  const contains = APPS.filter(
    (app) => !starts.includes(app) && (app.mac.toLowerCase().includes(q) || app.name.toLowerCase().startsWith(q)),
  );
  return [...starts, ...contains];
}
