import type { Container } from '../../shared/container';
import { notFound } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf } from '../schemas/common.schemas';
import { ApiKeyParams, ApiKeySchema, CreateApiKeyBody, CreatedApiKeySchema } from '../schemas/api-keys.schemas';

const TAG = 'API keys';

/** The org's API keys (console: Settings, API keys): list, create (the key shown once), revoke. */
export function apiKeyRoutes(container: Container): RouteSpec[] {
  const { apiKeys } = container;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/api_keys',
      operationId: 'listApiKeys',
      summary: 'The org\'s API keys, oldest first (never their secrets)',
      description:
        'Every API key of the org, revoked ones too, oldest first, in one page: name, display prefix, when it was made, last used and revoked. ' +
        'The keys themselves are never shown again after they are made. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: ListOf(ApiKeySchema),
      errors: [],
      handler: async ({ auth }) => ({ data: await apiKeys.list(auth.orgId), has_more: false, next_cursor: null }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/api_keys',
      operationId: 'createApiKey',
      summary: 'Create an API key; the key is shown once',
      description:
        'Makes a key that acts for the org with the admin role. The key (`key`) is in this response only; the service keeps its hash. ' +
        'A retry with the same `Idempotency-Key` answers the same key. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: CreateApiKeyBody,
      idempotent: true,
      response: CreatedApiKeySchema,
      errors: [],
      handler: async ({ auth, body, requestId }) => {
        const { apiKey, secret } = await apiKeys.createForOrg(auth.orgId, body.name.trim(), { actor: auth.actor, requestId });
        return { ...apiKey, key: secret };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/v1/api_keys/{key_id}',
      operationId: 'revokeApiKey',
      summary: 'Revoke an API key; every process refuses it at once',
      description:
        'The key stops working at once in every process of the service (401 on its next request) and stays listed with `revoked_at`. ' +
        'Revoking a revoked key answers it unchanged. 404 `not_found` for a key the org does not have. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: ApiKeyParams,
      response: ApiKeySchema,
      errors: [notFound('No API key key_5c3k9xq7m2')],
      handler: async ({ auth, params, requestId }) => apiKeys.revoke(params.key_id, auth.actor, { orgId: auth.orgId, requestId }),
    }),
  ];
}
