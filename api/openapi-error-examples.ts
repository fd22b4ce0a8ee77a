/**
 * Examples of the error bodies each status answers (api/openapi.ts), in the /v1 shape
 * (`{ error: { type, message, code? } }`) or the older API's (`{ error, code? }`): what
 * api/middleware/errors.ts writes for an ApiError of that type.
 */

const V1_BY_STATUS: Record<number, { type: string; message: string; code?: string; answered_by?: string }> = {
  400: { type: 'invalid_request', message: 'body has an unknown field "promt"' },
  401: { type: 'authentication', message: 'Missing API key: send Authorization: Bearer <API_KEY>' },
  402: { type: 'payment_required', message: 'The plan does not allow this' },
  403: { type: 'permission', message: 'This role cannot do this' },
  404: { type: 'not_found', message: 'No task task_3k9xq7m2pd8w4tz1vn5c' },
  409: { type: 'conflict', message: 'This question was already answered by the person', code: 'already_answered', answered_by: 'customer' },
  413: { type: 'invalid_request', message: 'Request body is too large (limit 1 MB)' },
  429: { type: 'rate_limit', message: 'Too many requests: at most 1000 per hour from one address; retry in 42 s' },
  500: { type: 'server_error', message: 'Something went wrong on our side; retry with backoff' },
  503: { type: 'server_error', message: 'The service is briefly unavailable (a backing service does not answer); retry in a few seconds', code: 'unavailable' },
};

/** The error body a status answers, as an example. */
export function errorExample(status: number, legacy: boolean): Record<string, unknown> {
  const error = V1_BY_STATUS[status] ?? V1_BY_STATUS[500]!;
  if (legacy) {
    const { message, type: _type, ...rest } = error;
    return { error: message, ...rest };
  }
  return { error: { ...error } };
}

/** The 409 of a create whose `Idempotency-Key` was already used with another request. */
export function idempotencyConflictExample(): Record<string, unknown> {
  return {
    error: {
      type: 'conflict',
      message: 'Idempotency-Key 5f0c2a4e-8d1b-4c3e-9a7f-2b6d1e0c9a11 was already used with another request to createSession; use a new key for a new request',
      code: 'idempotency_conflict',
    },
  };
}
