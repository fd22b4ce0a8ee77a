import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { ERRORS } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf, PageQuery } from '../schemas/common.schemas';
import { CreateSessionBody, CreatedSessionSchema, SessionCode, SessionSchema } from '../schemas/sessions.schemas';

const SessionPath = Type.Object({ session_id: SessionCode });

export function sessionRoutes(container: Container): RouteSpec[] {
  const sessions = container.sessions;
  return [
    defineRoute({
      method: 'post',
      path: '/v1/sessions',
      operationId: 'createSession',
      summary: 'Create a session: an invite link and pairing code (600 an hour per org)',
      description: 'The response carries the session token for the older session-token API; it is shown only here.',
      tag: 'Sessions',
      auth: 'api_key',
      body: CreateSessionBody,
      response: CreatedSessionSchema,
      errors: [ERRORS.noAgent],
      idempotent: true,
      handler: async ({ auth, body, requestId }) => {
        const { session, token } = await sessions.create(auth, body, requestId);
        return { ...session, token };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions',
      operationId: 'listSessions',
      summary: 'List sessions, newest first',
      description:
        'The org\'s sessions, newest first, a page at a time (`cursor`), optionally only those with a status or an agent. Any API key of the org may call it. 400 invalid_request for a malformed filter or cursor.',
      tag: 'Sessions',
      auth: 'api_key',
      query: Type.Object(
        {
          ...PageQuery,
          status: Type.Optional(Type.Union([Type.Literal('waiting'), Type.Literal('connected'), Type.Literal('disconnected'), Type.Literal('expired')])),
          agent_id: Type.Optional(Type.String({ pattern: '^[a-z0-9-]{2,40}$' })),
        },
        { additionalProperties: false },
      ),
      response: ListOf(SessionSchema),
      errors: [],
      handler: async ({ auth, query }) =>
        sessions.list(auth.orgId, { status: query.status, agentId: query.agent_id }, { limit: query.limit ?? 20, cursor: query.cursor ?? null }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/sessions/{session_id}',
      operationId: 'getSession',
      summary: 'Get a session by its code',
      description:
        'One session by its pairing code (the session id): its status, the computer connected to it (device), and its latest task. Any API key of the org may call it. 404 not_found when the org has no such session.',
      tag: 'Sessions',
      auth: 'api_key',
      params: SessionPath,
      response: SessionSchema,
      errors: [ERRORS.noSession],
      handler: async ({ auth, params }) => sessions.get(auth.orgId, params.session_id.toUpperCase()),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{session_id}/disconnect',
      operationId: 'disconnectSession',
      summary: 'Let go of the computer: a running task stops, the app forgets the code',
      description: 'The session and its token stay valid; the person can enter the code again. A session that is not connected is returned as it is.',
      tag: 'Sessions',
      auth: 'api_key',
      params: SessionPath,
      response: SessionSchema,
      errors: [ERRORS.noSession],
      handler: async ({ auth, params, requestId }) => sessions.disconnect(auth, params.session_id.toUpperCase(), requestId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/sessions/{session_id}/expire',
      operationId: 'expireSession',
      summary: 'End the session: its code and token stop working, a running task stops',
      description:
        'Ends the session: its pairing code and session token stop working, a running task stops, a connected computer is let go. An expired session is returned as it is. Any API key of the org may call it. 404 not_found when the org has no such session.',
      tag: 'Sessions',
      auth: 'api_key',
      params: SessionPath,
      response: SessionSchema,
      errors: [ERRORS.noSession],
      handler: async ({ auth, params, requestId }) => sessions.expire(auth, params.session_id.toUpperCase(), requestId),
    }),
  ];
}
