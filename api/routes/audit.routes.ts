import { Type } from '@sinclair/typebox';
import type { Container } from '../../shared/container';
import { defineRoute, type RouteSpec } from '../routing';
import { Actor, DateTime, ListOf, PageQuery } from '../schemas/common.schemas';

export const AuditEntrySchema = Type.Object({
  object: Type.Literal('audit_log_entry'),
  id: Type.String(),
  action: Type.String({ description: 'What happened, as `<object>.<verb>`: agent.created, session.expired, api_key.revoked, …' }),
  object_type: Type.String(),
  object_id: Type.String(),
  actor: Actor,
  data: Type.Record(Type.String(), Type.Unknown()),
  request_id: Type.Union([Type.String(), Type.Null()], { description: 'The X-Request-Id of the request that made the change; null when none was recorded (the service\'s own changes).' }),
  created_at: DateTime,
}, { title: 'AuditLogEntry' });

export function auditRoutes(container: Container): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/audit_log',
      operationId: 'listAuditLog',
      summary: 'Every change made in the org, newest first',
      description:
        'Every change made in the org (agents, sessions, tasks, API keys, webhooks, …) with who made it and the request_id, newest first, a page at a time (`cursor`), filtered by object_type, object_id or action. Any API key of the org may call it. 400 invalid_request for a malformed filter or cursor.',
      tag: 'Audit log',
      auth: 'api_key',
      role: 'admin',
      query: Type.Object(
        {
          ...PageQuery,
          object_type: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'Only entries about this kind of object (agent, session, task, api_key, webhook, …).' })),
          object_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only entries about this object.' })),
          action: Type.Optional(Type.String({ minLength: 1, maxLength: 80, description: 'Only this action.' })),
        },
        { additionalProperties: false },
      ),
      response: ListOf(AuditEntrySchema),
      errors: [],
      handler: async ({ auth, query }) =>
        container.auditLog.list(
          auth.orgId,
          { objectType: query.object_type, objectId: query.object_id, action: query.action },
          { limit: query.limit ?? 20, cursor: query.cursor ?? null },
        ),
    }),
  ];
}
