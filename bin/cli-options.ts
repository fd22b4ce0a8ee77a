import { InvalidArgumentError } from 'commander';

/**
 * What the long-running commands (`desktop`, `runner`) share: the base URL option, and printing
 * one JSON line per event on stdout until a signal stops them.
 */

/** Where a command writes and which signals stop it; the process's own by default (`jsonLinesIo`). */
export interface JsonLinesIo {
  /** One event, printed as a JSON line. */
  out(line: object): void;
  /** A line for the person at the terminal (stderr), such as "cannot reach the service". */
  warn?(message: string): void;
  signals: Pick<NodeJS.EventEmitter, 'once' | 'off'>;
}

export function jsonLinesIo(): JsonLinesIo {
  return {
    out: (line) => process.stdout.write(`${JSON.stringify(line)}\n`),
    warn: (message) => process.stderr.write(`deskhand: ${message}\n`),
    signals: process,
  };
}

/**
 * The service the CLI talks to when `--base-url` is not given: `$DESKHAND_BASE_URL`, else this
 * machine's service on `$PORT` (8080). `--help` prints this value, so it shows what is really used.
 */
export function defaultBaseUrl(env: Record<string, string | undefined> = process.env): string {
  return env.DESKHAND_BASE_URL?.trim() || `http://localhost:${env.PORT?.trim() || '8080'}`;
}

/** How `--base-url` is described in every command's help (commander adds the default's value). */
export const BASE_URL_HELP = 'the service ($DESKHAND_BASE_URL, else http://localhost:$PORT)';

/** `--base-url`: an http(s) URL, as given. */
export function parseBaseUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`"${value}" is not a URL, such as http://localhost:8080.`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError(`"${value}" must start with http:// or https://.`);
  return value;
}
