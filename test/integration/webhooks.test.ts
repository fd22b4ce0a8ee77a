import { expect } from 'chai';
import Stripe from 'stripe';
import { loadConfig } from '../../shared/config';
import { ORG_EVENT_TYPES, appendOrgEvent } from '../../shared/events/org-events';
import { checkSignature, verifySignature } from '../../shared/http';
import { QUEUE_NAMES } from '../../shared/queues/catalog';
import { startTestService, waitFor, type TestService } from '../support/service';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/receiver';
import { dataFor, emitEvent, emitEvents } from '../support/org-event-fixtures';

// Only Stripe's offline webhook helper runs: nothing talks to Stripe.
const stripe = new Stripe('sk_test_offline_only');

const SCHEDULE_MS = [100, 200, 300, 400];
const TIMEOUT_MS = 400;

const signatureOf = (request: ReceivedRequest): string => request.headers['service-signature'] as string;
const timestampOf = (request: ReceivedRequest): number => Number(/t=(\d+)/.exec(signatureOf(request))![1]);

describe('webhooks', () => {
  let service: TestService;
  const receivers: Receiver[] = [];
  const receiver = async (...args: Parameters<typeof startReceiver>) => {
    const r = await startReceiver(...args);
    receivers.push(r);
    return r;
  };

  before(async () => {
    service = await startTestService({
      DESKHAND_ALLOW_PRIVATE_URLS: '1',
      DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE_MS.join(','),
      DESKHAND_WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
    });
  });
  after(async () => service.stop());
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((r) => r.close()));
  });

  /** A new org with its endpoint at a new receiver; returns the secret. */
  async function orgWithEndpoint(body: Record<string, unknown> = {}) {
    const org = await service.newOrg();
    const target = await receiver();
    const put = await service.api(org.key, 'PUT', '/v1/webhook', { url: target.url(), ...body });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    return { ...org, target, secret: put.body.secret as string };
  }

  async function deliveryOf(key: string, eventId: string) {
    const list = await service.api(key, 'GET', `/v1/webhook/deliveries?event_id=${eventId}`);
    expect(list.status).to.equal(200);
    return list.body.data[0] ?? null;
  }

  async function waitForDelivery(key: string, eventId: string, status: string, timeoutMs = 10_000) {
    return waitFor(async () => {
      const delivery = await deliveryOf(key, eventId);
      return delivery?.status === status ? delivery : null;
    }, timeoutMs, `delivery of ${eventId} to be ${status}`);
  }

  describe('configuration', () => {
    it('defaults to the spec: 10 s per attempt, retries after 5 s, 20 s, 1 min, 2 min; 15 s per tool call', () => {
      const config = loadConfig({});
      expect(config.webhookTimeoutMs).to.equal(10_000);
      expect(config.webhookRetryScheduleMs).to.deep.equal([5_000, 20_000, 60_000, 120_000]);
      expect(config.toolTimeoutMs).to.equal(15_000);
    });

    it('names the variable of a malformed schedule or deadline', () => {
      expect(() => loadConfig({ DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '5s,20s' })).to.throw(/DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS/);
      expect(() => loadConfig({ DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS: '0' })).to.throw(/DESKHAND_WEBHOOK_RETRY_SCHEDULE_MS/);
      expect(() => loadConfig({ DESKHAND_WEBHOOK_TIMEOUT_MS: '10 s' })).to.throw(/DESKHAND_WEBHOOK_TIMEOUT_MS/);
      expect(() => loadConfig({ DESKHAND_TOOL_TIMEOUT_MS: '0' })).to.throw(/DESKHAND_TOOL_TIMEOUT_MS/);
      expect(() => loadConfig({ DESKHAND_WORKER_LOCK_DURATION_MS: 'x' })).to.throw(/DESKHAND_WORKER_LOCK_DURATION_MS/);
    });
  });

  describe('PUT /v1/webhook and GET /v1/webhook', () => {
    it('answers an org without an endpoint with url null, every type, and no secret', async () => {
      const { key } = await service.newOrg();
      const got = await service.api(key, 'GET', '/v1/webhook');
      expect(got.status).to.equal(200);
      expect(got.body).to.deep.equal({ object: 'webhook', url: null, events: [], has_secret: false, event_types: [...ORG_EVENT_TYPES] });
    });

    it('makes the endpoint with a whsec_ secret shown once; GET never shows it', async () => {
      const { key } = await service.newOrg();
      const target = await receiver();
      const put = await service.api(key, 'PUT', '/v1/webhook', { url: target.url(), events: ['task.completed'] });
      expect(put.status).to.equal(200);
      expect(put.body).to.include({ object: 'webhook', url: target.url(), has_secret: true });
      expect(put.body.events).to.deep.equal(['task.completed']);
      expect(put.body.secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);

      const got = await service.api(key, 'GET', '/v1/webhook');
      expect(got.body).to.deep.equal({ object: 'webhook', url: target.url(), events: ['task.completed'], has_secret: true, event_types: [...ORG_EVENT_TYPES] });
      expect(JSON.stringify(got.body)).not.to.include(put.body.secret);
    });

    it('changes only the sent fields and keeps the secret when URL or events change', async () => {
      const { key, orgId, secret } = await orgWithEndpoint({ events: ['task.started', 'task.failed'] });
      const other = await receiver();

      const eventsOnly = await service.api(key, 'PUT', '/v1/webhook', { events: ['task.failed'] });
      expect(eventsOnly.body.url).to.not.equal(null);
      expect(eventsOnly.body.events).to.deep.equal(['task.failed']);
      expect(eventsOnly.body).to.not.have.property('secret');

      const urlOnly = await service.api(key, 'PUT', '/v1/webhook', { url: other.url('/moved') });
      expect(urlOnly.body).to.include({ url: other.url('/moved'), has_secret: true });
      expect(urlOnly.body.events).to.deep.equal(['task.failed']);
      expect(urlOnly.body).to.not.have.property('secret');

      // The secret made first still signs deliveries, now to the new URL.
      const eventId = await emitEvent(service.running.container, orgId, 'task.failed');
      const [request] = await other.waitForRequests(1);
      expect(request!.path).to.equal('/moved');
      expect(verifySignature(request!.rawBody, signatureOf(request!), secret)).to.equal(true);
      expect(JSON.parse(request!.body).id).to.equal(eventId);
    });

    it('returns events once each, in the spec order; an empty list means every type', async () => {
      const { key } = await orgWithEndpoint();
      const put = await service.api(key, 'PUT', '/v1/webhook', { events: ['task.stopped', 'session.connected', 'task.stopped'] });
      expect(put.body.events).to.deep.equal(['session.connected', 'task.stopped']);
      const all = await service.api(key, 'PUT', '/v1/webhook', { events: [] });
      expect(all.body.events).to.deep.equal([]);
    });

    it('refuses an unknown event type with 400 invalid_request and changes nothing', async () => {
      const { key } = await orgWithEndpoint({ events: ['task.started'] });
      for (const events of [['task.exploded'], ['task.started', 'webhook.test'], ['Task.Started']]) {
        const put = await service.api(key, 'PUT', '/v1/webhook', { events });
        expect(put.status, JSON.stringify(events)).to.equal(400);
        expect(put.body.error.type).to.equal('invalid_request');
        expect(put.body.error.message).to.match(/^events\[\d\] must be one of: "session.connected", /);
      }
      expect((await service.api(key, 'GET', '/v1/webhook')).body.events).to.deep.equal(['task.started']);
    });

    it('refuses malformed bodies with 400', async () => {
      const { key } = await service.newOrg();
      for (const body of [{ url: 42 }, { url: '' }, { events: 'task.started' }, { rotate_secret: 'yes' }, { secret: 'whsec_mine' }]) {
        const put = await service.api(key, 'PUT', '/v1/webhook', body);
        expect(put.status, JSON.stringify(body)).to.equal(400);
        expect(put.body.error.type).to.equal('invalid_request');
      }
      const notUrl = await service.api(key, 'PUT', '/v1/webhook', { url: 'not a url' });
      expect(notUrl.status).to.equal(400);
      expect(notUrl.body.error.message).to.match(/url/);
    });

    it('rotation keeps URL and events, shows the new secret once, and the old secret stops at once', async () => {
      const { key, orgId, target, secret: oldSecret } = await orgWithEndpoint({ events: ['task.completed'] });
      const rotated = await service.api(key, 'PUT', '/v1/webhook', { rotate_secret: true });
      expect(rotated.status).to.equal(200);
      expect(rotated.body).to.include({ url: target.url(), has_secret: true });
      expect(rotated.body.events).to.deep.equal(['task.completed']);
      const newSecret = rotated.body.secret as string;
      expect(newSecret).to.match(/^whsec_/).and.not.equal(oldSecret);

      await emitEvent(service.running.container, orgId, 'task.completed');
      const [request] = await target.waitForRequests(1);
      expect(verifySignature(request!.rawBody, signatureOf(request!), newSecret)).to.equal(true);
      expect(checkSignature(request!.rawBody, signatureOf(request!), oldSecret)).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    });

    it('signs the retry after a rotation with the new secret', async () => {
      const { key, orgId, target, secret: oldSecret } = await orgWithEndpoint();
      target.reply({ status: 503 });
      const eventId = await emitEvent(service.running.container, orgId);
      const [first] = await target.waitForRequests(1);
      const newSecret = (await service.api(key, 'PUT', '/v1/webhook', { rotate_secret: true })).body.secret as string;
      target.reply({ status: 200 });
      const delivery = await waitForDelivery(key, eventId, 'succeeded');
      const last = target.withId(eventId).at(-1)!;
      expect(verifySignature(first!.rawBody, signatureOf(first!), oldSecret)).to.equal(true);
      expect(verifySignature(last.rawBody, signatureOf(last), newSecret)).to.equal(true);
      expect(verifySignature(last.rawBody, signatureOf(last), oldSecret)).to.equal(false);
      expect(delivery.attempts.at(-1).ok).to.equal(true);
    });

    it('url null removes the endpoint and its secret; a new URL gets a new secret', async () => {
      const { key, secret } = await orgWithEndpoint({ events: ['task.failed'] });
      const removed = await service.api(key, 'PUT', '/v1/webhook', { url: null });
      expect(removed.body).to.include({ url: null, has_secret: false });
      expect(removed.body).to.not.have.property('secret');
      const target = await receiver();
      const again = await service.api(key, 'PUT', '/v1/webhook', { url: target.url() });
      expect(again.body.secret).to.match(/^whsec_/).and.not.equal(secret);
      expect(again.body.events).to.deep.equal(['task.failed']);
    });

    it('refuses rotate_secret without an endpoint', async () => {
      const { key } = await service.newOrg();
      const put = await service.api(key, 'PUT', '/v1/webhook', { rotate_secret: true });
      expect(put.status).to.equal(400);
      expect(put.body.error.message).to.match(/url/);
    });

    it('records every change in the audit log, never the secret', async () => {
      const { key, secret } = await orgWithEndpoint();
      await service.api(key, 'PUT', '/v1/webhook', { events: ['task.completed'] });
      const rotated = (await service.api(key, 'PUT', '/v1/webhook', { rotate_secret: true })).body.secret as string;
      await service.api(key, 'PUT', '/v1/webhook', { events: ['task.completed'] }); // no change: not recorded
      await service.api(key, 'PUT', '/v1/webhook', { url: null });
      const audit = await service.api(key, 'GET', '/v1/audit_log?object_type=webhook');
      const entries = (audit.body.data as Array<{ action: string; data: Record<string, unknown> }>).reverse();
      expect(entries.map((entry) => entry.action)).to.deep.equal(['webhook.created', 'webhook.updated', 'webhook.updated', 'webhook.deleted']);
      expect(entries[1]!.data).to.deep.include({ changed: ['events'], secret_rotated: false });
      expect(entries[2]!.data).to.deep.include({ changed: [], secret_rotated: true });
      const text = JSON.stringify(audit.body);
      expect(text).to.not.include(secret);
      expect(text).to.not.include(rotated);
    });
  });

  describe('delivery', () => {
    it('POSTs the envelope, signed over the raw body: stripe-node constructEvent and verifySignature accept it', async () => {
      const { orgId, target, secret } = await orgWithEndpoint();
      const eventId = await emitEvent(service.running.container, orgId, 'task.question_answered');
      const [request] = await target.waitForRequests(1);
      expect(request!.method).to.equal('POST');
      expect(request!.headers['content-type']).to.equal('application/json');

      const event = stripe.webhooks.constructEvent(request!.rawBody, signatureOf(request!), secret) as unknown as Record<string, unknown>;
      expect(verifySignature(request!.rawBody, signatureOf(request!), secret)).to.equal(true);
      expect(Object.keys(event)).to.deep.equal(['id', 'type', 'created_at', 'org_id', 'data']);
      expect(event).to.deep.include({ id: eventId, type: 'task.question_answered', org_id: orgId });
      expect(event.id).to.match(/^evt_/);
      expect(new Date(event.created_at as string).toISOString()).to.equal(event.created_at);
      expect(event.data).to.deep.equal(dataFor('task.question_answered'));
      expect(Math.abs(timestampOf(request!) - request!.receivedAt / 1000)).to.be.below(2);
    });

    it('sends all ten types when the filter is empty', async () => {
      const { orgId, target } = await orgWithEndpoint();
      const ids = await emitEvents(service.running.container, orgId, [...ORG_EVENT_TYPES]);
      const requests = await target.waitForRequests(10);
      const received = requests.map((request) => JSON.parse(request.body) as { id: string; type: string; data: Record<string, unknown> });
      expect(received.map((event) => event.id).sort()).to.deep.equal([...ids].sort());
      expect(received.map((event) => event.type).sort()).to.deep.equal([...ORG_EVENT_TYPES].sort());
      for (const event of received) expect(event.data, event.type).to.deep.equal(dataFor(event.type as (typeof ORG_EVENT_TYPES)[number]));
    });

    it('sends only the types in the filter, and no delivery is made for the others', async () => {
      const { orgId, key, target } = await orgWithEndpoint({ events: ['session.disconnected', 'task.failed'] });
      const ids = await emitEvents(service.running.container, orgId, [...ORG_EVENT_TYPES]);
      await waitFor(async () => {
        const dispatched = await service.running.container.db('org_events').whereIn('id', ids).whereNotNull('dispatched_at').count({ n: '*' });
        return Number(dispatched[0]!.n) === ids.length;
      }, 10_000, 'every event dispatched');
      await target.waitForRequests(2);
      expect(target.requests.map((request) => JSON.parse(request.body).type).sort()).to.deep.equal(['session.disconnected', 'task.failed']);
      const list = await service.api(key, 'GET', '/v1/webhook/deliveries');
      expect(list.body.data.map((delivery: { event_type: string }) => delivery.event_type).sort()).to.deep.equal(['session.disconnected', 'task.failed']);
    });

    it('makes no delivery for an org without an endpoint, and marks the event dispatched', async () => {
      const { orgId, key } = await service.newOrg();
      const eventId = await emitEvent(service.running.container, orgId);
      await waitFor(async () => (await service.running.container.db('org_events').where({ id: eventId }).first()).dispatched_at, 10_000, 'dispatch');
      expect((await service.api(key, 'GET', '/v1/webhook/deliveries')).body.data).to.deep.equal([]);
    });

    it('retries 500, a 302 (never followed) and a timeout with the same body and id and a fresh signature, then succeeds', async () => {
      const { orgId, key, target, secret } = await orgWithEndpoint();
      const elsewhere = await receiver();
      target.replyOnce(
        { status: 500, body: 'boom' },
        { status: 302, headers: { location: elsewhere.url('/redirected') } },
        { status: 200, delayMs: TIMEOUT_MS * 5 },
      );
      const eventId = await emitEvent(service.running.container, orgId);
      const delivery = await waitForDelivery(key, eventId, 'succeeded');

      const requests = target.withId(eventId);
      expect(requests).to.have.length(4);
      expect(elsewhere.requests).to.have.length(0);
      expect(new Set(requests.map((request) => request.body)).size).to.equal(1);
      for (const request of requests) {
        expect(verifySignature(request.rawBody, signatureOf(request), secret)).to.equal(true);
        expect(Math.abs(timestampOf(request) - request.receivedAt / 1000), 'signed at sending time').to.be.below(2);
      }

      expect(delivery).to.include({ status: 'succeeded', attempt_count: 4, next_attempt_at: null, last_error: null, last_status_code: 200 });
      const attempts = delivery.attempts as Array<Record<string, any>>;
      expect(attempts.map((a) => [a.n, a.status_code, a.ok])).to.deep.equal([[1, 500, false], [2, 302, false], [3, null, false], [4, 200, true]]);
      expect(attempts[0]!.error).to.equal('HTTP 500');
      expect(attempts[0]!.response_body).to.equal('boom');
      expect(attempts[1]!.error).to.match(/302.*redirects are not followed/);
      expect(attempts[2]!.error).to.match(new RegExp(`within ${TIMEOUT_MS} ms`));
      for (const attempt of attempts) {
        expect(attempt.url).to.equal(target.url());
        expect(Date.parse(attempt.started_at)).to.be.a('number');
      }
    });

    it('stops waiting at the deadline: a receiver slower than the timeout fails the attempt near the timeout', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      target.replyOnce({ status: 200, delayMs: 10_000 });
      const eventId = await emitEvent(service.running.container, orgId);
      const delivery = await waitForDelivery(key, eventId, 'succeeded');
      const [slow] = delivery.attempts;
      expect(slow).to.include({ ok: false, status_code: null });
      expect(slow.duration_ms).to.be.at.least(TIMEOUT_MS - 5).and.below(TIMEOUT_MS + 1000);
    });

    it('follows the retry schedule, then gives up: 1 + 4 attempts, each stored', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      target.reply({ status: 503 });
      const eventId = await emitEvent(service.running.container, orgId);
      const delivery = await waitForDelivery(key, eventId, 'failed');
      expect(delivery).to.include({ attempt_count: 5, next_attempt_at: null, last_status_code: 503, last_error: 'HTTP 503' });
      const attempts = delivery.attempts as Array<{ n: number; started_at: string; duration_ms: number; ok: boolean }>;
      expect(attempts.map((a) => a.n)).to.deep.equal([1, 2, 3, 4, 5]);
      for (let i = 1; i < attempts.length; i += 1) {
        const gap = Date.parse(attempts[i]!.started_at) - (Date.parse(attempts[i - 1]!.started_at) + attempts[i - 1]!.duration_ms);
        expect(gap, `wait before attempt ${i + 1}`).to.be.at.least(SCHEDULE_MS[i - 1]! - 5);
      }
      expect(target.withId(eventId)).to.have.length(5);
      // Nothing more is sent after giving up.
      const rows = await service.running.container.db('webhook_attempts').where({ delivery_id: delivery.delivery_id }).count({ n: '*' });
      expect(Number(rows[0]!.n)).to.equal(5);
    });

    it('gives up without another attempt when the endpoint is removed during the retries', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      target.reply({ status: 500 });
      const eventId = await emitEvent(service.running.container, orgId);
      await target.waitForRequests(1);
      await service.api(key, 'PUT', '/v1/webhook', { url: null });
      const delivery = await waitFor(async () => {
        const row = await service.running.container.db('webhook_deliveries').where({ event_id: eventId }).first();
        return row?.status === 'failed' ? row : null;
      }, 10_000, 'the delivery to fail');
      expect(delivery.last_error).to.match(/endpoint was removed/);
      expect(delivery.attempts).to.be.below(5);
      expect(target.withId(eventId)).to.have.length(delivery.attempts);
    });
  });

  describe('GET /v1/webhook/deliveries', () => {
    it('lists deliveries newest first with their attempts, paginated and filtered', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      target.replyOnce({ status: 500 });
      const ids = [];
      for (let i = 0; i < 3; i += 1) {
        ids.push(await emitEvent(service.running.container, orgId, 'task.completed'));
        await waitForDelivery(key, ids[i]!, 'succeeded');
      }

      const first = await service.api(key, 'GET', '/v1/webhook/deliveries?limit=2');
      expect(first.status).to.equal(200);
      expect(first.body.has_more).to.equal(true);
      const second = await service.api(key, 'GET', `/v1/webhook/deliveries?limit=2&cursor=${first.body.next_cursor}`);
      expect(second.body.has_more).to.equal(false);
      const all = [...first.body.data, ...second.body.data];
      expect(all.map((d: { event_id: string }) => d.event_id)).to.deep.equal([...ids].reverse());
      const retried = all.find((d: { attempt_count: number }) => d.attempt_count === 2);
      expect(retried.attempts.map((a: { status_code: number }) => a.status_code)).to.deep.equal([500, 200]);
      expect(retried.delivery_id).to.match(/^dlv_/);

      const one = await service.api(key, 'GET', `/v1/webhook/deliveries/${retried.delivery_id}`);
      expect(one.body).to.deep.equal(retried);
      expect((await service.api(key, 'GET', '/v1/webhook/deliveries?status=failed')).body.data).to.deep.equal([]);
      expect((await service.api(key, 'GET', '/v1/webhook/deliveries?event_type=task.started')).body.data).to.deep.equal([]);
    });

    it('shows one org nothing of another org', async () => {
      const a = await orgWithEndpoint();
      const b = await service.newOrg();
      const eventId = await emitEvent(service.running.container, a.orgId);
      const delivery = await waitForDelivery(a.key, eventId, 'succeeded');
      expect((await service.api(b.key, 'GET', '/v1/webhook/deliveries')).body.data).to.deep.equal([]);
      expect((await service.api(b.key, 'GET', `/v1/webhook/deliveries/${delivery.delivery_id}`)).status).to.equal(404);
      expect((await service.api(b.key, 'POST', `/v1/webhook/deliveries/${delivery.delivery_id}/redeliver`)).status).to.equal(404);
    });
  });

  describe('POST /v1/webhook/deliveries/{delivery_id}/redeliver', () => {
    it('sends the same body and id again, signed afresh, and records the attempt', async () => {
      const { orgId, key, target, secret } = await orgWithEndpoint();
      target.reply({ status: 500 });
      const eventId = await emitEvent(service.running.container, orgId);
      const failed = await waitForDelivery(key, eventId, 'failed');
      target.reply({ status: 200 });

      const redeliver = await service.api(key, 'POST', `/v1/webhook/deliveries/${failed.delivery_id}/redeliver`);
      expect(redeliver.status).to.equal(200);
      expect(redeliver.body).to.include({ delivery_id: failed.delivery_id, status: 'pending', attempt_count: 5 });
      const done = await waitForDelivery(key, eventId, 'succeeded');
      expect(done.attempt_count).to.equal(6);
      expect(done.attempts.at(-1)).to.include({ n: 6, ok: true, status_code: 200 });
      const requests = target.withId(eventId);
      expect(requests).to.have.length(6);
      expect(new Set(requests.map((r) => r.body)).size).to.equal(1);
      expect(verifySignature(requests[5]!.rawBody, signatureOf(requests[5]!), secret)).to.equal(true);

      const audit = await service.api(key, 'GET', `/v1/audit_log?action=webhook.redelivery_requested`);
      expect(audit.body.data[0]).to.include({ object_id: failed.delivery_id });
    });

    it('retries a failed redelivery on a fresh round of the schedule', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      target.reply({ status: 500 });
      const eventId = await emitEvent(service.running.container, orgId);
      const failed = await waitForDelivery(key, eventId, 'failed');
      await service.api(key, 'POST', `/v1/webhook/deliveries/${failed.delivery_id}/redeliver`);
      const again = await waitFor(async () => {
        const delivery = await deliveryOf(key, eventId);
        return delivery.status === 'failed' && delivery.attempt_count === 10 ? delivery : null;
      }, 10_000, 'a second round of five attempts');
      expect(again.attempts.map((a: { n: number }) => a.n)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });

    it('answers 409 without an endpoint or when the filter no longer takes the type, 404 for an unknown delivery', async () => {
      const { orgId, key } = await orgWithEndpoint();
      const eventId = await emitEvent(service.running.container, orgId, 'task.started');
      const delivery = await waitForDelivery(key, eventId, 'succeeded');

      await service.api(key, 'PUT', '/v1/webhook', { events: ['task.failed'] });
      const filtered = await service.api(key, 'POST', `/v1/webhook/deliveries/${delivery.delivery_id}/redeliver`);
      expect(filtered.status).to.equal(409);
      expect(filtered.body.error).to.include({ type: 'conflict', code: 'event_type_filtered' });

      await service.api(key, 'PUT', '/v1/webhook', { url: null });
      const none = await service.api(key, 'POST', `/v1/webhook/deliveries/${delivery.delivery_id}/redeliver`);
      expect(none.status).to.equal(409);
      expect(none.body.error).to.include({ type: 'conflict', code: 'no_webhook_endpoint' });

      const unknown = await service.api(key, 'POST', '/v1/webhook/deliveries/dlv_nope/redeliver');
      expect(unknown.status).to.equal(404);
      expect(unknown.body.error.type).to.equal('not_found');
    });
  });

  describe('POST /v1/webhook/test', () => {
    it('sends a signed webhook.test event, whatever the events filter', async () => {
      const { orgId, key, target, secret } = await orgWithEndpoint({ events: ['task.failed'] });
      const sent = await service.api(key, 'POST', '/v1/webhook/test');
      expect(sent.status).to.equal(200);
      expect(sent.body).to.include({ object: 'webhook_delivery', event_type: 'webhook.test', status: 'pending', attempt_count: 0 });
      const [request] = await target.waitForRequests(1);
      const event = stripe.webhooks.constructEvent(request!.rawBody, signatureOf(request!), secret) as unknown as Record<string, any>;
      expect(event).to.deep.include({ id: sent.body.event_id, type: 'webhook.test', org_id: orgId });
      expect(event.data.webhook).to.deep.equal({ url: target.url() });
      await waitForDelivery(key, sent.body.event_id, 'succeeded');
    });

    it('answers 409 no_webhook_endpoint without an endpoint', async () => {
      const { key } = await service.newOrg();
      const sent = await service.api(key, 'POST', '/v1/webhook/test');
      expect(sent.status).to.equal(409);
      expect(sent.body.error).to.include({ type: 'conflict', code: 'no_webhook_endpoint' });
    });
  });

  describe('reconcile sweep', () => {
    it('dispatches an event whose dispatch job was lost', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      const { db } = service.running.container;
      // Written by a process that died before enqueuing: no job exists.
      const eventId = await appendOrgEvent(db, { orgId, type: 'task.completed', data: dataFor('task.completed') });
      await db('org_events').where({ id: eventId }).update({ created_at: db.raw("now() - interval '1 minute'") });
      expect(await service.running.container.queues.queue(QUEUE_NAMES.webhooks).getJob(`dispatch-${eventId}`)).to.equal(undefined);

      const redispatched = await service.running.container.webhookDelivery.redispatchLostEvents();
      expect(redispatched).to.be.at.least(1);
      await waitForDelivery(key, eventId, 'succeeded');
      expect(target.withId(eventId)).to.have.length(1);
    });

    it('resumes a pending delivery whose retry job was lost', async () => {
      const { orgId, key, target } = await orgWithEndpoint();
      const { db } = service.running.container;
      // A delivery whose first attempt failed and whose retry job vanished with Redis.
      const eventId = await appendOrgEvent(db, { orgId, type: 'task.failed', data: dataFor('task.failed') });
      await db('org_events').where({ id: eventId }).update({ dispatched_at: db.fn.now() });
      await db('webhook_deliveries').insert({
        id: 'dlv_lostretry' + Date.now().toString(36),
        event_id: eventId,
        org_id: orgId,
        event_type: 'task.failed',
        status: 'pending',
        attempts: 1,
        next_attempt_at: db.raw("now() - interval '1 minute'"),
        last_error: 'HTTP 500',
      });

      expect(await service.running.container.webhookDelivery.resumeOverdueDeliveries()).to.be.at.least(1);
      const delivery = await waitForDelivery(key, eventId, 'succeeded');
      expect(delivery.attempt_count).to.equal(2);
      expect(target.withId(eventId)).to.have.length(1);
    });
  });
});
