import { invalidInputExample, type RouteSpec } from './routing';
import { ERROR_TYPE_OF_STATUS } from './route-errors';
import { isLegacyPath } from './legacy-paths';

/**
 * Every error an operation answers, each with a message it really gives (api/openapi.ts shows
 * them): what the route declares of its own work (`errors`, api/route-errors.ts), and what every
 * route of its kind answers, worded as the code that answers it words it.
 */

export interface DocumentedError {
  status: number;
  code?: string;
  /** A message the operation answers; none for a status declared bare (the older form of `errors`). */
  example?: string;
  extra?: Record<string, unknown>;
  html?: true;
}

export interface ErrorDocumentOptions {
  /** The rate limit of this server (`DESKHAND_RATE_LIMIT_PER_HOUR`), as its 429 says it. */
  rateLimitPerHour: number;
}

/**
 * Operations that touch neither PostgreSQL nor Redis, so never answer 503 `unavailable`
 * (`/readyz` reports their state as its own 503 `not_ready`). Every other operation reads
 * PostgreSQL (an API key, a session token, a row) or Redis, and may.
 */
export const WITHOUT_BACKING_SERVICES: ReadonlySet<string> = new Set(['healthz', 'readyz', 'openapi', 'index', 'docsPage', 'docsAsset']);

/** api/middleware/errors.ts's body for Redis or PostgreSQL not answering (shared/redis.ts). */
export const UNAVAILABLE_ERROR: DocumentedError = {
  status: 503,
  code: 'unavailable',
  example: 'The service is briefly unavailable (a backing service does not answer); retry in a few seconds',
};

/** True for a route that reads a request body: the JSON parser reads any body of these methods (api/middleware/json-body.ts). */
export function readsBody(route: RouteSpec): boolean {
  return route.method === 'post' || route.method === 'put' || route.method === 'patch';
}

/** Every error `route` answers, by status, its own and those of its kind. */
export function operationErrors(route: RouteSpec, options: ErrorDocumentOptions): DocumentedError[] {
  const legacy = isLegacyPath(route.path);
  const own = route.errors.map((error): DocumentedError => (typeof error === 'number' ? { status: error } : error));
  const ofStatus = (status: number) => own.filter((error) => error.status === status);
  const errors: DocumentedError[] = [];
  const input = invalidInputExample(route);
  if (input !== null) errors.push({ status: 400, example: input });
  errors.push(...ofStatus(400));
  if (route.auth === 'api_key') errors.push({ status: 401, example: 'Missing API key: send Authorization: Bearer <API_KEY>' });
  errors.push(...ofStatus(401), ...ofStatus(402));
  if (route.role) {
    const ask = route.role === 'owner' ? 'an owner' : 'an admin or owner';
    errors.push({ status: 403, example: `This needs the ${route.role} role (your role is member); ask ${ask} of the org` });
  }
  errors.push(...ofStatus(403), ...ofStatus(404));
  if (route.idempotent === true) {
    errors.push({
      status: 409,
      code: 'idempotency_conflict',
      example: `Idempotency-Key 5f0c2a4e-8d1b-4c3e-9a7f-2b6d1e0c9a11 was already used with another request to ${route.operationId}; use a new key for a new request`,
    });
  }
  errors.push(...ofStatus(409));
  if (readsBody(route)) {
    const megabytes = Math.round((route.bodyLimitBytes ?? 1024 * 1024) / 1024 / 1024);
    errors.push({ status: 413, example: `Request body is too large (limit ${megabytes} MB)` });
  }
  if (route.auth === 'api_key' || legacy) {
    errors.push({ status: 429, example: `Too many requests: at most ${options.rateLimitPerHour} per hour from one address; retry in 42 s` });
  }
  errors.push(...ofStatus(429));
  errors.push({ status: 500, example: 'Something went wrong on our side; retry with backoff' });
  errors.push(...ofStatus(503));
  if (!WITHOUT_BACKING_SERVICES.has(route.operationId)) errors.push(UNAVAILABLE_ERROR);
  const listed = new Set(errors.map((error) => error.status));
  const unplaced = own.filter((error) => !listed.has(error.status));
  if (unplaced.length > 0) throw new Error(`${route.operationId}: errors with status ${unplaced.map((error) => error.status).join(', ')} have no place in the document`);
  return errors;
}

/** The body `error` is answered with: the /v1 shape (`{ error: { type, message, code? } }`) or the older API's (`{ error, code? }`). */
export function errorBody(error: DocumentedError & { example: string }, legacy: boolean): Record<string, unknown> {
  const code = error.code !== undefined ? { code: error.code } : {};
  if (legacy) return { error: error.example, ...code, ...error.extra };
  return { error: { type: ERROR_TYPE_OF_STATUS[error.status] ?? 'server_error', message: error.example, ...code, ...error.extra } };
}

