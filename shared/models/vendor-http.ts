/**
 * What the three vendor backends share about talking to their APIs through the vendors' own
 * SDKs: the retry policy, the one place where a vendor's failure becomes a `ModelError`, and a
 * `fetch` wrapper that tells the Anthropic and OpenAI SDKs what not to retry.
 *
 * The Anthropic and OpenAI SDKs retry by themselves (408, 409, 429, 5xx, no answer), honouring
 * `retry-after-ms`, `retry-after` and the vendor's `x-should-retry`. The wrapper only adds
 * `x-should-retry: false` where another try cannot help within this call: OpenAI's
 * `insufficient_quota` 429 (the account has no credit left), and a vendor asking to wait longer
 * than `maxDelayMs` (the task's job is retried later instead). The Gemini SDK's own retries
 * ignore both `Retry-After` and the `RetryInfo` delay in Google's error body, so the Gemini
 * backend retries through `withRetries` here, which honours both.
 */
import { APIConnectionTimeoutError as AnthropicTimeout, APIError as AnthropicAPIError, APIUserAbortError as AnthropicAbort } from '@anthropic-ai/sdk';
import { ApiError as GeminiApiError } from '@google/genai';
import { APIConnectionTimeoutError as OpenAITimeout, APIError as OpenAIAPIError, APIUserAbortError as OpenAIAbort } from 'openai';
import { ModelError, type ModelBackendId } from './model.types';

export type FetchLike = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface RetryOptions {
  /** Further attempts after the first (default 2). */
  retries?: number;
  /** First backoff without a vendor delay, Gemini only (the other SDKs use their own; default 500 ms). */
  baseDelayMs?: number;
  /** Longest wait inside one call; a longer vendor delay ends the call with a retryable error (default 10 s). */
  maxDelayMs?: number;
}

/** What every vendor backend's constructor takes. */
export interface VendorBackendOptions {
  apiKey: string;
  /** The vendor's API base; see each backend for the default and what it must include. */
  baseUrl?: string;
  /** Replaces the global fetch under the SDK (tests). */
  fetchImpl?: FetchLike;
  retry?: RetryOptions;
  /** Limit for one HTTP attempt (default 120 s). */
  timeoutMs?: number;
}

export const DEFAULT_RETRIES = 2;
export const DEFAULT_MAX_DELAY_MS = 10_000;
export const DEFAULT_TIMEOUT_MS = 120_000;

const VENDOR_NAMES: Record<ModelBackendId, string> = {
  scripted: 'Scripted model',
  anthropic: 'Anthropic',
  openai: 'OpenAI',
  gemini: 'Gemini',
};

/** `retry-after-ms`, else `retry-after` as seconds or an HTTP date; null when absent or unreadable. */
export function parseRetryAfter(headers: Headers | null | undefined, now = Date.now()): number | null {
  if (!headers) return null;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.ceil(Number(ms));
  const value = headers.get('retry-after');
  if (value === null) return null;
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.ceil(Number(trimmed) * 1000);
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * The delay Google puts in an error body (`google.rpc.RetryInfo`, `retryDelay: "30s"` or
 * `"1.5s"`); null when there is none.
 */
export function retryInfoDelay(body: unknown): number | null {
  const details = (body as { error?: { details?: unknown } } | null)?.error?.details;
  if (!Array.isArray(details)) return null;
  for (const detail of details as Array<Record<string, unknown>>) {
    if (typeof detail?.['@type'] !== 'string' || !detail['@type'].endsWith('google.rpc.RetryInfo')) continue;
    const delay = detail.retryDelay;
    if (typeof delay === 'string' && /^\d+(\.\d+)?s$/.test(delay.trim())) return Math.ceil(Number(delay.trim().slice(0, -1)) * 1000);
    if (delay && typeof delay === 'object') {
      const { seconds, nanos } = delay as { seconds?: unknown; nanos?: unknown };
      return Math.ceil(Number(seconds ?? 0) * 1000 + Number(nanos ?? 0) / 1e6);
    }
  }
  return null;
}

/** OpenAI's 429 for an account without credit: no retry can succeed. */
function isInsufficientQuota(body: unknown): boolean {
  const error = (body as { error?: { code?: unknown; type?: unknown } } | null)?.error;
  return error?.code === 'insufficient_quota' || error?.type === 'insufficient_quota';
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return null;
  }
}

/**
 * The client options the Anthropic and OpenAI SDKs share: key, base URL, their own retries
 * (which honour `Retry-After` and `x-should-retry`), the per-attempt timeout and `sdkFetch`.
 */
export function sdkClientOptions(options: VendorBackendOptions, defaultBaseUrl: string) {
  return {
    apiKey: options.apiKey,
    baseURL: options.baseUrl || defaultBaseUrl,
    maxRetries: Math.max(0, options.retry?.retries ?? DEFAULT_RETRIES),
    timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
    fetch: sdkFetch(options),
  };
}

/**
 * A fetch for the Anthropic and OpenAI SDKs: answers pass through unchanged, except that a failed
 * answer no retry can fix within this call gets `x-should-retry: false` (see the file comment).
 */
export function sdkFetch(options: VendorBackendOptions): FetchLike {
  const base: FetchLike = options.fetchImpl ?? ((input, init) => fetch(input, init));
  const maxDelayMs = Math.max(0, options.retry?.maxDelayMs ?? DEFAULT_MAX_DELAY_MS);
  return async (input, init) => {
    const response = await base(input, init);
    if (response.ok || response.headers.get('x-should-retry') === 'false') return response;
    const text = await response.text();
    const delay = parseRetryAfter(response.headers);
    const stop = (response.status === 429 && isInsufficientQuota(parseJson(text))) || (delay !== null && delay > maxDelayMs);
    const headers = new Headers(response.headers);
    if (stop) headers.set('x-should-retry', 'false');
    return new Response(text, { status: response.status, statusText: response.statusText, headers });
  };
}

