import { Agent, buildConnector, fetch, type Dispatcher } from 'undici';

/**
 * The public API as the CLI's commands call it (`evals …`, `tasks follow`): where it is and the
 * key, from the environment, and one JSON request that turns "cannot connect" into a line naming
 * `DESKHAND_BASE_URL` (the usual mistake) instead of fetch's bare "fetch failed".
 *
 * A refused connection fails at once. A connection that gets no answer at all (a firewall that
 * drops it, a host that is down) is told on stderr after `SLOW_CONNECT_MS` while it goes on
 * trying, and fails after `CONNECT_TIMEOUT_MS`: a person never waits in silence.
 */

/** How long a connection may go unanswered before the person is told that it is still trying. */
export const SLOW_CONNECT_MS = 1_500;
/** How long a connection may go unanswered at all; after that the service counts as unreachable. */
export const CONNECT_TIMEOUT_MS = 10_000;

export interface EvalsApi {
  baseUrl: string;
  apiKey: string;
  /** The connections to the service; a plain fetch's when absent. */
  dispatcher?: Dispatcher;
}

export interface ApiAnswer<T> {
  ok: boolean;
  status: number;
  body: T | null;
}

/** Writes one line for the person at the terminal (stderr), prefixed `deskhand: `. */
export function warnOnStderr(message: string): void {
  process.stderr.write(`deskhand: ${message}\n`);
}

/**
 * Where the API is and the key to call it with, from the environment. `warn` hears of a
 * connection still unanswered after `SLOW_CONNECT_MS` (once, until a connection succeeds).
 */
export function apiFromEnv(warn: (message: string) => void = warnOnStderr): EvalsApi {
  const apiKey = process.env.DESKHAND_API_KEY;
  if (!apiKey) throw new Error('DESKHAND_API_KEY is not set (an API key of the org: dh_…)');
  const baseUrl = (process.env.DESKHAND_BASE_URL || `http://localhost:${process.env.PORT ?? '8080'}`).replace(/\/+$/, '');
  return { baseUrl, apiKey, dispatcher: watchedConnections(baseUrl, warn) };
}

/** An agent whose connection attempts say so when they hang, and give up after `CONNECT_TIMEOUT_MS`. */
function watchedConnections(baseUrl: string, warn: (message: string) => void): Dispatcher {
  const connect = buildConnector({ timeout: CONNECT_TIMEOUT_MS });
  let told = false;
  return new Agent({
    connect: (options, callback) => {
      const slow = setTimeout(() => {
        if (told) return;
        told = true;
        warn(`no answer yet from ${baseUrl} (DESKHAND_BASE_URL) after ${SLOW_CONNECT_MS / 1000} s of connecting; still trying for up to ${CONNECT_TIMEOUT_MS / 1000} s`);
      }, SLOW_CONNECT_MS);
      // Not what keeps the process alive: the connection attempt itself does.
      slow.unref();
      connect(options, (error, socket) => {
        clearTimeout(slow);
        if (!error) told = false;
        // The connector's callback takes either an error or a socket, never both.
        if (error) callback(error, null);
        else callback(null, socket!);
      });
    },
  });
}

/** Thrown when the service cannot be reached at all (as opposed to answering with an error). */
export class UnreachableError extends Error {}

/** "connection refused" rather than "connect ECONNREFUSED 127.0.0.1:9": what went wrong, in words. */
function whyUnreachable(error: Error): string {
  const cause = (error.cause ?? error) as Error & { code?: string };
  switch (cause.code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'UND_ERR_CONNECT_TIMEOUT':
      return `no answer within ${CONNECT_TIMEOUT_MS / 1000} s`;
    case 'ENOTFOUND':
      return 'no such host';
    case 'EAI_AGAIN':
      return 'the host name could not be looked up';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'the connection was closed';
    default:
      return cause.message || error.message;
  }
}

/** One JSON request with the key as bearer; answers whatever the service said, throws only when it cannot be reached. */
export async function requestJson<T>(api: EvalsApi, method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
  const response = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${api.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    ...(api.dispatcher ? { dispatcher: api.dispatcher } : {}),
  }).catch((error: Error) => {
    throw new UnreachableError(`cannot reach ${api.baseUrl} (DESKHAND_BASE_URL): ${whyUnreachable(error)}`);
  });
  const parsed = (await response.json().catch(() => null)) as T | null;
  return { ok: response.ok, status: response.status, body: parsed };
}

/** The message of the spec's error body, or the HTTP status when there is none. */
export function errorMessage(answer: ApiAnswer<unknown>): string {
  const message = (answer.body as { error?: { message?: string } } | null)?.error?.message;
  return message ?? `HTTP ${answer.status}`;
}
