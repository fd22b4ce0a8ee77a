/**
 * The public API as the `deskhand evals …` commands call it: where it is and the key, from the
 * environment, and one JSON request that turns "cannot connect" into a line naming
 * `DESKHAND_BASE_URL` (the usual mistake) instead of fetch's bare "fetch failed".
 */

export interface EvalsApi {
  baseUrl: string;
  apiKey: string;
}

export interface ApiAnswer<T> {
  ok: boolean;
  status: number;
  body: T | null;
}

/** Where the API is and the key to call it with, from the environment. */
export function apiFromEnv(): EvalsApi {
  const apiKey = process.env.DESKHAND_API_KEY;
  if (!apiKey) throw new Error('DESKHAND_API_KEY is not set (an API key of the org: dh_…)');
  const baseUrl = (process.env.DESKHAND_BASE_URL || `http://localhost:${process.env.PORT ?? '8080'}`).replace(/\/+$/, '');
  return { baseUrl, apiKey };
}

/** Thrown when the service cannot be reached at all (as opposed to answering with an error). */
export class UnreachableError extends Error {}

/** One JSON request with the key as bearer; answers whatever the service said, throws only when it cannot be reached. */
export async function requestJson<T>(api: EvalsApi, method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
  const response = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${api.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).catch((error: Error) => {
    throw new UnreachableError(`cannot reach ${api.baseUrl} (DESKHAND_BASE_URL): ${(error.cause as Error | undefined)?.message ?? error.message}`);
  });
  const parsed = (await response.json().catch(() => null)) as T | null;
  return { ok: response.ok, status: response.status, body: parsed };
}

/** The message of the spec's error body, or the HTTP status when there is none. */
export function errorMessage(answer: ApiAnswer<unknown>): string {
  const message = (answer.body as { error?: { message?: string } } | null)?.error?.message;
  return message ?? `HTTP ${answer.status}`;
}
