import type { AppName } from './apps.catalog';

/**
 * Everything the simulated computer remembers. Plain data, so that a layout can be computed
 * from it at any time and a copy can be handed out for checks.
 */
export interface ComputerState {
  /** Open app windows, topmost first. Each app has at most one window. */
  windows: AppName[];
  /** Spotlight (Mac only): open while the person or agent searches. */
  spotlight: { open: boolean; query: string };
  controlCenter: { open: boolean; wifi: boolean; bluetooth: boolean; doNotDisturb: boolean };
  /** The element with keyboard focus in the front window (or in Spotlight), by id. */
  focus: string | null;
  /** The modal dialog of an app window; it takes that window's clicks and keys while open. */
  dialog: DialogState | null;
  /** Values of text fields and text areas, by element id. */
  fields: Record<string, string>;
  /** Status lines that apps and pages show after something happened, by scope (`Mail`, `page`). */
  status: Record<string, { text: string; tone: StatusTone }>;
  address: { editing: boolean; selectAll: boolean; value: string };
  page: { url: string | null; host: string | null; cart: number };
  files: { items: string[]; trash: string[]; selected: string | null };
  settings: { firewall: boolean; changingPassword: boolean };
  store: { installed: boolean };
  notes: { title: string | null };
  /** What the agent's steps did in the world, oldest first; for tests and evals. */
  effects: SimulatorEffect[];
}

export type StatusTone = 'info' | 'success' | 'error';

export interface DialogState {
  kind: 'empty-trash';
  app: AppName;
  /** The dialog button with keyboard focus; starts on the default button. */
  focus: string;
}

/** Something a step changed outside the screen: a mail sent, a purchase, a file deleted. */
export type SimulatorEffect =
  | { type: 'app_opened'; app: AppName }
  | { type: 'navigated'; url: string }
  | { type: 'mail_sent'; via: 'app' | 'web'; to: string; subject: string; message: string }
  | { type: 'added_to_cart'; host: string }
  | { type: 'purchased'; host: string; what: string }
  | { type: 'signed_in'; host: string; email: string }
  | { type: 'terms_accepted'; host: string }
  | { type: 'password_change_started'; where: string }
  | { type: 'password_changed'; where: string }
  | { type: 'account_deleted'; host: string }
  | { type: 'moved_to_trash'; item: string }
  | { type: 'trash_emptied'; items: string[] }
  | { type: 'firewall_changed'; on: boolean }
  | { type: 'installed'; app: string }
  | { type: 'file_saved'; name: string };

/** The computer as it starts: no windows, one file in Documents, the firewall on. */
export function initialState(): ComputerState {
  return {
    windows: [],
    spotlight: { open: false, query: '' },
    controlCenter: { open: false, wifi: true, bluetooth: true, doNotDisturb: false },
    focus: null,
    dialog: null,
    fields: {},
    status: {},
    address: { editing: false, selectAll: false, value: '' },
    page: { url: null, host: null, cart: 0 },
    files: { items: ['report.txt'], trash: [], selected: null },
    settings: { firewall: true, changingPassword: false },
    store: { installed: false },
    notes: { title: null },
    effects: [],
  };
}

/** The contents of report.txt, shown when it is opened in Notes. */
export const REPORT_TEXT = 'Quarterly report\nRevenue grew 4% over the last quarter.';
