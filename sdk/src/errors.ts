/**
 * The API's errors as classes. Every `/v1` error body is `{ error: { type, message, code?, ... } }`
 * with a matching HTTP status; {@link DeskhandError} carries its fields, and one subclass per
 * `type` lets a caller write `catch (e) { if (e instanceof ConflictError) ... }`. Branch on `type`
 * and `code`, never on `message` (it is for people and may change).
 */

/** The stable error types of the API (spec: Errors). */
export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'payment_required'
  | 'permission'
  | 'not_found'
  | 'conflict'
  | 'rate_limit'
  | 'server_error';

/** Who answered or decided first, on 409 `already_answered`. */
export type AnsweredBy = 'customer' | 'operator' | 'timeout';

/** The `error` object of an error body: the named fields, and any others the service adds. */
export interface ErrorBody {
  type: ErrorType;
  message: string;
  code?: string;
  answered_by?: AnsweredBy;
  active_task_id?: string;
  test_case_ids?: string[];
  [extra: string]: unknown;
}

/** An HTTP error answered by the service (any status of 400 or more). */
export class DeskhandError extends Error {
  override readonly name: string = 'DeskhandError';
  /** The HTTP status. */
  readonly status: number;
  /** The stable error type (for a body that is not the API's error shape: derived from the status). */
  readonly type: ErrorType;
  /** Why, when the status alone is not enough: `already_answered`, `not_pending`, `concurrency_limit`, `model_unavailable`, ... */
  readonly code: string | undefined;
  /** On 409 `already_answered`: who was first. */
  readonly answered_by: AnsweredBy | undefined;
  /** On 409 when a task already runs on the computer: the running task (follow it or stop it). */
  readonly active_task_id: string | undefined;
  /** The id the service gave the request (its `X-Request-Id` header): quote it to support. */
  readonly request_id: string | undefined;
  /** The whole `error` object as answered, extra fields included (`test_case_ids`, `param`, `checks`, ...). */
  readonly error: ErrorBody;
  /** The response's headers (`Retry-After` on 429 and 503, ...). */
  readonly headers: Headers;

  constructor(status: number, error: ErrorBody, headers: Headers) {
    super(error.message);
    this.status = status;
    this.type = error.type;
    this.code = error.code;
    this.answered_by = error.answered_by;
    this.active_task_id = error.active_task_id;
    this.request_id = headers.get('x-request-id') ?? undefined;
    this.error = error;
    this.headers = headers;
  }
}

/** 400: a malformed request or an invalid field (the message names the field). */
export class InvalidRequestError extends DeskhandError {
  override readonly name = 'InvalidRequestError';
}
/** 401: the API key is missing, wrong or revoked. */
export class AuthenticationError extends DeskhandError {
  override readonly name = 'AuthenticationError';
}
/** 402: the plan does not allow this. */
export class PaymentRequiredError extends DeskhandError {
  override readonly name = 'PaymentRequiredError';
}
/** 403: the role cannot do this. */
export class PermissionError extends DeskhandError {
  override readonly name = 'PermissionError';
}
/** 404: no such object in this org, or no such route. */
export class NotFoundError extends DeskhandError {
  override readonly name = 'NotFoundError';
}
/** 409: conflicts with the current state (`code` and `active_task_id` / `answered_by` say how). */
export class ConflictError extends DeskhandError {
  override readonly name = 'ConflictError';
}
/** 429: too many requests, or too many tasks at once (`code: concurrency_limit`). */
export class RateLimitError extends DeskhandError {
  override readonly name = 'RateLimitError';
}
/** 5xx: a service-side failure (`code: unavailable` or `model_unavailable` on 503). */
export class ServerError extends DeskhandError {
  override readonly name = 'ServerError';
}

/** No answer from the service: the connection failed or the request timed out. */
export class DeskhandConnectionError extends Error {
  override readonly name = 'DeskhandConnectionError';
  constructor(message: string, options: { cause: unknown }) {
    super(message, options);
  }
}

const CLASSES: Record<ErrorType, new (status: number, error: ErrorBody, headers: Headers) => DeskhandError> = {
  invalid_request: InvalidRequestError,
  authentication: AuthenticationError,
  payment_required: PaymentRequiredError,
  permission: PermissionError,
  not_found: NotFoundError,
  conflict: ConflictError,
  rate_limit: RateLimitError,
  server_error: ServerError,
};

/** The type a status stands for, when the body does not say (a proxy's HTML page, an empty body). */
function typeOfStatus(status: number): ErrorType {
  if (status >= 500) return 'server_error';
  const byStatus: Record<number, ErrorType> = {
    401: 'authentication',
    402: 'payment_required',
    403: 'permission',
    404: 'not_found',
    409: 'conflict',
    429: 'rate_limit',
  };
  return byStatus[status] ?? 'invalid_request';
}

function isErrorType(value: unknown): value is ErrorType {
  return typeof value === 'string' && Object.hasOwn(CLASSES, value);
}

/**
 * The error for a response of status 400 or more and its body (parsed JSON, or the text when it
 * was not JSON). A body in the API's error shape gives its fields; anything else (a proxy's
 * page, the older API's `{ error: "..." }`) gives a type from the status and the text as message.
 */
export function errorFromResponse(status: number, body: unknown, headers: Headers): DeskhandError {
  const inner = typeof body === 'object' && body !== null ? (body as { error?: unknown }).error : undefined;
  let error: ErrorBody;
  if (typeof inner === 'object' && inner !== null && isErrorType((inner as ErrorBody).type)) {
    const given = inner as ErrorBody;
    error = { ...given, message: typeof given.message === 'string' ? given.message : `HTTP ${status}` };
  } else {
    const text = typeof inner === 'string' ? inner : typeof body === 'string' && body.trim() ? body.trim().slice(0, 500) : `HTTP ${status}`;
    error = { type: typeOfStatus(status), message: text };
  }
  return new CLASSES[error.type](status, error, headers);
}
