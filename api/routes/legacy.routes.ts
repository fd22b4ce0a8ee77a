import type { Context } from 'koa';
import type { Container } from '../../shared/container';
import { SessionTokenAuth } from '../../shared/sessions/session-token-auth';
import { LegacyTasksService } from '../../shared/legacy/legacy-tasks.service';
import { FollowerGone } from '../../shared/tasks/task-followers';
import { HUNG_UP, hangUpSignal } from '../hang-ups';
import { ERRORS, unauthenticated } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import {
  LegacyHealthQuery,
  LegacyHealthSchema,
  LegacyIdBody,
  LegacyStartBody,
  LegacyTaskListSchema,
  LegacyTaskSchema,
  LegacyTasksBody,
  LegacyTraceSchema,
  LegacyWaitBody,
} from '../schemas/legacy.schemas';

const AUTH_TEXT =
  'Authenticated with the session token as bearer (Authorization: Bearer dh_sess_…), or with an org API key as bearer plus code in the body. Errors are { error: "<message>", code?, answered_by?, … }.';

/**
 * The older session-token API at the root paths (docs/legacy-api.md). Registered with auth
 * `none`: each handler authenticates its own caller (a session token, or an API key with
 * `code`), then calls the same task service as `/v1`.
 */
export function legacyRoutes(container: Container): RouteSpec[] {
  const sessionAuth = new SessionTokenAuth({ db: container.db, clock: container.clock, apiKeys: container.apiKeys });
  const legacy = new LegacyTasksService({ db: container.db, tasks: container.tasks, followers: container.followers });
  const caller = (ctx: Context, code: string | undefined) => sessionAuth.authenticate(ctx.get('authorization') || undefined, code);

  return [
    defineRoute({
      method: 'post',
      path: '/start',
      operationId: 'legacyStart',
      summary: 'Start a task on this session (older API)',
      description: `Starts a task with the session's agent; the same request_id returns the same task (409 request_id_in_use when it was used on another session). 409 when no computer is connected or a task already runs on it. As with the /v1 start, the org's plan may answer 429 concurrency_limit or 402 (insufficient_balance, auto_topup_limit_reached, card_needs_attention). ${AUTH_TEXT}`,
      tag: 'Older session-token API',
      auth: 'none',
      body: LegacyStartBody,
      response: LegacyTaskSchema,
      errors: [
        ERRORS.missingSessionToken,
        ERRORS.noSession,
        ERRORS.notConnected,
        ERRORS.taskRunning,
        ERRORS.requestIdInUse,
        ERRORS.insufficientBalance, ERRORS.autoTopUpLimit, ERRORS.cardNeedsAttention,
        ERRORS.concurrencyLimit,
        ERRORS.modelUnavailable,
      ],
      handler: async ({ ctx, body, requestId }) => legacy.start(await caller(ctx, body.code), body, requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/wait',
      operationId: 'legacyWait',
      summary: 'Answer the open question or approval, then long-poll for events after a cursor (older API)',
      description: `With question_id and answer, or approval_id and decision (and note), answers first (first answer wins: 409 already_answered with answered_by, or not_pending); then waits up to timeout_ms (default 25000, at most 55000) for events after after. ${AUTH_TEXT}`,
      tag: 'Older session-token API',
      auth: 'none',
      body: LegacyWaitBody,
      response: LegacyTaskSchema,
      errors: [ERRORS.missingSessionToken, ERRORS.noSession, ERRORS.noTask, ERRORS.noQuestion, ERRORS.alreadyAnswered, ERRORS.notPending],
      handler: async ({ ctx, body, requestId }) => {
        // A caller that hangs up stops waiting at once, as on /v1's long poll: nothing is written.
        const signal = hangUpSignal(ctx.res);
        try {
          return await legacy.wait(await caller(ctx, body.code), body, requestId, signal);
        } catch (error) {
          if (!(error instanceof FollowerGone)) throw error;
          ctx.status = HUNG_UP;
          return undefined;
        }
      },
    }),
    defineRoute({
      method: 'post',
      path: '/stop',
      operationId: 'legacyStop',
      summary: 'Stop a task; an ended task is returned as it is (older API)',
      description: AUTH_TEXT,
      tag: 'Older session-token API',
      auth: 'none',
      body: LegacyIdBody,
      response: LegacyTaskSchema,
      errors: [ERRORS.missingSessionToken, ERRORS.noSession, ERRORS.noTask],
      handler: async ({ ctx, body, requestId }) => legacy.stop(await caller(ctx, body.code), body.id, requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/tasks',
      operationId: 'legacyListTasks',
      summary: 'This session\'s tasks, newest first, at most 100 (older API)',
      description: `No body is needed with a session token. ${AUTH_TEXT}`,
      tag: 'Older session-token API',
      auth: 'none',
      body: LegacyTasksBody,
      response: LegacyTaskListSchema,
      errors: [ERRORS.missingSessionToken, ERRORS.noSession],
      handler: async ({ ctx, body }) => legacy.list(await caller(ctx, body.code)),
    }),
    defineRoute({
      method: 'post',
      path: '/trace',
      operationId: 'legacyTrace',
      summary: 'A task with diagnostics safe to share with support (older API)',
      description: AUTH_TEXT,
      tag: 'Older session-token API',
      auth: 'none',
      body: LegacyIdBody,
      response: LegacyTraceSchema,
      errors: [ERRORS.missingSessionToken, ERRORS.noSession, ERRORS.noTask],
      handler: async ({ ctx, body }) => legacy.trace(await caller(ctx, body.code), body.id),
    }),
    defineRoute({
      method: 'get',
      path: '/health',
      operationId: 'legacyHealth',
      summary: 'Service status; with a token also whether the session\'s computer is connected (older API)',
      description:
        'Without Authorization: { status: "ok" }. With a session token (or an org API key and ?code=): also the session\'s code and computer_connected; an unknown or expired token is a 401.',
      tag: 'Older session-token API',
      auth: 'none',
      query: LegacyHealthQuery,
      response: LegacyHealthSchema,
      errors: [unauthenticated('Invalid session token'), ERRORS.noSession],
      handler: async ({ ctx, query }) => {
        const found = await sessionAuth.authenticateOptional(ctx.get('authorization') || undefined, query.code);
        if (!found) return { status: 'ok' as const };
        return { status: 'ok' as const, code: found.session.code, computer_connected: found.session.status === 'connected' };
      },
    }),
  ];
}
