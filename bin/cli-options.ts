import { InvalidArgumentError } from 'commander';

/**
 * What the long-running commands (`desktop`, `runner`) share: the base URL option, and printing
 * one JSON line per event on stdout until a signal stops them.
 */

/** Where a command writes and which signals stop it; the process's own by default (`jsonLinesIo`). */
export interface JsonLinesIo {
  /** One event, printed as a JSON line. */
  out(line: object): void;
  signals: Pick<NodeJS.EventEmitter, 'once' | 'off'>;
}

export function jsonLinesIo(): JsonLinesIo {
  return {
    out: (line) => process.stdout.write(`${JSON.stringify(line)}\n`),
    signals: process,
  };
}

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
