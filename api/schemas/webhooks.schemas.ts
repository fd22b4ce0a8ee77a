import { Type } from '@sinclair/typebox';
import { ORG_EVENT_TYPES, type OrgEventType } from '../../shared/events/org-events';
import { DateTime, NullableDateTime, PageQuery } from './common.schemas';

/** Schemas of the webhook endpoint, its deliveries, and the tool secret. */

/** A plain string enum (not a union of literals), so that a bad value gets "must be one of: …". */
export const WebhookEventType = Type.Unsafe<OrgEventType>({
  type: 'string',
  enum: [...ORG_EVENT_TYPES],
  description: 'One of the ten webhook event types.',
});

export const WebhookSchema = Type.Object({
  object: Type.Literal('webhook'),
  url: Type.Union([Type.String(), Type.Null()], { description: 'Where events are POSTed; null: no endpoint.' }),
  events: Type.Array(WebhookEventType, { description: 'The event types sent; empty means every type.' }),
  has_secret: Type.Boolean({ description: 'True when deliveries are signed (the endpoint has a secret; it is shown only when made or rotated).' }),
  event_types: Type.Array(WebhookEventType, { description: 'Every type the events filter accepts.' }),
  secret: Type.Optional(
    Type.String({ description: 'The signing secret (`whsec_…`): only in the response that made or rotated it.' }),
  ),
}, { title: 'Webhook' });

export const WebhookUpdateBody = Type.Object(
  {
    url: Type.Optional(
      Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()], {
        description: 'An https URL that resolves to public addresses only; null removes the endpoint (and its secret).',
      }),
    ),
    events: Type.Optional(
      Type.Array(WebhookEventType, { maxItems: 50, description: 'Event types to send; empty means every type. Duplicates are ignored.' }),
    ),
    rotate_secret: Type.Optional(
      Type.Boolean({ description: 'true: replace the secret (URL and events stay); the old one stops at once. The new one is returned once.' }),
    ),
  },
  { additionalProperties: false, examples: [{ url: 'https://hooks.example.com/deskhand', events: ['task.waiting_for_user', 'task.waiting_for_approval', 'task.completed', 'task.failed'] }] },
);

export const WebhookAttemptSchema = Type.Object({
  n: Type.Integer({ minimum: 1, description: 'Attempt number, from 1.' }),
  url: Type.String({ description: 'The URL this attempt was sent to.' }),
  started_at: DateTime,
  duration_ms: Type.Integer({ minimum: 0 }),
  status_code: Type.Union([Type.Integer(), Type.Null()], { description: 'The reply status; null when no reply came.' }),
  ok: Type.Boolean({ description: 'A 2xx reply came.' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why the attempt failed (timeout, refused address, HTTP status, …).' }),
  response_body: Type.Union([Type.String(), Type.Null()], { description: 'The start of the reply body (up to 1 KB).' }),
});

export const WebhookDeliverySchema = Type.Object({
  object: Type.Literal('webhook_delivery'),
  delivery_id: Type.String({ description: '`dlv_<id>`' }),
  event_id: Type.String({ description: 'The envelope `id` (`evt_<id>`), the same on every attempt.' }),
  event_type: Type.String({ description: 'An event type, or `webhook.test` for a test event.' }),
  status: Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], {
    description: 'pending: an attempt is due or in flight; succeeded: a 2xx came back; failed: given up after the last retry.',
  }),
  attempt_count: Type.Integer({ minimum: 0 }),
  next_attempt_at: Type.Union([DateTime, Type.Null()], { description: 'When the next attempt is due (pending only).' }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  last_status_code: Type.Union([Type.Integer(), Type.Null()]),
  created_at: DateTime,
  updated_at: DateTime,
  attempts: Type.Array(WebhookAttemptSchema, { description: 'Every attempt, oldest first.' }),
}, { title: 'WebhookDelivery' });

export const DeliveriesQuery = Type.Object(
  {
    ...PageQuery,
    status: Type.Optional(Type.Union([Type.Literal('pending'), Type.Literal('succeeded'), Type.Literal('failed')], { description: 'Only deliveries in this state.' })),
    event_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only the delivery of this event.' })),
    event_type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Only deliveries of this event type.' })),
  },
  { additionalProperties: false },
);

export const DeliveryParams = Type.Object({ delivery_id: Type.String({ minLength: 1, maxLength: 100 }) });

export const ToolSecretSchema = Type.Object({
  object: Type.Literal('tool_secret'),
  secret: Type.String({ description: 'The secret tool calls are signed with (`whsec_…`), the same scheme as webhooks.' }),
  created_at: DateTime,
  rotated_at: NullableDateTime,
}, { title: 'ToolSecret' });
