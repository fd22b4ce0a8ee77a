import { DeskhandConnectionError, DeskhandError, errorFromResponse } from './errors.js';

/** How the client retries (see {@link HttpOptions}). */
export interface RetryOptions {
  /** Retries after the first attempt. Default 2; 0 turns retries off. */
  maxRetries?: number;
  /** The first backoff, in milliseconds; it doubles on each retry. Default 500. */
  initialDelayMs?: number;
  /** The largest backoff, in milliseconds. Default 8000. */
  maxDelayMs?: number;
  /**
   * The longest `Retry-After` the client waits, in milliseconds. A longer one is not waited for:
   * the error is thrown at once, with its `headers` for the caller to decide. Default 60000.
   */
  maxRetryAfterMs?: number;
}

/** What {@link HttpOptions.onRetry} hears before each retry. */
export interface RetryInfo {
  method: string;
  path: string;
  /** 1 for the first retry. */
  attempt: number;
  /** How long the client waits before it, in milliseconds. */
  delayMs: number;
  /** The error that caused it: a {@link DeskhandError} (429, 500, 503) or a {@link DeskhandConnectionError}. */
  error: DeskhandError | DeskhandConnectionError;
}

export interface HttpOptions {
  /** An org API key (`Authorization: Bearer <apiKey>`). */
  apiKey: string;
  /** Where Deskhand serves, e.g. `https://deskhand.example.com` (no `/v1`). */
  baseUrl: string;
  /** Per attempt, in milliseconds. Default 60000 (a long poll adds its own wait on top). */
  timeoutMs?: number;
  retries?: RetryOptions;
  /** Told before each retry (for logs and metrics). */
  onRetry?: (info: RetryInfo) => void;
  /** Another fetch (a proxy agent, instrumentation). Default: the global fetch. */
  fetch?: typeof fetch;
  /** Sent with every request. */
  headers?: Record<string, string>;
}

export type QueryValue = string | number | boolean | undefined | null;

export interface HttpRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** The path with its parameters filled in, e.g. `/v1/tasks/task_123`. */
  path: string;
  query?: Record<string, QueryValue>;
  body?: unknown;
  /** Sent as `Idempotency-Key`: the service makes one object for every attempt carrying it. */
  idempotencyKey?: string;
  /**
   * True when sending it twice does no harm, so a connection error may be retried. GET, PUT and
   * DELETE are; so is a request with an `idempotencyKey`.
   */
  idempotent?: boolean;
  signal?: AbortSignal;
  /** Overrides the client's per-attempt timeout. */
  timeoutMs?: number;
}

/** Statuses that say "try again": the request was not done, or failed on the service's side. */
const RETRIED_STATUSES = new Set([429, 500, 503]);

const DEFAULTS = { maxRetries: 2, initialDelayMs: 500, maxDelayMs: 8000, maxRetryAfterMs: 60_000 };

/**
 * `Retry-After` in milliseconds from `now`: delay-seconds or an HTTP date (RFC 9110); null when
 * absent or unreadable. A date in the past is 0.
 */
export function parseRetryAfter(value: string | null, now: number = Date.now()): number | null {
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * The backoff before retry `attempt` (1-based): exponential from `initialDelayMs`, capped at
 * `maxDelayMs`, with "equal jitter" (half fixed, half random) so that many clients that failed
 * together do not retry together.
 */
export function backoffDelay(attempt: number, options: Required<RetryOptions>, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxDelayMs, options.initialDelayMs * 2 ** (attempt - 1));
  return Math.round(ceiling / 2 + random() * (ceiling / 2));
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The response of a successful request: its parsed body and its headers. */
export interface HttpResponse<T> {
  status: number;
  headers: Headers;
  data: T;
}

/** Sends requests to Deskhand: authentication, JSON, typed errors, retries. */
export class HttpClient {
  private readonly baseUrl: string;
  private readonly retry: Required<RetryOptions>;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: HttpOptions) {
    if (typeof options.apiKey !== 'string' || options.apiKey.length === 0) throw new TypeError('apiKey must be a non-empty string');
    if (typeof options.baseUrl !== 'string' || !/^https?:\/\//.test(options.baseUrl)) {
      throw new TypeError('baseUrl must be an http(s) URL, e.g. https://deskhand.example.com');
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.retry = { ...DEFAULTS, ...definedOnly(options.retries ?? {}) };
    this.fetch = options.fetch ?? globalThis.fetch;
  }

  /** Sends `request`, retrying as configured; resolves with a 2xx response, or throws. */
  async send<T>(request: HttpRequest): Promise<HttpResponse<T>> {
    const idempotent = request.idempotent ?? (!['POST', 'PATCH'].includes(request.method) || request.idempotencyKey !== undefined);
    for (let attempt = 1; ; attempt++) {
      let failure: DeskhandError | DeskhandConnectionError;
      let delayMs: number;
      try {
        return await this.once<T>(request);
      } catch (error) {
        if (request.signal?.aborted) throw request.signal.reason;
        if (error instanceof DeskhandConnectionError) {
          if (!idempotent) throw error;
          failure = error;
          delayMs = backoffDelay(attempt, this.retry);
        } else if (isRetriedStatus(error)) {
          failure = error;
          const retryAfter = parseRetryAfter(error.headers.get('retry-after'));
          if (retryAfter !== null && retryAfter > this.retry.maxRetryAfterMs) throw error;
          delayMs = retryAfter ?? backoffDelay(attempt, this.retry);
        } else {
          throw error;
        }
      }
      if (attempt > this.retry.maxRetries) throw failure;
      this.options.onRetry?.({ method: request.method, path: request.path, attempt, delayMs, error: failure });
      await sleep(delayMs, request.signal);
    }
  }

  private async once<T>(request: HttpRequest): Promise<HttpResponse<T>> {
    const url = new URL(this.baseUrl + request.path);
    for (const [name, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    }
    const headers: Record<string, string> = {
      ...this.options.headers,
      authorization: `Bearer ${this.options.apiKey}`,
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.idempotencyKey !== undefined) headers['idempotency-key'] = request.idempotencyKey;
    const timeout = AbortSignal.timeout(request.timeoutMs ?? this.options.timeoutMs ?? 60_000);
    const signal = request.signal ? AbortSignal.any([request.signal, timeout]) : timeout;
    let response: Response;
    let payload: unknown;
    try {
      response = await this.fetch(url, {
        method: request.method,
        headers,
        body: request.body === undefined ? undefined : JSON.stringify(request.body),
        signal,
      });
      payload = await readBody(response);
    } catch (error) {
      if (request.signal?.aborted) throw request.signal.reason;
      const why = timeout.aborted ? 'timed out' : `failed: ${error instanceof Error ? error.message : String(error)}`;
      throw new DeskhandConnectionError(`${request.method} ${request.path} ${why}`, { cause: error });
    }
    if (!response.ok) throw errorFromResponse(response.status, payload, response.headers);
    return { status: response.status, headers: response.headers, data: payload as T };
  }
}

/**
 * By the response's type: bytes for an image or any other binary type (recording frames); else
 * JSON when it parses, the text when not (an HTML page, a proxy's error page), undefined when empty.
 */
async function readBody(response: Response): Promise<unknown> {
  const type = (response.headers.get('content-type') ?? '').toLowerCase();
  const textual = type === '' || type.includes('json') || type.startsWith('text/');
  if (!textual) return new Uint8Array(await response.arrayBuffer());
  const text = await response.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function isRetriedStatus(error: unknown): error is DeskhandError {
  return error instanceof DeskhandError && RETRIED_STATUSES.has(error.status);
}

function definedOnly<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>;
}