/** The vendor's own words from an error body (`{ error: { message } }` in all three APIs). */
function vendorMessage(body: unknown, fallback: string): string {
  if (body && typeof body === 'object') {
    const parsed = body as { error?: { message?: unknown } | string; message?: unknown };
    if (typeof parsed.error === 'string') return parsed.error;
    if (parsed.error && typeof parsed.error.message === 'string') return parsed.error.message;
    if (typeof parsed.message === 'string') return parsed.message;
  }
  const text = fallback.trim().replace(/\s+/g, ' ');
  return text === '' ? 'no details' : text.slice(0, 300);
}

/** A vendor's HTTP failure as a `ModelError`: what to call it and whether a retry may help. */
export function statusError(backend: ModelBackendId, status: number, body: unknown, retryAfterMs: number | null, raw = ''): ModelError {
  const detail = `${VENDOR_NAMES[backend]} API answered ${status}: ${vendorMessage(body, raw)}`;
  if (status === 429 && isInsufficientQuota(body)) {
    return new ModelError(`${detail} (the account has no quota left: add credit or raise the limit, then start the task again)`, {
      code: 'quota_exhausted',
      retryable: false,
      backend,
      status,
    });
  }
  if (status === 429) return new ModelError(detail, { code: 'rate_limited', retryable: true, backend, status, retryAfterMs });
  if (status >= 500) return new ModelError(detail, { code: 'server_error', retryable: true, backend, status, retryAfterMs });
  if (status === 401 || status === 403) return new ModelError(detail, { code: 'unauthorized', retryable: false, backend, status });
  if (status === 404) return new ModelError(detail, { code: 'not_found', retryable: false, backend, status });
  if (status === 400 || status === 422) return new ModelError(detail, { code: 'bad_request', retryable: false, backend, status });
  // 408 (request timeout) and 409 (conflict) are worth another try; other 4xx are not.
  const retryable = status === 408 || status === 409;
  return new ModelError(detail, { code: 'http_error', retryable, backend, status, retryAfterMs });
}

/**
 * Any failure of an SDK call as a `ModelError`: the vendor's HTTP errors by status, the caller's
 * abort, a timeout, or no answer at all. `model` names the model in a 404 (a retired id).
 */
export function toModelError(backend: ModelBackendId, error: unknown, signal: AbortSignal | undefined, model?: string): ModelError {
  if (error instanceof ModelError) return error;
  const vendor = VENDOR_NAMES[backend];
  let failure: ModelError | null = null;
  if (error instanceof AnthropicAPIError || error instanceof OpenAIAPIError) {
    if (error instanceof AnthropicAbort || error instanceof OpenAIAbort) {
      failure = abortError(backend, signal, error);
    } else if (error instanceof AnthropicTimeout || error instanceof OpenAITimeout) {
      failure = new ModelError(`${vendor} API did not answer in time`, { code: 'timeout', retryable: true, backend, cause: error });
    } else if (typeof error.status === 'number') {
      const headers = error.headers as Headers | undefined;
      failure = statusError(backend, error.status, { error: error.error && typeof error.error === 'object' ? ((error.error as { error?: unknown }).error ?? error.error) : undefined }, parseRetryAfter(headers), error.message);
    } else {
      failure = new ModelError(`${vendor} API could not be reached: ${error.message}`, { code: 'network', retryable: true, backend, cause: error });
    }
  } else if (error instanceof GeminiApiError) {
    const body = parseJson(error.message);
    failure = statusError(backend, error.status, body, retryInfoDelay(body), error.message);
  } else if (signal?.aborted || (error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError'))) {
    failure = abortError(backend, signal, error);
  } else {
    failure = new ModelError(`${vendor} API could not be reached: ${(error as Error)?.message ?? String(error)}`, {
      code: 'network',
      retryable: true,
      backend,
      cause: error,
    });
  }
  if (failure.code === 'not_found' && model) {
    return new ModelError(`${failure.message} (the model ${model} may have been retired by ${vendor}; see docs/models.md, "Keeping the catalog current")`, {
      code: 'not_found',
      retryable: false,
      backend,
      status: failure.status,
      cause: error,
    });
  }
  return failure;
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

/**
 * Runs `call` and retries what a second try may fix (429, 5xx, no answer), at most `retries`
 * more times, waiting what the vendor asked for (`Retry-After`, or `RetryInfo` in the body),
 * else 0.5 s, 1 s… A wait longer than `maxDelayMs` ends the call with the retryable error.
 * Every failure comes out as a `ModelError`.
 */
export async function withRetries<T>(
  backend: ModelBackendId,
  retry: RetryOptions | undefined,
  signal: AbortSignal | undefined,
  model: string,
  call: () => Promise<T>,
): Promise<T> {
  const retries = Math.max(0, retry?.retries ?? DEFAULT_RETRIES);
  const baseDelayMs = Math.max(0, retry?.baseDelayMs ?? 500);
  const maxDelayMs = Math.max(0, retry?.maxDelayMs ?? DEFAULT_MAX_DELAY_MS);
  for (let attempt = 0; ; attempt++) {
    if (signal?.aborted) throw abortError(backend, signal, signal.reason);
    let failure: ModelError;
    try {
      return await call();
    } catch (error) {
      failure = toModelError(backend, error, signal, model);
    }
    if (!failure.retryable || attempt >= retries) throw failure;
    const delay = failure.retryAfterMs ?? baseDelayMs * 2 ** attempt;
    if (delay > maxDelayMs) throw failure;
    try {
      await sleep(delay, signal);
    } catch (error) {
      throw abortError(backend, signal, error);
    }
  }
}
