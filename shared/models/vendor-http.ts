/**
 * The one way vendor backends talk HTTP: POST JSON, read JSON, turn every failure into a
 * `ModelError`, and retry what a second try may fix (429, 5xx, no answer) a bounded number of
 * times, honouring the vendor's `retry-after`.
 */
import { ModelError, type ModelBackendId } from './model.types';

export type FetchLike = (input: string, init: RequestInit) => Promise<Response>;

export interface RetryOptions {
  /** Further attempts after the first (default 2). */
  retries?: number;
  /** First backoff without a `retry-after`; doubles each time (default 500 ms). */
  baseDelayMs?: number;
  /** Longest wait inside one call; a longer `retry-after` ends the call with a retryable error (default 10 s). */
  maxDelayMs?: number;
}

/** What every vendor backend's constructor takes. */
export interface VendorBackendOptions {
  apiKey: string;
  /** The vendor's API base; see each backend for the default and what it must include. */
  baseUrl?: string;
  fetchImpl?: FetchLike;
  retry?: RetryOptions;
  /** Limit for one HTTP attempt (default 120 s). */
  timeoutMs?: number;
}

const VENDOR_NAMES: Record<ModelBackendId, string> = {
  scripted: 'Scripted model',
  anthropic: 'Anthropic',
  openai: 'OpenAI',
  gemini: 'Gemini',
};

/** Joins a base URL and a path without doubling or dropping the slash. */
export function joinUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`;
}

/** `retry-after-ms`, else `retry-after` as seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(headers: Headers, now = Date.now()): number | null {
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers.get('retry-after');
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/** The vendor's own words from an error body (`{ error: { message } }` in all three APIs). */
function vendorMessage(body: string): string {
  try {
    const parsed = JSON.parse(body) as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
  } catch {
    // Not JSON: fall through to the raw text.
  }
  const text = body.trim().replace(/\s+/g, ' ');
  return text === '' ? 'no details' : text.slice(0, 300);
}

function statusError(backend: ModelBackendId, status: number, body: string, retryAfterMs: number | null): ModelError {
  const detail = `${VENDOR_NAMES[backend]} API answered ${status}: ${vendorMessage(body)}`;
  if (status === 429) return new ModelError(detail, { code: 'rate_limited', retryable: true, backend, status, retryAfterMs });
  if (status >= 500) return new ModelError(detail, { code: 'server_error', retryable: true, backend, status, retryAfterMs });
  if (status === 401 || status === 403) return new ModelError(detail, { code: 'unauthorized', retryable: false, backend, status });
  if (status === 404) return new ModelError(detail, { code: 'not_found', retryable: false, backend, status });
  if (status === 400 || status === 422) return new ModelError(detail, { code: 'bad_request', retryable: false, backend, status });
  // 408 (request timeout) and 409 (conflict) are worth another try; other 4xx are not.
  const retryable = status === 408 || status === 409;
  return new ModelError(detail, { code: 'http_error', retryable, backend, status, retryAfterMs });
}

function abortError(backend: ModelBackendId, callerSignal: AbortSignal | undefined, cause: unknown): ModelError {
  const reason = callerSignal?.aborted ? callerSignal.reason : cause;
  const timedOut = !callerSignal?.aborted || (reason instanceof Error && reason.name === 'TimeoutError');
  return timedOut
    ? new ModelError(`${VENDOR_NAMES[backend]} API did not answer in time`, { code: 'timeout', retryable: true, backend, cause })
    : new ModelError(`The ${VENDOR_NAMES[backend]} call was aborted`, { code: 'aborted', retryable: false, backend, cause });
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

export interface PostJsonRequest {
  backend: ModelBackendId;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  fetchImpl?: FetchLike;
  retry?: RetryOptions;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/**
 * POSTs `body` as JSON and returns the parsed JSON answer. Retries 429, 5xx and network failures
 * (default: 2 more attempts, backoff 0.5 s then 1 s, or the vendor's `retry-after` when it is
 * within `maxDelayMs`). Throws `ModelError` for everything else, and when the tries run out.
 */
export async function postJson(request: PostJsonRequest): Promise<unknown> {
  const { backend, signal } = request;
  const fetchImpl: FetchLike = request.fetchImpl ?? ((input, init) => fetch(input, init));
  const retries = Math.max(0, request.retry?.retries ?? 2);
  const baseDelayMs = Math.max(0, request.retry?.baseDelayMs ?? 500);
  const maxDelayMs = Math.max(0, request.retry?.maxDelayMs ?? 10_000);
  const timeoutMs = request.timeoutMs ?? 120_000;
  const payload = JSON.stringify(request.body);

  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw abortError(backend, signal, signal.reason);
    const attemptSignal = signal
      ? AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)])
      : AbortSignal.timeout(timeoutMs);

    let failure: ModelError;
    let waitMs: number | null = null;
    try {
      const response = await fetchImpl(request.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...request.headers },
        body: payload,
        signal: attemptSignal,
        redirect: 'error',
      });
      const text = await response.text();
      if (response.ok) {
        try {
          return JSON.parse(text) as unknown;
        } catch (err) {
          throw new ModelError(`${VENDOR_NAMES[backend]} API answered ${response.status} with a body that is not JSON`, {
            code: 'invalid_response',
            retryable: false,
            backend,
            status: response.status,
            cause: err,
          });
        }
      }
      waitMs = parseRetryAfter(response.headers);
      failure = statusError(backend, response.status, text, waitMs);
    } catch (err) {
      if (err instanceof ModelError) throw err;
      if (attemptSignal.aborted) throw abortError(backend, signal, err);
      failure = new ModelError(`${VENDOR_NAMES[backend]} API could not be reached: ${(err as Error).message}`, {
        code: 'network',
        retryable: true,
        backend,
        cause: err,
      });
    }

    if (!failure.retryable || attempt >= retries) throw failure;
    const delay = waitMs ?? baseDelayMs * 2 ** attempt;
    // The vendor asks for a longer pause than one call should take: let the job retry later.
    if (delay > maxDelayMs) throw failure;
    try {
      await sleep(delay, signal);
    } catch (err) {
      throw abortError(backend, signal, err);
    }
  }
}
