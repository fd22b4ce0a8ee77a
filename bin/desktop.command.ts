import { hostname } from 'node:os';
import { InvalidArgumentError, Option, type Command } from 'commander';
import { BASE_URL_HELP, defaultBaseUrl, jsonLinesIo, parseBaseUrl, type JsonLinesIo } from './cli-options';
import { isAppVersion, MAX_SCREEN, MIN_SCREEN } from '../shared/simulator/capabilities';
import type { DesktopClientEnd, DesktopClientOptions } from '../shared/simulator/desktop-client';

/**
 * `deskhand desktop --code CODE [options]`: the reference desktop client (docs/simulator.md).
 * It serves a simulated computer to the service until the team releases it or it is stopped
 * (SIGINT/SIGTERM disconnect it cleanly), printing one JSON line per protocol event.
 */

/** Where the command writes and which signals stop it; the process's own by default. */
export type DesktopCommandIo = JsonLinesIo;

/** The parsed options are the client's own, less what only code sets (output, path, pacing). */
type DesktopCommandOptions = Omit<DesktopClientOptions, 'out' | 'path' | 'reconnectDelayMs'> & { display?: string; window: boolean; launcher?: boolean };

const STOP_SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/**
 * Adds the `desktop` command to the CLI. Invalid options are reported on stderr with a non-zero
 * exit (through commander, so `exitOverride` applies); so is a pairing code the service refuses.
 */
export function registerDesktopCommand(program: Command, io: DesktopCommandIo = jsonLinesIo()): Command {
  return program
    .command('desktop')
    .description('Serve a simulated computer to the service with a pairing code (the reference desktop client), or with --display the real Linux desktop on that X display.')
    .requiredOption('--code <code>', 'pairing code, e.g. ABCD-EFGH', parseCode)
    .option('--base-url <url>', BASE_URL_HELP, parseBaseUrl, defaultBaseUrl())
    .option('--display <:N>', 'run the Linux desktop app (desktop/) on this X display instead of a simulated computer; the accessibility bus is found through $DBUS_SESSION_BUS_ADDRESS', parseDisplay)
    .option('--no-window', 'with --display: no person\'s window (the person answers through the team; a test machine has no person)')
    .option('--launcher', 'with --display: also show the session\'s launcher panel (Browser, Notes, Terminal), closed with the app')
    .addOption(new Option('--os <os>', 'which system to pretend to be').choices(['mac', 'windows']).default('mac'))
    .option('--app-version <version>', 'reported app version (X.Y.Z); before 1.0.20 no element info and no page addresses', parseVersion, '1.0.20')
    .option('--name <name>', 'reported device name', parseName, hostname())
    .option('--width <pixels>', 'reported screen width', parseDimension('width', MIN_SCREEN.width, MAX_SCREEN.width), 1440)
    .option('--height <pixels>', 'reported screen height', parseDimension('height', MIN_SCREEN.height, MAX_SCREEN.height), 900)
    .option('--no-accessibility', 'a Mac whose app lacks Accessibility permission')
    .option('--answer <text>', 'the person answers every question shown to them with TEXT', parseAnswer)
    .addOption(new Option('--approve', 'the person approves every approval shown to them').conflicts('deny'))
    .addOption(new Option('--deny', 'the person denies every approval shown to them').conflicts('approve'))
    .option('--type-secrets', 'when asked to type a secret or password, the person types it')
    .option('--stop-after <n>', "the person presses Stop after the task's Nth action", parseCount('--stop-after', 1))
    .option('--delay-ms <n>', 'how long the person takes before answering or deciding', parseCount('--delay-ms', 0), 200)
    .action(async (options: DesktopCommandOptions, command: Command) => {
      // The default base URL comes from the environment, which commander does not run through the parser.
      try {
        parseBaseUrl(options.baseUrl);
      } catch (error) {
        command.error(`error: ${(error as Error).message}`, { exitCode: 2, code: 'deskhand.invalidBaseUrl' });
      }
      if (!options.display && (!options.window || options.launcher)) {
        command.error(`error: ${options.launcher ? '--launcher' : '--no-window'} is an option of the Linux app: give --display :N too.`, { exitCode: 2, code: 'deskhand.needsDisplay' });
      }
      const end = options.display ? await runLinuxApp(options, options.display, io, command) : await runDesktopClient(options, io);
      if (end.reason === 'refused') {
        // Not a mistake in the command line: the error alone, without the usage text after it.
        command.showHelpAfterError(false);
        command.error(`error: the service refused the pairing code (${end.code}): ${end.message}`, { exitCode: 1, code: 'deskhand.refused' });
      }
    });
}

