import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { conflict, ERRORS, notFound } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { SessionCode } from '../schemas/sessions.schemas';
import { idempotencyKey } from '../../shared/tasks/idempotency';
import { RespondBody, StartTaskBody, TaskEventPageSchema, TaskSchema } from '../schemas/tasks.schemas';

const TaskPath = Type.Object({ task_id: Type.String({ pattern: '^task_[a-z0-9]{1,40}$' }) });

export function taskRoutes(container: Container): RouteSpec[] {
  const tasks = container.tasks;
  const followers = container.followers;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{session_id}/tasks',
      operationId: 'startTask',
      summary: 'Start a task on a connected session',
      description:
        '`agent_version`: `published` (the default), `draft`, or a published version\'s number (404 naming it when the agent has no such version). 404 also when the session expired (the message says when). 409 when no computer is connected (the message says since when its computer has been offline, if one had paired), or when a task already runs on it (`active_task_id`); 503 `model_unavailable` when the agent\'s model cannot run here. The same `request_id` (or `Idempotency-Key` header) returns the same task; reused with other parameters it is 409 `idempotency_conflict` (with the first task\'s `task_id`), and on another session 409 `request_id_in_use`. The plan decides too (docs/billing.md): 429 `concurrency_limit` when the org already runs the plan\'s tasks at once; 402 `payment_required` when the next minute is not covered: `insufficient_balance` (free minutes used up, or the balance short: add funds), `auto_topup_limit_reached` (raise the limit), `card_needs_attention` (update the card).',
      tag: 'Tasks',
      auth: 'api_key',
      params: Type.Object({ session_id: SessionCode }),
      body: StartTaskBody,
      response: TaskSchema,
      errors: [
        ERRORS.noSession,
        notFound('Session K7QX-M2PD expired at 2026-03-02T10:15:00.000Z; its code no longer works and it takes no tasks. Create a new session for the person.'),
        ERRORS.noAgent,
        notFound('Agent support-bot has no version 7; its published version is 3'),
        ERRORS.notConnected,
        ERRORS.taskRunning,
        conflict('idempotency_conflict', 'request_id order-1042 was already used for task task_3k9xq7m2pd8w4tz1vn5c with another prompt; use a new request_id for a new task', {
          task_id: 'task_3k9xq7m2pd8w4tz1vn5c',
        }),
        ERRORS.requestIdInUse,
        ERRORS.insufficientBalance, ERRORS.autoTopUpLimit, ERRORS.cardNeedsAttention,
        ERRORS.concurrencyLimit,
        ERRORS.modelUnavailable,
      ],
      idempotent: 'handler',
      handler: async ({ auth, params, body, requestId, ctx }) =>
        tasks.start(auth, params.session_id.toUpperCase(), { ...body, request_id: idempotencyKey(body.request_id, ctx.get('idempotency-key') || undefined) }, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/tasks',
      operationId: 'listTasks',
      summary: 'List tasks, newest first',
      description:
        'The org\'s tasks, newest first, a page at a time (`cursor`), optionally only those of one session, one agent or one status. Any API key of the org may call it. 400 invalid_request for a malformed filter or cursor.',
      tag: 'Tasks',
      auth: 'api_key',
      query: Type.Object(
        {
          ...PageQuery,
          session_id: Type.Optional(SessionCode),
          agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$' })),
          status: Type.Optional(Type.Union([Type.Literal('queued'), Type.Literal('running'), Type.Literal('completed'), Type.Literal('failed'), Type.Literal('stopped')])),
        },
        { additionalProperties: false },
      ),
      response: ListOf(TaskSchema),
      errors: [],
      handler: async ({ auth, query }) =>
        tasks.list(auth.orgId, { sessionId: query.session_id?.toUpperCase(), agentId: query.agent_id, status: query.status }, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/tasks/{task_id}',
      operationId: 'getTask',
      summary: 'Get a task; include=trace adds diagnostics safe to share with support',
      description:
        'One task as it is now: its status, what it waits for (`pending`), its result or error, its cursor (the last event\'s) and its recording. include=trace adds diagnostics that are safe to share with support. To follow a task as it runs, use GET /v1/tasks/{task_id}/events. Any API key of the org may call it. 404 not_found when the org has no such task.',
      tag: 'Tasks',
      auth: 'api_key',
      params: TaskPath,
      query: Type.Object({ include: Type.Optional(Type.Literal('trace')) }, { additionalProperties: false }),
      response: TaskSchema,
      errors: [ERRORS.noTask],
      handler: async ({ auth, params, query }) => {
        const task = await tasks.get(auth.orgId, params.task_id);
        return query.include === 'trace' ? { ...task, trace: await tasks.trace(auth.orgId, params.task_id) } : task;
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/tasks/{task_id}/events',
      operationId: 'followTask',
      summary: 'Follow a task: events after a cursor, waiting up to wait_ms for new ones',
      description: 'Call again with the returned cursor until task.done is true, answering task.pending when set.',
      tag: 'Tasks',
      auth: 'api_key',
      longPoll: true,
      params: TaskPath,
      query: Type.Object(
        {
          after: Type.Optional(Type.Integer({ minimum: 0, default: 0, description: 'The last cursor you have; 0 for everything.' })),
          wait_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: 55000, default: 0, description: 'Wait up to this long for new events (long poll).' })),
        },
        { additionalProperties: false },
      ),
      response: TaskEventPageSchema,
      errors: [ERRORS.noTask],
      handler: ({ auth, params, query, signal }) => followers.follow(auth.orgId, params.task_id, query.after ?? 0, query.wait_ms ?? 0, signal),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/tasks/{task_id}/respond',
      operationId: 'respondToTask',
      summary: 'Answer the open question or decide the open approval (first answer wins)',
      description: '409 `already_answered` (with `answered_by`) when the person or a timeout was first; 409 `not_pending` when it is no longer open.',
      tag: 'Tasks',
      auth: 'api_key',
      params: TaskPath,
      body: RespondBody,
      response: TaskSchema,
      errors: [ERRORS.noTask, ERRORS.noQuestion, ERRORS.alreadyAnswered, ERRORS.notPending],
      handler: async ({ auth, params, body, requestId }) => tasks.respond(auth, params.task_id, body, requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/tasks/{task_id}/stop',
      operationId: 'stopTask',
      summary: 'Stop a task; an ended task is returned as it is',
      description:
        'Stops the task: it ends with status stopped (a stopped event) and the computer stops acting. A task that has already ended is returned as it is, so stopping twice is harmless. Any API key of the org may call it. 404 not_found when the org has no such task.',
      tag: 'Tasks',
      auth: 'api_key',
      params: TaskPath,
      response: TaskSchema,
      errors: [ERRORS.noTask],
      handler: async ({ auth, params, requestId }) => tasks.stop(auth, params.task_id, requestId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/tasks/{task_id}/recording/{seq}',
      operationId: 'getRecordingFrame',
      summary: 'One recorded screen as PNG; frames are numbered from 1 to recording.frames',
      description:
        'One screen of the task\'s recording as a PNG, numbered from 1 to the task\'s recording.frames; cacheable for ever (a frame never changes). Any API key of the org may call it. 404 not_found when the org has no such task or the task has no such frame.',
      tag: 'Tasks',
      auth: 'api_key',
      params: Type.Object({ task_id: TaskPath.properties.task_id, seq: Type.Integer({ minimum: 1 }) }),
      response: { contentType: 'image/png', description: 'The PNG of the frame' },
      errors: [ERRORS.noTask, notFound('Task task_3k9xq7m2pd8w4tz1vn5c has 1 frame; there is no frame 2')],
      handler: async ({ auth, params, ctx }) => {
        ctx.type = 'image/png';
        ctx.set('Cache-Control', 'private, max-age=31536000, immutable');
        ctx.body = await tasks.frame(auth.orgId, params.task_id, params.seq);
      },
    }),
  ];
}
