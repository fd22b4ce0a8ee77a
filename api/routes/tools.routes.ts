import type { Container } from '../../shared/container';
import { defineRoute, type RouteSpec } from '../routing';
import { ToolSecretSchema } from '../schemas/webhooks.schemas';

const TAG = 'HTTP tools';

/** The org's HTTP-tool signing secret (spec: Outgoing HTTP tool call). */
export function toolRoutes(container: Container): RouteSpec[] {
  const { toolSecrets } = container;
  return [
    defineRoute({
      method: 'get',
      path: '/v1/tool_secret',
      operationId: 'getToolSecret',
      summary: 'The secret HTTP tool calls are signed with',
      description:
        'Every call of an agent\'s HTTP tool carries `Service-Signature: t=<unix>,v1=<hex>`, the HMAC-SHA256 of `<t>.<raw body>` ' +
        'keyed with this whole secret, as webhooks are. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: ToolSecretSchema,
      errors: [],
      handler: async ({ auth }) => toolSecrets.get(auth.orgId),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/tool_secret/rotate',
      operationId: 'rotateToolSecret',
      summary: 'Replace the tool secret',
      description: 'The next call is signed with the new secret; the old one stops at once. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: ToolSecretSchema,
      errors: [],
      handler: async ({ auth, requestId }) => toolSecrets.rotate(auth.orgId, { actor: auth.actor, requestId }),
    }),
  ];
}
