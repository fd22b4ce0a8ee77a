import type { Container } from '../../shared/container';
import { conflict, ERRORS, invalidInput } from '../route-errors';
import { defineRoute, type RouteSpec } from '../routing';
import { ListOf } from '../schemas/common.schemas';
import { DeliveriesQuery, DeliveryParams, WebhookDeliverySchema, WebhookSchema, WebhookUpdateBody } from '../schemas/webhooks.schemas';

const TAG = 'Webhooks';

/** The org's webhook endpoint (spec: Webhook endpoint) and, beyond the spec, its deliveries. */
export function webhookRoutes(container: Container): RouteSpec[] {
  const { webhooks } = container;
  return [
    defineRoute({
      method: 'put',
      path: '/v1/webhook',
      operationId: 'updateWebhook',
      summary: 'Set, change or remove the webhook endpoint; rotate its secret',
      description:
        'Only sent fields change. The URL must be https and resolve to public addresses only. The secret (`whsec_…`) is in the ' +
        'response only when it is first made (the endpoint gets its first URL) or rotated; changing URL or events keeps it. ' +
        'Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      body: WebhookUpdateBody,
      response: WebhookSchema,
      errors: [invalidInput(
          'url is not allowed: the host is a private, local or reserved address (in development, DESKHAND_ALLOW_PRIVATE_URLS=1 allows plain http and local or private addresses)',
        )],
      handler: async ({ auth, body, requestId }) => webhooks.update(auth.orgId, body, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhook',
      operationId: 'getWebhook',
      summary: 'The webhook endpoint (never its secret)',
      description:
        'The org\'s webhook endpoint: its URL, the event types it receives and whether it has a secret (the secret itself is shown only by the PUT that made or rotated it). Any API key of the org may call it.',
      tag: TAG,
      auth: 'api_key',
      response: WebhookSchema,
      errors: [],
      handler: async ({ auth }) => webhooks.get(auth.orgId),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhook/deliveries',
      operationId: 'listWebhookDeliveries',
      summary: 'Recent deliveries to the endpoint, newest first, each with its attempts',
      description:
        'Recent deliveries to the webhook endpoint, newest first, a page at a time, each with every attempt (status code, error, the start of the reply); filter by status, event_id or event_type. Any API key of the org may call it. 400 invalid_request for a malformed filter or cursor.',
      tag: TAG,
      auth: 'api_key',
      query: DeliveriesQuery,
      response: ListOf(WebhookDeliverySchema),
      errors: [],
      handler: async ({ auth, query }) =>
        webhooks.listDeliveries(
          auth.orgId,
          { status: query.status, eventId: query.event_id, eventType: query.event_type },
          { limit: query.limit ?? 20, cursor: query.cursor ?? null },
        ),
    }),
    defineRoute({
      method: 'get',
      path: '/v1/webhook/deliveries/{delivery_id}',
      operationId: 'getWebhookDelivery',
      summary: 'One delivery with its attempts',
      description:
        'One delivery with every attempt made, oldest first. Any API key of the org may call it. 404 not_found when the org has no such delivery.',
      tag: TAG,
      auth: 'api_key',
      params: DeliveryParams,
      response: WebhookDeliverySchema,
      errors: [ERRORS.noDelivery],
      handler: async ({ auth, params }) => webhooks.getDelivery(auth.orgId, params.delivery_id),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhook/deliveries/{delivery_id}/redeliver',
      operationId: 'redeliverWebhookEvent',
      summary: 'Send a delivery\'s event again, now',
      description:
        'The same body and `id`, signed afresh, to the endpoint as it is now. The delivery goes back to `pending`; should this ' +
        'attempt fail, it is retried on a fresh round of the retry schedule. 409 `no_webhook_endpoint` without an endpoint, ' +
        '409 `event_type_filtered` when the events filter no longer takes the event\'s type. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      params: DeliveryParams,
      response: WebhookDeliverySchema,
      errors: [ERRORS.noDelivery, ERRORS.noEndpoint, conflict('event_type_filtered', "The webhook's events filter does not accept task.completed; add it to events to redeliver this event")],
      handler: async ({ auth, params, requestId }) => webhooks.redeliver(auth.orgId, params.delivery_id, { actor: auth.actor, requestId }),
    }),
    defineRoute({
      method: 'post',
      path: '/v1/webhook/test',
      operationId: 'sendWebhookTestEvent',
      summary: 'Send a `webhook.test` event to the endpoint',
      description:
        'A signed envelope of type `webhook.test` (outside the ten types, never blocked by the events filter), delivered and ' +
        'retried like any event. Returns the delivery; follow it with `GET /v1/webhook/deliveries/{delivery_id}`. ' +
        '409 `no_webhook_endpoint` without an endpoint. Needs the admin role or an API key.',
      tag: TAG,
      auth: 'api_key',
      role: 'admin',
      response: WebhookDeliverySchema,
      errors: [ERRORS.noEndpoint],
      handler: async ({ auth, requestId }) => webhooks.sendTest(auth.orgId, { actor: auth.actor, requestId }),
    }),
  ];
}
