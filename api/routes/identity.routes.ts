import { Type } from '@sinclair/typebox';
import { defineRoute, type RouteSpec } from '../routing';

const Identity = Type.Object({
  object: Type.Literal('api_key_identity'),
  org_id: Type.String(),
  key_id: Type.Union([Type.String(), Type.Null()], { description: 'The API key used; null for a person signed in to the console.' }),
  user_id: Type.Union([Type.String(), Type.Null()], { description: 'The signed-in person; null for an API key.' }),
  role: Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member')], { description: 'The role the request acts with: API keys act as admin.' }),
  name: Type.Union([Type.String(), Type.Null()]),
  prefix: Type.Union([Type.String(), Type.Null()]),
}, { title: 'ApiKeyIdentity' });

/** `GET /v1/me`: which org and key a request acts as; integrators use it to check a key. */
export function identityRoutes(): RouteSpec[] {
  return [
    defineRoute({
      method: 'get',
      path: '/v1/me',
      operationId: 'getIdentity',
      summary: 'The org and API key this request acts as',
      description:
        'Which org and API key (or signed-in person) the request acts as (`org_id`, `key_id` or `user_id`, the `role`, the key\'s name and prefix): the cheapest way to check that a key works. Any API key of the org may call it. 401 authentication when the key is missing, wrong or revoked.',
      tag: 'Authentication',
      auth: 'api_key',
      response: Identity,
      errors: [],
      handler: async ({ auth }) => ({
        object: 'api_key_identity' as const,
        org_id: auth.orgId,
        key_id: auth.keyId,
        user_id: auth.userId,
        role: auth.role,
        name: auth.actor.type === 'api_key' ? auth.actor.name : null,
        prefix: auth.actor.type === 'api_key' ? auth.actor.prefix : null,
      }),
    }),
  ];
}
