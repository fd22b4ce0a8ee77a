import { spawn } from 'node:child_process';
import { createCanvas } from '@napi-rs/canvas';
import { LAUNCHER_APP } from '../../shared/desktop/computer';
import { DrawnWindow, type DrawnControl } from './drawn-window';

/**
 * The session's launcher: a panel along the bottom of the screen (a dock: _NET_WM_WINDOW_TYPE_DOCK
 * with a strut, WM_CLASS `deskhand-launcher`) with one button per app, named generically
 * (Browser, Notes, Terminal) and mapped to this computer's apps (Chromium, Mousepad, xterm by
 * default). A click on a button starts its app, detached, in the launcher's environment. The
 * buttons are published as drawn elements, so the agent sees them like any other button, and the
 * scripted model's `open Notes` clicks the one named Notes. It never takes the keyboard.
 */

/** A button of the launcher: its generic name and the command it runs (a program and its arguments). */
export interface LauncherApp {
  name: string;
  command: string[];
}

export interface LauncherOptions {
  /** The X display (`:0`); `$DISPLAY` by default. */
  display?: string;
  /** The buttons, left to right; DEFAULT_LAUNCHER_APPS by default. */
  apps?: LauncherApp[];
  /** The environment the apps start in; the launcher's own by default. */
  env?: NodeJS.ProcessEnv;
  /** Told of each app started (its process id), or of a start that failed. */
  onStart?: (event: { name: string; command: string[]; pid: number | null; error?: string }) => void;
}

/** Browser, Notes and Terminal: Chromium, Mousepad and xterm. */
export const DEFAULT_LAUNCHER_APPS: readonly LauncherApp[] = Object.freeze([
  { name: 'Browser', command: ['chromium'] },
  { name: 'Notes', command: ['mousepad'] },
  { name: 'Terminal', command: ['xterm'] },
]);

export const LAUNCHER_HEIGHT = 40;
const BUTTON_WIDTH = 120;
const GAP = 8;
const FONT = '"DejaVu Sans", "Noto Sans", "Liberation Sans", sans-serif';

export interface Launcher {
  /** The panel's X window. */
  windowId: number;
  apps: LauncherApp[];
  /** Process ids of the apps it started, oldest first. */
  started: number[];
  /** The buttons with their bounds on the screen. */
  elements(): DrawnControl[];
  /** Takes the panel off the screen and closes its connection; the apps it started keep running. */
  close(): Promise<void>;
}

/** Opens the launcher panel on the display and shows it. */
export async function startLauncher(options: LauncherOptions = {}): Promise<Launcher> {
  const apps = (options.apps ?? DEFAULT_LAUNCHER_APPS).map((app) => ({ name: app.name, command: [...app.command] }));
  if (apps.length === 0) throw new Error('The launcher needs at least one app.');
  const started: number[] = [];
  const start = (app: LauncherApp): void => {
    const [program, ...args] = app.command;
    try {
      // Its own process group, no terminal: the app outlives the launcher, as from any panel.
      const child = spawn(program, args, { env: options.env ?? process.env, detached: true, stdio: 'ignore' });
      child.on('error', (error) => options.onStart?.({ name: app.name, command: app.command, pid: null, error: error.message }));
      child.unref();
      if (child.pid !== undefined) {
        started.push(child.pid);
        options.onStart?.({ name: app.name, command: app.command, pid: child.pid });
      }
    } catch (error) {
      options.onStart?.({ name: app.name, command: app.command, pid: null, error: (error as Error).message });
    }
  };
  const window = await DrawnWindow.open({
    display: options.display,
    wmClass: { instance: LAUNCHER_APP, className: LAUNCHER_APP },
    title: 'Deskhand launcher',
    type: 'dock',
    place: (screen) => ({ x: 0, y: screen.height - LAUNCHER_HEIGHT, width: screen.width, height: LAUNCHER_HEIGHT }),
    strut: (bounds) => ({ edge: 'bottom', size: bounds.height, start: bounds.x, end: bounds.x + bounds.width - 1 }),
    onPress: (id) => {
      const app = apps[Number(id)];
      if (app) start(app);
    },
  });
  try {
    const { width } = window.connection;
    const canvas = createCanvas(width, LAUNCHER_HEIGHT);
    const context = canvas.getContext('2d');
    context.fillStyle = '#263238';
    context.fillRect(0, 0, width, LAUNCHER_HEIGHT);
    const controls: DrawnControl[] = apps.map((app, index) => {
      const bounds = { x: GAP + index * (BUTTON_WIDTH + GAP), y: 5, width: BUTTON_WIDTH, height: LAUNCHER_HEIGHT - 10 };
      context.fillStyle = '#eceff1';
      context.fillRect(bounds.x, bounds.y, bounds.width, bounds.height);
      context.font = `bold 13px ${FONT}`;
      context.fillStyle = '#1c2833';
      const label = app.name;
      const textWidth = context.measureText(label).width;
      context.fillText(label, bounds.x + Math.round((bounds.width - textWidth) / 2), bounds.y + 20);
      return { id: String(index), role: 'button' as const, label, bounds };
    });
    await window.draw(canvas, controls);
    await window.show();
  } catch (error) {
    await window.close();
    throw error;
  }
  return {
    windowId: window.id,
    apps,
    started,
    elements: () => window.screenControls(),
    close: () => window.close(),
  };
}

/**
 * The command line of one app as `--app` gives it (`Notes=mousepad`, `Browser="chromium --incognito"`):
 * the name, then the program and its arguments, split at spaces outside quotes.
 */
export function parseLauncherApp(value: string): LauncherApp {
  const equals = value.indexOf('=');
  const name = equals > 0 ? value.slice(0, equals).trim() : '';
  const command = splitCommand(equals > 0 ? value.slice(equals + 1) : '');
  if (!name || command.length === 0) throw new Error(`--app takes NAME=COMMAND, such as Notes=mousepad (not "${value}").`);
  return { name, command };
}

function splitCommand(line: string): string[] {
  const words: string[] = [];
  let word: string | null = null;
  let quote: string | null = null;
  for (const character of line.trim()) {
    if (quote) {
      if (character === quote) quote = null;
      else word = (word ?? '') + character;
    } else if (character === '"' || character === "'") {
      quote = character;
      word = word ?? '';
    } else if (/\s/.test(character)) {
      if (word !== null) words.push(word);
      word = null;
    } else {
      word = (word ?? '') + character;
    }
  }
  if (word !== null) words.push(word);
  return words;
}
