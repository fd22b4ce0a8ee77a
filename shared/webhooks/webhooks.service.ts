import type { Knex } from '../db/knex';
import type { Config } from '../config';
import type { Logger } from '../logger';
import type { Actor } from '../audit/actor';
import { recordAudit } from '../audit/audit.repository';
import { ApiError, conflict, invalidRequest, notFound } from '../errors';
import { ORG_EVENT_TYPES, type OrgEventType } from '../events/org-events';
import { checkUrlForRegistration, generateSecret, type HostResolver } from '../http';
import { privateUrlHint } from '../http/private-url-hint';
import { newId } from '../ids';
import type { Page, PageRequest } from '../pagination';
import type { JobQueues } from '../queues/job-queues';
import {
  attemptsOf,
  findEndpoint,
  findOrgDelivery,
  insertDelivery,
  insertUndispatchableEvent,
  listDeliveries,
  lockEndpoint,
  restartDelivery,
  saveEndpoint,
  type AttemptRow,
  type DeliveryFilter,
  type DeliveryRow,
  type EndpointRow,
} from './webhooks.repository';
import { enqueueDelivery } from './webhook-delivery.service';
import { filterAccepts, TEST_EVENT_TYPE } from './webhook-events';

/** Longest webhook URL accepted. */
export const WEBHOOK_URL_MAX_CHARS = 2048;

/** The Webhook object (spec: Resources, Webhook). `secret` only when first made or rotated. */
export interface WebhookObject {
  object: 'webhook';
  url: string | null;
  events: OrgEventType[];
  has_secret: boolean;
  event_types: OrgEventType[];
  secret?: string;
}

export interface WebhookAttemptObject {
  n: number;
  url: string;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  ok: boolean;
  error: string | null;
  response_body: string | null;
}

/** One event sent (or being sent) to the endpoint, with every attempt. */
export interface WebhookDeliveryObject {
  object: 'webhook_delivery';
  delivery_id: string;
  event_id: string;
  event_type: string;
  status: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  last_error: string | null;
  last_status_code: number | null;
  created_at: string;
  updated_at: string;
  attempts: WebhookAttemptObject[];
}

export interface WebhookChanges {
  url?: string | null;
  events?: string[];
  rotate_secret?: boolean;
}

export interface ChangeContext {
  actor: Actor;
  requestId?: string | null;
}

function toWebhook(row: EndpointRow | null, revealSecret: boolean): WebhookObject {
  const webhook: WebhookObject = {
    object: 'webhook',
    url: row?.url ?? null,
    events: (row?.events ?? []) as OrgEventType[],
    has_secret: Boolean(row?.secret),
    event_types: [...ORG_EVENT_TYPES],
  };
  if (revealSecret && row?.secret) webhook.secret = row.secret;
  return webhook;
}

function toAttempt(row: AttemptRow): WebhookAttemptObject {
  return {
    n: row.n,
    url: row.url,
    started_at: row.started_at.toISOString(),
    duration_ms: row.duration_ms,
    status_code: row.status_code,
    ok: row.ok,
    error: row.error,
    response_body: row.response_body,
  };
}

function toDelivery(row: DeliveryRow, attempts: AttemptRow[]): WebhookDeliveryObject {
  return {
    object: 'webhook_delivery',
    delivery_id: row.id,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempt_count: row.attempts,
    next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
    last_error: row.last_error,
    last_status_code: row.last_status_code,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    attempts: attempts.map(toAttempt),
  };
}

