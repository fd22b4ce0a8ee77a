#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { DEFAULT_LAUNCHER_APPS, parseLauncherApp, startLauncher, type LauncherApp } from './launcher';

/**
 * `deskhand-launcher [--display :N] [--app NAME=COMMAND]…`: the session's launcher panel
 * (launcher.ts), a dock along the bottom of the screen with one button per app. Without `--app`
 * its buttons are Browser (chromium), Notes (mousepad) and Terminal (xterm); with `--app` they
 * are exactly the apps given, in that order. It prints one JSON line per app it starts and runs
 * until it is stopped (SIGINT, SIGTERM); the apps it started keep running.
 */

const USAGE = 'usage: deskhand-launcher [--display :N] [--app NAME=COMMAND]…   (e.g. --app Notes=mousepad --app Browser="chromium --incognito")';
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

async function main(): Promise<number> {
  let values: { display?: string; app?: string[]; help?: boolean };
  let apps: LauncherApp[];
  try {
    ({ values } = parseArgs({ options: { display: { type: 'string' }, app: { type: 'string', multiple: true }, help: { type: 'boolean', short: 'h' } }, strict: true }));
    apps = values.app && values.app.length > 0 ? values.app.map(parseLauncherApp) : [...DEFAULT_LAUNCHER_APPS];
  } catch (error) {
    process.stderr.write(`deskhand-launcher: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const display = values.display ?? process.env.DISPLAY;
  if (!display) {
    process.stderr.write('deskhand-launcher: no X display: give --display :N or set DISPLAY.\n');
    return 2;
  }
  const out = (line: object): void => void process.stdout.write(`${JSON.stringify(line)}\n`);
  let launcher;
  try {
    launcher = await startLauncher({ display, apps, onStart: (event) => out({ event: event.error ? 'start_failed' : 'started', ...event }) });
  } catch (error) {
    process.stderr.write(`deskhand-launcher: ${(error as Error).message}\n`);
    return 1;
  }
  out({ event: 'launcher', display, window: launcher.windowId, apps: launcher.apps });
  await new Promise<void>((resolve) => {
    for (const signal of STOP_SIGNALS) process.once(signal, () => resolve());
  });
  await launcher.close();
  return 0;
}

void main().then((code) => {
  process.exitCode = code;
  // The X connection is closed; nothing else should keep the process, but a stuck socket must not.
  setTimeout(() => process.exit(code), 2000).unref();
});