/** Runs the client until it is released, refused or stopped by a signal. */
async function runDesktopClient(options: DesktopCommandOptions, io: DesktopCommandIo): Promise<DesktopClientEnd> {
  // Loaded when the command runs, not for every `npx deskhand` (the simulator is most of the CLI's load time).
  const { DesktopClient } = require('../shared/simulator/desktop-client') as typeof import('../shared/simulator/desktop-client');
  const client = new DesktopClient({ ...options, out: (line) => io.out(line), onUnreachable: (message) => io.warn?.(message) });
  const stop = (): void => void client.close();
  for (const signal of STOP_SIGNALS) io.signals.once(signal, stop);
  try {
    // A refusal or a stop before the welcome also settles `finished`, which says which it was.
    await client.start().catch(() => undefined);
    return await client.finished;
  } finally {
    for (const signal of STOP_SIGNALS) io.signals.off(signal, stop);
  }
}

/**
 * Runs the Linux desktop app (the same app as `deskhand-desktop`) on the X display `display`;
 * the simulated computer's options (`--os`, `--width`, the scripted person) do not apply.
 */
async function runLinuxApp(options: DesktopCommandOptions, display: string, io: DesktopCommandIo, command: Command): Promise<DesktopClientEnd> {
  const { startLinuxApp } = require('../desktop/src/app') as typeof import('../desktop/src/app');
  let launcher: { close(): Promise<void> } | null = null;
  let app: Awaited<ReturnType<typeof startLinuxApp>>;
  try {
    if (options.launcher) {
      const { startLauncher } = require('../desktop/src/launcher') as typeof import('../desktop/src/launcher');
      const started = await startLauncher({ display, onStart: (event) => io.out({ event: event.error ? 'launcher_start_failed' : 'launcher_started', ...event }) });
      launcher = started;
      io.out({ event: 'launcher', display, window: started.windowId, apps: started.apps });
    }
    app = await startLinuxApp({ baseUrl: options.baseUrl, code: options.code, display, name: options.name, personWindow: options.window, out: (line) => io.out(line), onUnreachable: (message) => io.warn?.(message) });
  } catch (error) {
    await launcher?.close().catch(() => undefined);
    command.showHelpAfterError(false);
    return command.error(`error: cannot drive the display ${display}: ${(error as Error).message}`, { exitCode: 1, code: 'deskhand.noDisplay' });
  }
  const stop = (): void => void app.close();
  for (const signal of STOP_SIGNALS) io.signals.once(signal, stop);
  try {
    return await app.finished;
  } finally {
    for (const signal of STOP_SIGNALS) io.signals.off(signal, stop);
    await launcher?.close().catch(() => undefined);
  }
}

function parseDisplay(value: string): string {
  if (!/^[\w.-]*:\d+(\.\d+)?$/.test(value.trim())) throw new InvalidArgumentError('An X display is written :N, such as :0 or :99.');
  return value.trim();
}

function parseCode(value: string): string {
  const code = value.trim();
  if (!code || code.length > 100 || /\s/.test(code)) throw new InvalidArgumentError('A pairing code is one word, such as ABCD-EFGH.');
  return code;
}

function parseVersion(value: string): string {
  if (!isAppVersion(value)) throw new InvalidArgumentError('An app version looks like 1.0.20.');
  return value;
}

function parseName(value: string): string {
  const name = value.trim();
  if (!name || name.length > 100) throw new InvalidArgumentError('A device name has 1 to 100 characters.');
  return name;
}

function parseAnswer(value: string): string {
  if (!value.trim()) throw new InvalidArgumentError('An answer cannot be empty.');
  return value;
}

function parseDimension(what: string, min: number, max: number): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || number > max) throw new InvalidArgumentError(`The ${what} is a whole number of pixels from ${min} to ${max}.`);
    return number;
  };
}

function parseCount(option: string, min: number): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value) || number < min || !Number.isSafeInteger(number)) throw new InvalidArgumentError(`${option} takes a whole number of at least ${min}.`);
    return number;
  };
}
