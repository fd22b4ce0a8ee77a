/**
 * The one error type of the service. Anything thrown as an `ApiError` reaches the client in the
 * spec's shape `{ error: { type, message, code?, ...extra } }`; anything else becomes a 500.
 */

export type ErrorType =
  | 'invalid_request'
  | 'authentication'
  | 'payment_required'
  | 'permission'
  | 'not_found'
  | 'conflict'
  | 'rate_limit'
  | 'server_error';

const STATUS: Record<ErrorType, number> = {
  invalid_request: 400,
  authentication: 401,
  payment_required: 402,
  permission: 403,
  not_found: 404,
  conflict: 409,
  rate_limit: 429,
  server_error: 500,
};

export interface ErrorBody {
  type: ErrorType;
  message: string;
  code?: string;
  [extra: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly type: ErrorType;
  readonly code: string | undefined;
  readonly extra: Record<string, unknown>;
  /** Extra response headers, such as `Retry-After`. */
  readonly headers: Record<string, string>;

  constructor(
    type: ErrorType,
    message: string,
    options: { code?: string; status?: number; extra?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.type = type;
    this.status = options.status ?? STATUS[type];
    this.code = options.code;
    this.extra = options.extra ?? {};
    this.headers = options.headers ?? {};
  }

  toBody(): { error: ErrorBody } {
    const body: ErrorBody = { type: this.type, message: this.message };
    if (this.code !== undefined) body.code = this.code;
    return { error: { ...body, ...this.extra } };
  }
}

export const invalidRequest = (message: string, extra?: Record<string, unknown>) =>
  new ApiError('invalid_request', message, { extra });
export const notFound = (message: string) => new ApiError('not_found', message);
export const conflict = (message: string, code?: string, extra?: Record<string, unknown>) =>
  new ApiError('conflict', message, { code, extra });
export const unauthenticated = (message: string) => new ApiError('authentication', message);
export const forbidden = (message: string) => new ApiError('permission', message);
