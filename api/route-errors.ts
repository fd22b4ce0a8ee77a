import type { ErrorType } from '../shared/errors';

/**
 * The errors a route declares (`errors` in api/routing.ts): each with its status, its `code`
 * when it has one, and a message the operation really answers, so that /openapi.json and /docs
 * show each operation its own errors. The ones every operation of a kind answers (malformed
 * input, a missing API key, a role, a body too large, the rate limit, a backing service down) are
 * not declared: api/openapi.ts adds them from the route's shape.
 */
export interface RouteError {
  status: 400 | 401 | 402 | 403 | 404 | 409 | 429 | 503;
  /** The error's `code`; none for a plain `not_found` or `invalid_request`. */
  code?: string;
  /** A message this operation answers with this status and code, as its client reads it. */
  example: string;
  /** Fields the body carries beside `type`, `message` and `code` (`answered_by`, `active_task_id`). */
  extra?: Record<string, unknown>;
  /** A page rather than the JSON error body (the invite page's 404 is still HTML). */
  html?: true;
}

/** The `type` of an error body by its status (shared/errors.ts); 413 and 503 are answered with these types too. */
export const ERROR_TYPE_OF_STATUS: Readonly<Record<number, ErrorType>> = Object.freeze({
  400: 'invalid_request',
  401: 'authentication',
  402: 'payment_required',
  403: 'permission',
  404: 'not_found',
  409: 'conflict',
  413: 'invalid_request',
  429: 'rate_limit',
  500: 'server_error',
  503: 'server_error',
});

export const invalidInput = (example: string): RouteError => ({ status: 400, example });
export const unauthenticated = (example: string): RouteError => ({ status: 401, example });
export const notFound = (example: string): RouteError => ({ status: 404, example });
export const conflict = (code: string | undefined, example: string, extra?: Record<string, unknown>): RouteError => ({
  status: 409,
  ...(code ? { code } : {}),
  example,
  ...(extra ? { extra } : {}),
});
export const permission = (code: string | undefined, example: string): RouteError => ({ status: 403, ...(code ? { code } : {}), example });
export const paymentRequired = (code: string, example: string): RouteError => ({ status: 402, code, example });
export const unavailable = (code: string, example: string): RouteError => ({ status: 503, code, example });

/** Errors several routes answer, worded as the services word them. */
export const ERRORS = Object.freeze({
  noAgent: notFound('No agent support-bot'),
  noSession: notFound('No session K7QX-M2PD'),
  noTask: notFound('No task task_3k9xq7m2pd8w4tz1vn5c'),
  noStartState: notFound('No start state ss_8f2k4m9q1x'),
  noTestCase: notFound('No test case tc_7m2pd8w4tz'),
  noTestSet: notFound('No test set ts_4tz1vn5c9q'),
  noTestRun: notFound('No test run tr_9q1x8f2k4m'),
  noRunner: notFound('No runner rn_2pd8w4tz1v'),
  noDelivery: notFound('No webhook delivery whd_5c3k9xq7m2'),
  taskRunning: conflict('task_running', 'A task is already running on this computer (task_3k9xq7m2pd8w4tz1vn5c); follow it or stop it first', {
    active_task_id: 'task_3k9xq7m2pd8w4tz1vn5c',
  }),
  notConnected: conflict('not_connected', 'No computer is connected to session K7QX-M2PD: none has paired yet; the person must enter the code in the app first'),
  requestIdInUse: conflict('request_id_in_use', 'request_id order-1042 was already used for a task on another session'),
  alreadyAnswered: conflict('already_answered', 'This question was already answered by the person at the computer', { answered_by: 'customer' }),
  notPending: conflict('not_pending', 'This question is no longer open'),
  noQuestion: notFound('Task task_3k9xq7m2pd8w4tz1vn5c has no question q_1'),
  noEndpoint: conflict('no_webhook_endpoint', 'No webhook endpoint is set: set one with PUT /v1/webhook first'),
  image: permission('image', 'macos-15 is an image: a runner\'s base install, which cannot be changed, saved or deleted'),
  paymentsOff: unavailable('payments_unavailable', 'Payments are not set up on this server (STRIPE_SECRET_KEY is unset); the free plan works without them'),
  noCard: conflict('no_card', 'Save a card first (POST /v1/billing/card)'),
  missingSessionToken: unauthenticated('Missing session token: send Authorization: Bearer <SESSION_TOKEN> (or an org API key with code in the body)'),
  machineStarting: conflict('starting', 'The machine is starting; try again in a moment'),
  runnerRefused: conflict('runner_refused', 'The runner refused: no such machine'),
  liveViewEnded: notFound('This live view has ended (the machine was saved, closed or deleted)'),
  runnerUnavailable: unavailable('runner_unavailable', 'The machine\'s runner is not connected now; try again in a moment'),
  modelUnavailable: unavailable(
    'model_unavailable',
    'The model claude-sonnet-4-5 cannot run on this server: no API key is configured for anthropic; set ANTHROPIC_API_KEY (or run with DESKHAND_SCRIPTED_MODELS=1 for the scripted model)',
  ),
  concurrencyLimit: {
    status: 429,
    code: 'concurrency_limit',
    example: 'The Team plan runs 5 tasks at once and 5 are running; wait for one to end or stop one, or an owner can choose a larger plan',
    extra: { concurrent_tasks: 5 },
  } satisfies RouteError,
  insufficientBalance: paymentRequired('insufficient_balance', 'The balance ($0.04) cannot cover a minute ($0.10); add funds (POST /v1/billing/top_ups) or turn on auto top-up (PUT /v1/billing/settings)'),
  autoTopUpLimit: paymentRequired(
    'auto_topup_limit_reached',
    'Auto top-ups reached this month\'s limit of $100.00 and the balance ($0.04) cannot cover a minute ($0.10); raise the limit (PUT /v1/billing/settings) or top up (POST /v1/billing/top_ups)',
  ),
  cardNeedsAttention: paymentRequired(
    'card_needs_attention',
    'The last payment from the saved card failed and the balance ($0.04) cannot cover a minute ($0.10); update the card (POST /v1/billing/card) and try again',
  ),
});
