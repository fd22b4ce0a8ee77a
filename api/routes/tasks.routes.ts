import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
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
        '409 when no computer is connected, or when a task already runs on it (`active_task_id`); 503 `model_unavailable` when the agent\'s model cannot run here. The same `request_id` (or `Idempotency-Key` header) returns the same task; reused with other parameters it is 409 `idempotency_conflict` (with the first task\'s `task_id`), and on another session 409 `request_id_in_use`.',
      tag: 'Tasks',
      auth: 'api_key',
      params: Type.Object({ session_id: SessionCode }),
      body: StartTaskBody,
      response: TaskSchema,
      errors: [404, 409, 503],
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
      errors: [404],
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
      errors: [404],
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
      errors: [404, 409],
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
      errors: [404],
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
      errors: [404],
      handler: async ({ auth, params, ctx }) => {
        ctx.type = 'image/png';
        ctx.set('Cache-Control', 'private, max-age=31536000, immutable');
        ctx.body = await tasks.frame(auth.orgId, params.task_id, params.seq);
      },
    }),
  ];
}
