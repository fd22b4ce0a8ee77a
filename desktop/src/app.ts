import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';
import { DesktopAppClient, type DesktopClientEnd, type HelloAccepted } from '../../shared/desktop/desktop-app-client';
import type { PersonMessage } from '../../shared/desktop/protocol';
import { LinuxComputer, type LinuxComputerOptions } from './linux-computer';
import { PersonWindow } from './person-window';

/**
 * The Linux desktop app: the real X11 computer behind the shared protocol client. It connects out
 * to the service with a pairing code (nothing of it listens on the network), serves acts until the
 * team releases the computer or the app is stopped, and prints one JSON line per protocol event.
 * The person's window (person-window.ts) shows what the service sends the person, and what the
 * person does there goes back as `desktop:person` messages.
 * `deskhand-desktop` (main.ts) and `npx deskhand desktop --display :N` both run it.
 */
export interface LinuxAppOptions {
  baseUrl: string;
  code: string;
  /** The X display; `$DISPLAY` by default. */
  display?: string;
  /** `$DBUS_SESSION_BUS_ADDRESS` by default. */
  sessionBusAddress?: string;
  /** The device's name in the hello; the host's name by default. */
  name?: string;
  out?: (line: object) => void;
  onUnreachable?: (message: string) => void;
  /** The socket.io path on the service. */
  path?: string;
  reconnectDelayMs?: number;
  /** Passed to the computer (still-screen wait, accessibility walk bounds). */
  computer?: Pick<LinuxComputerOptions, 'still' | 'snapshot' | 'enableToolkits'>;
  /**
   * Open the person's window (default true). Without it the person sees nothing of the service's
   * messages on this screen (they are still printed) and answers through the team.
   */
  personWindow?: boolean;
}

export interface LinuxApp {
  computer: LinuxComputer;
  client: DesktopAppClient<LinuxComputer>;
  /**
   * The person's window (null with `personWindow: false`): `elements()` gives its controls with
   * their screen bounds, `windowId` its X window, `flush()` waits until what was shown is drawn.
   */
  personWindow: PersonWindow | null;
  /** Resolves on the service's first welcome; rejects when the code is refused or the app is closed first. */
  welcomed: Promise<HelloAccepted>;
  /** Settles when the client stops for good; the computer is closed by then. */
  finished: Promise<DesktopClientEnd>;
  /** Disconnects and closes the person's window, the display and the accessibility bus. Safe to call twice. */
  close(): Promise<void>;
}

/** Opens the display (and the accessibility bus when there is one), then connects to the service. */
export async function startLinuxApp(options: LinuxAppOptions): Promise<LinuxApp> {
  const appVersion = desktopAppVersion();
  const out = options.out ?? ((line: object) => process.stdout.write(`${JSON.stringify(line)}\n`));
  const computer = await LinuxComputer.open({
    ...options.computer,
    display: options.display,
    sessionBusAddress: options.sessionBusAddress,
    appVersion,
    name: options.name ?? hostname(),
  });
  // What the person does in the window goes to the service through the client, made below.
  let sendPerson: (message: PersonMessage) => void = () => undefined;
  let personWindow: PersonWindow | null = null;
  if (options.personWindow !== false) {
    try {
      personWindow = await PersonWindow.open({ display: options.display, onPerson: (message) => sendPerson(message) });
    } catch (error) {
      await computer.close();
      throw error;
    }
    computer.attachPersonWindow(personWindow);
  }
  const hello = computer.hello('');
  out({
    event: 'computer',
    os: 'linux',
    display: options.display ?? process.env.DISPLAY ?? null,
    width: hello.device.width,
    height: hello.device.height,
    capabilities: hello.capabilities,
    person_window: personWindow !== null,
    ...(computer.accessibilityProblem ? { accessibility_problem: computer.accessibilityProblem } : {}),
  });
  const client = new DesktopAppClient({
    baseUrl: options.baseUrl,
    code: options.code,
    computer,
    os: 'linux',
    appVersion,
    path: options.path,
    out,
    reconnectDelayMs: options.reconnectDelayMs,
    onUnreachable: options.onUnreachable,
  });
  sendPerson = (message) => client.sendPerson(message);
  const finished = client.finished.then(async (end) => {
    await computer.close();
    return end;
  });
  const welcomed = client.start();
  // A refusal also settles `finished`, which callers read; this copy is not left unhandled.
  welcomed.catch(() => undefined);
  return {
    computer,
    client,
    personWindow,
    welcomed,
    finished,
    async close() {
      await client.close();
      await finished;
    },
  };
}

/** The app's version: its package's (`@deskhand/desktop`), found from this file in the checkout and in the built package. */
export function desktopAppVersion(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    try {
      const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (manifest.name === '@deskhand/desktop' && manifest.version) return manifest.version;
    } catch {
      // no package.json here
    }
    if (path.dirname(dir) === dir) return '0.0.0';
  }
}
