/**
 * @deskhand/sdk: the Deskhand API from TypeScript or JavaScript (Node 20.19 or later).
 * See README.md for a quick start, following a task, errors, retries and webhooks.
 */
export { Deskhand, type DeskhandOptions } from './client.js';
export { TaskFollow, type FollowOptions } from './follow.js';
export { everyItem, type Page } from './pages.js';
export { parseRetryAfter, type RetryOptions, type RetryInfo, type HttpOptions } from './http.js';
export {
  DeskhandError,
  DeskhandConnectionError,
  InvalidRequestError,
  AuthenticationError,
  PaymentRequiredError,
  PermissionError,
  NotFoundError,
  ConflictError,
  RateLimitError,
  ServerError,
  errorFromResponse,
  type ErrorType,
  type ErrorBody,
  type AnsweredBy,
} from './errors.js';
export {
  webhooks,
  verifyWebhook,
  checkWebhook,
  constructWebhookEvent,
  WebhookSignatureError,
  SIGNATURE_HEADER,
  DEFAULT_TOLERANCE_SECONDS,
  type WebhookEvent,
  type WebhookEventType,
  type WebhookCheck,
  type WebhookFailure,
  type VerifyWebhookOptions,
} from './webhooks.js';
export type * from './types.js';
