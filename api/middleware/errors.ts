import type { Context } from 'koa';
import { ApiError } from '../../shared/errors';
import type { RequestState } from './request-state';
import { isLegacyPath } from '../legacy-paths';
import type { Logger } from '../../shared/logger';
import { backingServiceUnavailable, isBackingServiceUnavailable } from '../../shared/redis';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  type?: string;
  message?: string;
}

/** Maps body-parser and other client errors raised by libraries to the spec's shape. */
function fromHttpError(error: HttpLikeError): ApiError | null {
  const status = error.status ?? error.statusCode;
  if (!status || status >= 500 || !error.expose) return null;
  if (status === 413 || error.type === 'entity.too.large') {
    return new ApiError('invalid_request', 'Request body is too large', { status: 413 });
  }
  if (error.type === 'entity.parse.failed' || /JSON|Unexpected token|Unexpected end/i.test(error.message ?? '')) {
    return new ApiError('invalid_request', 'Request body is not valid JSON');
  }
  if (status === 415) return new ApiError('invalid_request', 'Content-Type must be application/json');
  if (status === 400) return new ApiError('invalid_request', error.message || 'Malformed request');
  return null;
}

/** The older session-token API's body: the message as a string, `code` and extra fields beside it. */
function legacyBody(error: ApiError): Record<string, unknown> {
  const body: Record<string, unknown> = { error: error.message };
  if (error.code !== undefined) body.code = error.code;
  for (const [key, value] of Object.entries(error.extra)) if (key !== 'error') body[key] = value;
  return body;
}

/** An error as the response it becomes: status, body and headers. */
export interface ErrorResponse {
  status: number;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The one place errors become responses: `ApiError` as the spec's body, client errors from
 * libraries as `invalid_request`, Redis or PostgreSQL not answering as 503 `unavailable` with `Retry-After`,
 * anything else as a generic 500 with the stack logged. Requests
 * to the older session-token API's paths get its shape, `{ error: "<message>", code?, … }`,
 * with the same statuses. Koa's edge and the long-poll routes (api/long-polls.ts) both use it;
 * `state.logger` (made on first use) is read only for a 500.
 */
export function errorResponse(caught: unknown, path: string, state: { readonly logger?: Logger }): ErrorResponse {
  // Redis (or PostgreSQL) timed out or is unreachable: a retryable 503 rather than a 500 (docs/operations.md).
  const apiError = caught instanceof ApiError ? caught : isBackingServiceUnavailable(caught) ? backingServiceUnavailable() : fromHttpError(caught as HttpLikeError);
  const toBody = (error: ApiError) => (isLegacyPath(path) ? legacyBody(error) : error.toBody());
  if (apiError) return { status: apiError.status, body: toBody(apiError), headers: apiError.headers };
  state.logger?.error({ err: caught }, 'unhandled error');
  return { status: 500, body: toBody(new ApiError('server_error', 'Something went wrong on our side; retry with backoff')), headers: {} };
}

/** `errorResponse` on a Koa context. */
export function respondWithError(ctx: Context, caught: unknown): void {
  const { status, body, headers } = errorResponse(caught, ctx.path, ctx.state as RequestState);
  ctx.status = status;
  ctx.body = body;
  for (const [name, value] of Object.entries(headers)) ctx.set(name, value);
}