/** The ten types in the spec's order, once each. */
function canonicalEvents(events: readonly string[]): OrgEventType[] {
  for (const type of events) {
    if (!(ORG_EVENT_TYPES as readonly string[]).includes(type)) {
      throw invalidRequest(`events has an unknown event type "${type}"; one of: ${ORG_EVENT_TYPES.join(', ')}`);
    }
  }
  return ORG_EVENT_TYPES.filter((type) => events.includes(type));
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

/**
 * The org's webhook endpoint as the API sees it: reading and changing it (`PUT`/`GET
 * /v1/webhook`), listing deliveries, redelivering one, and sending a test event. Sending is
 * the delivery worker's job (`webhook-delivery.service.ts`); this service only enqueues.
 */
export class WebhookService {
  constructor(
    private readonly deps: {
      db: Knex;
      queues: JobQueues;
      config: Readonly<Config>;
      logger: Logger;
      /** Name resolution for the registration check (tests inject it); the system resolver by default. */
      resolve?: HostResolver;
    },
  ) {}

  async get(orgId: string): Promise<WebhookObject> {
    return toWebhook(await findEndpoint(this.deps.db, orgId), false);
  }

  /**
   * Applies the sent fields only. A URL must pass the address policy (400 otherwise). The secret
   * is made when the endpoint first gets a URL, replaced on `rotate_secret` (the old one stops at
   * once: every attempt reads the current one), dropped with the URL; it is returned only then.
   */
  async update(orgId: string, changes: WebhookChanges, context: ChangeContext): Promise<WebhookObject> {
    const events = changes.events === undefined ? undefined : canonicalEvents(changes.events);
    if (typeof changes.url === 'string') {
      if (changes.url.length > WEBHOOK_URL_MAX_CHARS) throw invalidRequest(`url must be at most ${WEBHOOK_URL_MAX_CHARS} characters`);
      const check = await checkUrlForRegistration(changes.url, { allowPrivate: this.deps.config.allowPrivateUrls, resolve: this.deps.resolve });
      if (!check.ok) throw invalidRequest(`url is not allowed: ${check.reason}${privateUrlHint(changes.url, this.deps.config.env, this.deps.config.allowPrivateUrls)}`);
    }
    if (changes.url === null && changes.rotate_secret) {
      throw invalidRequest('rotate_secret cannot be combined with url: null (removing the endpoint drops its secret)');
    }

    return this.deps.db.transaction(async (trx) => {
      const current = await lockEndpoint(trx, orgId);
      const changed: string[] = [];
      let url = current.url;
      let secret = current.secret;
      let nextEvents = current.events as OrgEventType[];
      if (changes.url !== undefined && changes.url !== current.url) {
        changed.push('url');
        url = changes.url;
        if (url === null) secret = null;
      }
      if (events !== undefined && !sameList(events, current.events)) {
        changed.push('events');
        nextEvents = events;
      }
      let secretRotated = false;
      let secretCreated = false;
      if (changes.rotate_secret) {
        if (url === null) throw invalidRequest('rotate_secret needs a webhook endpoint: set url first');
        secret = generateSecret();
        secretRotated = true;
      } else if (url !== null && secret === null) {
        secret = generateSecret();
        secretCreated = true;
      }
      if (changed.length === 0 && !secretRotated && !secretCreated) return toWebhook(current, false);

      const row = await saveEndpoint(trx, orgId, { url, events: nextEvents, secret, secretChanged: secret !== current.secret });
      const action = current.url === null && url !== null ? 'webhook.created' : url === null ? 'webhook.deleted' : 'webhook.updated';
      await recordAudit(trx, {
        orgId,
        actor: context.actor,
        action,
        objectType: 'webhook',
        objectId: orgId,
        data: { url, events: nextEvents, changed, secret_rotated: secretRotated },
        requestId: context.requestId,
      });
      return toWebhook(row, secretRotated || secretCreated);
    });
  }

  async listDeliveries(orgId: string, filter: DeliveryFilter, page: PageRequest): Promise<Page<WebhookDeliveryObject>> {
    const rows = await listDeliveries(this.deps.db, orgId, filter, page);
    const attempts = await attemptsOf(this.deps.db, rows.data.map((row) => row.id));
    return { ...rows, data: rows.data.map((row) => toDelivery(row, attempts.get(row.id) ?? [])) };
  }

  async getDelivery(orgId: string, deliveryId: string): Promise<WebhookDeliveryObject> {
    const row = await findOrgDelivery(this.deps.db, orgId, deliveryId);
    if (!row) throw notFound(`No webhook delivery ${deliveryId}`);
    return toDelivery(row, (await attemptsOf(this.deps.db, [row.id])).get(row.id) ?? []);
  }

  /**
   * Sends a delivery's event again, now, to the endpoint as it is now, with the same `id` and
   * body. The delivery goes back to `pending` and, should this attempt fail, is retried on a
   * fresh round of the schedule. 409 without an endpoint, or when its filter no longer takes
   * the event's type.
   */
  async redeliver(orgId: string, deliveryId: string, context: ChangeContext): Promise<WebhookDeliveryObject> {
    const row = await this.deps.db.transaction(async (trx) => {
      const delivery = await findOrgDelivery(trx, orgId, deliveryId);
      if (!delivery) throw notFound(`No webhook delivery ${deliveryId}`);
      const endpoint = await findEndpoint(trx, orgId);
      if (!endpoint?.url) throw noEndpoint();
      if (!filterAccepts(endpoint.events, delivery.event_type)) {
        throw conflict(`The webhook's events filter does not accept ${delivery.event_type}; add it to events to redeliver this event`, 'event_type_filtered');
      }
      const restarted = await restartDelivery(trx, deliveryId);
      await recordAudit(trx, {
        orgId,
        actor: context.actor,
        action: 'webhook.redelivery_requested',
        objectType: 'webhook_delivery',
        objectId: deliveryId,
        data: { event_id: delivery.event_id, event_type: delivery.event_type },
        requestId: context.requestId,
      });
      return restarted;
    });
    await enqueueDelivery(this.deps.queues, row.id, { jobId: `redeliver-${row.id}-${row.attempts}`, orLeaveToSweep: true });
    return toDelivery(row, (await attemptsOf(this.deps.db, [row.id])).get(row.id) ?? []);
  }

  /**
   * Sends a `webhook.test` event (data `{ message, webhook: { url } }`) to the endpoint through
   * the same delivery path as real events: signed, retried, recorded. 409 without an endpoint.
   */
  async sendTest(orgId: string, context: ChangeContext): Promise<WebhookDeliveryObject> {
    const row = await this.deps.db.transaction(async (trx) => {
      const endpoint = await findEndpoint(trx, orgId);
      if (!endpoint?.url) throw noEndpoint();
      const eventId = newId('evt');
      await insertUndispatchableEvent(trx, {
        id: eventId,
        orgId,
        type: TEST_EVENT_TYPE,
        data: { message: 'A test event sent with POST /v1/webhook/test.', webhook: { url: endpoint.url } },
      });
      const delivery = await insertDelivery(trx, { id: newId('dlv'), eventId, orgId, eventType: TEST_EVENT_TYPE });
      await recordAudit(trx, {
        orgId,
        actor: context.actor,
        action: 'webhook.test_sent',
        objectType: 'webhook_delivery',
        objectId: delivery.id,
        data: { event_id: eventId, url: endpoint.url },
        requestId: context.requestId,
      });
      return delivery;
    });
    await enqueueDelivery(this.deps.queues, row.id, { jobId: `test-${row.id}`, orLeaveToSweep: true });
    return toDelivery(row, []);
  }
}

function noEndpoint(): ApiError {
  return conflict('No webhook endpoint is set: set one with PUT /v1/webhook first', 'no_webhook_endpoint');
}
