import { expect } from 'chai';
import { startTestService, waitFor, type ApiResponse, type TestService } from '../support/service';
import { startSleepingTask } from '../support/tasks';
import { changeTaskLocked } from '../../shared/tasks/task-change';
import type { DesktopClient } from '../../shared/simulator/desktop-client';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Type } from '@sinclair/typebox';
import pino from 'pino';
import { longPollListener } from '../../api/long-polls';
import { rateLimitByIp } from '../../api/middleware/rate-limit';
import { defineRoute } from '../../api/routing';

/**
 * GET /v1/tasks/{task_id}/events is served on node:http beside Koa (api/long-polls.ts). A GET of
 * its exact path takes that way; the same path with a trailing slash goes through Koa's router,
 * so comparing the two shows both answer alike.
 */
describe('long polls beside Koa (GET /v1/tasks/{task_id}/events)', () => {
  let service: TestService;
  let key: string;
  let taskId: string;
  let desktop: DesktopClient;
  const prefix = `long-polls-${Date.now()}`;

  before(async () => {
    service = await startTestService({ DESKHAND_SCRIPTED_MODELS: '1', DESKHAND_REDIS_PREFIX: prefix }, ['web', 'worker-agent']);
    ({ key } = await service.newOrg());
    ({ taskId, desktop } = await startSleepingTask(service, key));
  });
  after(async () => {
    await desktop.close();
    await service.stop();
  });

  /** What a caller sees of an answer, without what changes from one moment to the next. */
  const seen = (response: ApiResponse) => ({
    status: response.status,
    contentType: response.headers.get('content-type'),
    requestId: response.headers.get('x-request-id'),
    limit: response.headers.get('x-ratelimit-limit'),
    hasRemaining: response.headers.has('x-ratelimit-remaining'),
    body: response.status === 200 ? { data: response.body.data, cursor: response.body.cursor, task: response.body.task.task_id } : response.body,
  });

  const cases: Array<[string, (id: string) => string, string | null]> = [
    ['everything so far', (id) => `/v1/tasks/${id}/events?after=0`, 'key'],
    ['a later cursor, no wait', (id) => `/v1/tasks/${id}/events?after=2&wait_ms=0`, 'key'],
    ['wait_ms over 55000', (id) => `/v1/tasks/${id}/events?wait_ms=55001`, 'key'],
    ['a negative cursor', (id) => `/v1/tasks/${id}/events?after=-1`, 'key'],
    ['a cursor that is not a number', (id) => `/v1/tasks/${id}/events?after=x`, 'key'],
    ['a repeated parameter', (id) => `/v1/tasks/${id}/events?after=1&after=2`, 'key'],
    ['an unknown parameter', (id) => `/v1/tasks/${id}/events?colour=red`, 'key'],
    ['an unknown task', () => `/v1/tasks/task_nope/events`, 'key'],
    ['no API key', (id) => `/v1/tasks/${id}/events`, null],
    ['a malformed API key', (id) => `/v1/tasks/${id}/events`, 'dh_live_nonsense'],
  ];
  for (const [name, path, which] of cases) {
    it(`answers ${name} as Koa's router does`, async () => {
      const as = which === 'key' ? key : which;
      const headers = { 'x-request-id': 'req-long-poll-1' };
      const direct = await service.api(as, 'GET', path(taskId), undefined, headers);
      const throughKoa = await service.api(as, 'GET', path(taskId).replace('/events', '/events/'), undefined, headers);
      expect(seen(direct)).to.deep.equal(seen(throughKoa));
      expect(direct.headers.get('x-request-id')).to.equal('req-long-poll-1');
    });
  }

  it('gives each request an id when the caller sends none or a bad one', async () => {
    const answer = await service.api(key, 'GET', `/v1/tasks/${taskId}/events`, undefined, { 'x-request-id': 'not ok!' });
    expect(answer.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });

  it('answers a waiting poll when an event is written', async () => {
    const before = await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=0`);
    const { followers } = service.running.container;
    const waitingBefore = followers.waitingFollowers;
    const waiting = service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${before.body.cursor}&wait_ms=20000`);
    // Write once the poll is waiting (the service counts it), so that the write must wake it.
    await waitFor(() => followers.waitingFollowers > waitingBefore, 5_000, 'the poll to wait');
    const started = Date.now();
    const deps = { ...service.running.container, baseUrl: service.running.container.config.baseUrl };
    await changeTaskLocked(deps, taskId, (change) => change.event('note', 'woken'));
    const answer = await waiting;
    expect(Date.now() - started).to.be.below(2000);
    expect(answer.status).to.equal(200);
    expect(answer.body.data.map((event: { message: string }) => event.message)).to.deep.equal(['woken']);
    expect(answer.body.cursor).to.equal(before.body.cursor + 1);
  });

  it('stops waiting for a follower that hangs up, and reads nothing for it', async () => {
    const { followers, db } = service.running.container;
    const { cursor } = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events`)).body;
    const waitingBefore = followers.waitingFollowers;
    const socket = net.connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    socket.write(`GET /v1/tasks/${taskId}/events?after=${cursor}&wait_ms=20000 HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await waitFor(() => followers.waitingFollowers === waitingBefore + 1, 5_000, 'the follower to wait');
    let reads = 0;
    const onQuery = (query: { sql: string }) => {
      if (query.sql.includes('from tasks t')) reads++;
    };
    db.on('query', onQuery);
    try {
      socket.destroy();
      await waitFor(() => followers.waitingFollowers === waitingBefore, 1_000, 'the wait to end');
      // A read for it would start as its wait ends, and the pool hands out connections in the
      // order they are asked for: one asked for now is served after any such read has been sent.
      await db.raw('select 1');
      expect(reads).to.equal(0);
    } finally {
      db.off('query', onQuery);
    }
    // The same task is still followed as before.
    expect((await service.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}`)).status).to.equal(200);
  });

  it('stops waiting for a follower that hangs up through Koa too (the same handler, given the same signal)', async () => {
    const { followers } = service.running.container;
    const { cursor } = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events`)).body;
    const waitingBefore = followers.waitingFollowers;
    const socket = net.connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    // The trailing slash takes Koa's router, not the node:http path.
    socket.write(`GET /v1/tasks/${taskId}/events/?after=${cursor}&wait_ms=20000 HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    await waitFor(() => followers.waitingFollowers === waitingBefore + 1, 5_000, 'the follower to wait');
    socket.destroy();
    await waitFor(() => followers.waitingFollowers === waitingBefore, 1_000, 'the wait to end');
  });

  it('stops waiting for a caller of the older API\'s /wait that hangs up', async () => {
    const { followers } = service.running.container;
    const { cursor, task } = (await service.api(key, 'GET', `/v1/tasks/${taskId}/events`)).body;
    const waitingBefore = followers.waitingFollowers;
    const body = JSON.stringify({ code: task.session_id, id: taskId, after: cursor, timeout_ms: 20000 });
    const socket = net.connect(Number(new URL(service.baseUrl).port), '127.0.0.1');
    socket.write(`POST /wait HTTP/1.1\r\nHost: test\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    await waitFor(() => followers.waitingFollowers === waitingBefore + 1, 5_000, 'the caller to wait');
    socket.destroy();
    await waitFor(() => followers.waitingFollowers === waitingBefore, 1_000, 'the wait to end');
  });

  it('still serves HEAD (through Koa)', async () => {
    const response = await fetch(`${service.baseUrl}/v1/tasks/${taskId}/events`, { method: 'HEAD', headers: { authorization: `Bearer ${key}` } });
    expect(response.status).to.equal(200);
    expect(response.headers.get('content-type')).to.equal('application/json; charset=utf-8');
  });

  it('answers waiting polls at once when its web process stops, which then stops cleanly', async () => {
    // A second web process; the task's computer stays on the first.
    const other = await startTestService({ DESKHAND_REDIS_PREFIX: prefix, DESKHAND_SHUTDOWN_TIMEOUT_MS: '5000' }, ['web']);
    const { cursor } = (await other.api(key, 'GET', `/v1/tasks/${taskId}/events`)).body;
    const waiting = other.api(key, 'GET', `/v1/tasks/${taskId}/events?after=${cursor}&wait_ms=50000`);
    await waitFor(() => other.running.container.followers.waitingFollowers === 1, 5_000, 'the poll to wait on the second web process');
    const started = Date.now();
    const stopping = other.running.stop();
    const answer = await waiting;
    expect(Date.now() - started).to.be.below(2_000);
    expect(answer.status).to.equal(200);
    expect(answer.body.data).to.deep.equal([]);
    expect(answer.body.cursor).to.equal(cursor);
    expect(answer.body.task.status).to.equal('running');
    expect((await stopping).clean).to.equal(true);
    expect(Date.now() - started).to.be.below(4_000);
  });

  it('answers a handler result that cannot be written as JSON with the generic 500, logging it', async () => {
    const logged: Array<{ msg?: string }> = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const route = defineRoute({
      method: 'get',
      path: '/v1/unwritable/{id}',
      operationId: 'unwritable',
      summary: 'test',
      tag: 'Test',
      auth: 'api_key',
      longPoll: true,
      response: Type.Object({}, { additionalProperties: true }),
      errors: [],
      // JSON.stringify throws on a BigInt.
      handler: async () => ({ big: 1n }) as never,
    });
    const listener = longPollListener(
      [route],
      {
        logger,
        limiter: rateLimitByIp({ redis: service.running.container.redis, prefix, pointsPerHour: 1000 }),
        authenticate: () => ({ orgId: 'org_test', keyId: 'key_test', actor: 'api_key:key_test' }) as never,
        trustProxy: false,
        validateResponses: false,
      },
      (_req, res) => res.writeHead(404).end(),
    );
    const server = http.createServer(listener).listen(0);
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const answer = await fetch(`${base}/v1/unwritable/1`);
      expect(answer.status).to.equal(500);
      expect(await answer.json()).to.deep.equal({ error: { type: 'server_error', message: 'Something went wrong on our side; retry with backoff' } });
      expect(logged.map((line) => line.msg)).to.include('unhandled error');
      expect((await fetch(`${base}/elsewhere`)).status).to.equal(404);
    } finally {
      server.close();
    }
  });

  describe('and the rate limit', () => {
    let limited: TestService;
    before(async () => {
      limited = await startTestService({ DESKHAND_RATE_LIMIT_PER_HOUR: '3', DESKHAND_TRUST_PROXY: '1', DESKHAND_REDIS_PREFIX: `long-polls-rl-${Date.now()}` }, ['web']);
    });
    after(async () => limited.stop());

    it('spends the same budget of the forwarded address as every other /v1 request', async () => {
      const { key: limitedKey } = await limited.newOrg();
      const as = (ip: string, path: string) => limited.api(limitedKey, 'GET', path, undefined, { 'x-forwarded-for': `${ip}, 10.0.0.1` });
      const statuses = [
        (await as('198.51.100.7', '/v1/me')).status,
        (await as('198.51.100.7', '/v1/tasks/task_nope/events')).status,
        (await as('198.51.100.7', '/v1/tasks/task_nope/events?wait_ms=10')).status,
      ];
      expect(statuses).to.deep.equal([200, 404, 404]);
      const refused = await as('198.51.100.7', '/v1/tasks/task_nope/events');
      expect(refused.status).to.equal(429);
      expect(refused.body.error.type).to.equal('rate_limit');
      expect(Number(refused.headers.get('retry-after'))).to.be.within(1, 3600);
      expect((await as('198.51.100.7', '/v1/me')).status).to.equal(429);
      expect((await as('198.51.100.8', '/v1/tasks/task_nope/events')).status).to.equal(404);
    });
  });
});
