#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { startLinuxApp } from './app';

/**
 * `deskhand-desktop --code CODE [--base-url URL] [--no-window]`: the Deskhand desktop app for
 * Linux (X11). It drives the display in `$DISPLAY` and finds the accessibility bus through
 * `$DBUS_SESSION_BUS_ADDRESS`, pairs with the service by the code, shows the person's window
 * (not with `--no-window`), and prints one JSON line per protocol event until the team releases
 * the computer or it is stopped (SIGINT, SIGTERM).
 */

const USAGE = 'usage: deskhand-desktop --code CODE [--base-url URL] [--no-window]';
const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

async function main(): Promise<number> {
  let values: { code?: string; 'base-url'?: string; 'no-window'?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: { code: { type: 'string' }, 'base-url': { type: 'string' }, 'no-window': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
      strict: true,
    }));
  } catch (error) {
    process.stderr.write(`deskhand-desktop: ${(error as Error).message}\n${USAGE}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const code = values.code?.trim();
  if (!code || /\s/.test(code) || code.length > 100) {
    process.stderr.write(`deskhand-desktop: --code takes the pairing code the team gave you, such as ABCD-EFGH.\n${USAGE}\n`);
    return 2;
  }
  const baseUrl = values['base-url'] ?? process.env.DESKHAND_BASE_URL?.trim() ?? `http://localhost:${process.env.PORT?.trim() || '8080'}`;
  if (!/^https?:\/\/[^/]/.test(baseUrl)) {
    process.stderr.write(`deskhand-desktop: --base-url is an http or https address, not ${baseUrl}.\n`);
    return 2;
  }
  if (!process.env.DISPLAY) {
    process.stderr.write('deskhand-desktop: DISPLAY is not set; run it inside your X session.\n');
    return 2;
  }
  let app;
  try {
    app = await startLinuxApp({
      baseUrl,
      code,
      personWindow: values['no-window'] !== true,
      onUnreachable: (message) => process.stderr.write(`deskhand-desktop: ${message}\n`),
    });
  } catch (error) {
    process.stderr.write(`deskhand-desktop: ${(error as Error).message}\n`);
    return 1;
  }
  const stop = (): void => void app.close();
  for (const signal of STOP_SIGNALS) process.once(signal, stop);
  const end = await app.finished;
  if (end.reason === 'refused') {
    process.stderr.write(`deskhand-desktop: the service refused the pairing code (${end.code}): ${end.message}\n`);
    return 1;
  }
  return 0;
}

void main().then((code) => {
  process.exitCode = code;
});
