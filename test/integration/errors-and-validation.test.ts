import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import Koa from 'koa';
import Router from '@koa/router';
import { Type } from '@sinclair/typebox';
import { jsonBody } from '../../api/middleware/json-body';
import { edge } from '../../api/middleware/edge';
import { defineRoute, mountRoutes } from '../../api/routing';
import { Metadata } from '../../api/schemas/common.schemas';
import { ApiError } from '../../shared/errors';
import pino from 'pino';
import { request, startTestService, type TestService } from '../support/service';

describe('error bodies of the real service', () => {
  let service: TestService;
  let key: string;
  before(async () => {
    service = await startTestService({}, ['web']);
    ({ key } = await service.newOrg());
  });
  after(async () => service.stop());

  it('answers an unknown route with 404 not_found', async () => {
    const response = await service.api(key, 'GET', '/v1/no-such-thing');
    expect(response.status).to.equal(404);
    expect(response.body).to.deep.equal({ error: { type: 'not_found', message: 'No route GET /v1/no-such-thing' } });
  });

  it('routes paths as @koa/router matches them (any letter case, a trailing slash) in every group of routes', async () => {
    const agent = await service.api(key, 'POST', '/v1/agents', { agent_id: 'routed' });
    expect(agent.status).to.equal(200);
    for (const path of ['/v1/me', '/V1/Me', '/v1/me/', '/v1/agents/routed', '/v1/AGENTS/routed/', '/v1/agents/routed/versions', '/healthz', '/HEALTHZ/', '/openapi.json']) {
      const response = await service.api(key, 'GET', path);
      expect(response.status, path).to.equal(200);
    }
    // A known path with another method, a path beyond a route, an unknown first segment, /v1 alone (GET / answers where the docs are).
    for (const [method, path] of [['POST', '/v1/me'], ['GET', '/v1/me/more'], ['GET', '/v1/meme'], ['GET', '/v1'], ['DELETE', '/'], ['GET', '/nowhere/v1/me']] as const) {
      const response = await service.api(key, method, path);
      expect(response.status, `${method} ${path}`).to.equal(404);
      expect(response.body.error.type).to.equal('not_found');
    }
  });

  it('answers malformed JSON with 400 invalid_request', async () => {
    const response = await service.api(key, 'POST', '/v1/audit_log', '{"a":');
    expect(response.status).to.equal(400);
    expect(response.body.error).to.deep.equal({ type: 'invalid_request', message: 'Request body is not valid JSON' });
  });

  it('answers a body that is not JSON with 400 naming the content type', async () => {
    const response = await service.api(key, 'POST', '/v1/audit_log', 'a=b', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(response.status).to.equal(400);
    expect(response.body.error.message).to.equal('Content-Type must be application/json');
  });

  it('answers a body over 1 MB with 413 invalid_request', async () => {
    const response = await service.api(key, 'POST', '/v1/audit_log', JSON.stringify({ text: 'x'.repeat(1024 * 1024 + 10) }));
    expect(response.status).to.equal(413);
    expect(response.body.error.type).to.equal('invalid_request');
    expect(response.body.error.message).to.match(/too large/);
  });

  it('answers a bad query parameter with a 400 naming it', async () => {
    const response = await service.api(key, 'GET', '/v1/audit_log?limit=101');
    expect(response.status).to.equal(400);
    expect(response.body.error).to.deep.equal({ type: 'invalid_request', message: 'query parameter limit must be at most 100' });
    const unknown = await service.api(key, 'GET', '/v1/audit_log?color=red');
    expect(unknown.body.error.message).to.equal('query parameters has an unknown field "color"');
  });

  it('echoes a sane X-Request-Id and makes one otherwise', async () => {
    const given = await service.api(key, 'GET', '/v1/audit_log', undefined, { 'x-request-id': 'trace-123' });
    expect(given.headers.get('x-request-id')).to.equal('trace-123');
    const made = await service.api(key, 'GET', '/v1/audit_log', undefined, { 'x-request-id': 'bad id with spaces' });
    expect(made.headers.get('x-request-id')).to.match(/^[0-9a-f-]{36}$/);
  });
});

describe('routing, validation and the error middleware', () => {
  let server: http.Server;
  let baseUrl: string;
  const logged: Array<{ msg: string; err?: { stack?: string } }> = [];

  before(async () => {
    const app = new Koa();
    const router = new Router();
    const routes = [
      defineRoute({
        method: 'post',
        path: '/things',
        operationId: 'createThing',
        summary: 'test',
        tag: 'Test',
        auth: 'none',
        body: Type.Object({ name: Type.String({ minLength: 1 }), metadata: Type.Optional(Metadata) }, { additionalProperties: false }),
        response: Type.Object({ name: Type.String(), metadata: Type.Optional(Metadata) }),
        errors: [],
        handler: async ({ body }) => body,
      }),
      defineRoute({
        method: 'get',
        path: '/boom',
        operationId: 'boom',
        summary: 'test',
        tag: 'Test',
        auth: 'none',
        response: Type.Object({}),
        errors: [],
        handler: async () => {
          throw new Error('database password is hunter2');
        },
      }),
      defineRoute({
        method: 'get',
        path: '/conflict',
        operationId: 'conflict',
        summary: 'test',
        tag: 'Test',
        auth: 'none',
        response: Type.Object({}),
        errors: [409],
        handler: async () => {
          throw new ApiError('conflict', 'A task already runs', { extra: { active_task_id: 'task_1' } });
        },
      }),
      defineRoute({
        method: 'get',
        path: '/wrong-shape',
        operationId: 'wrongShape',
        summary: 'test',
        tag: 'Test',
        auth: 'none',
        response: Type.Object({ id: Type.String() }),
        errors: [],
        handler: async () => ({ id: 42 }) as unknown as { id: string },
      }),
    ];
    mountRoutes(router, routes, { authenticate: async () => { throw new Error('unused'); }, idempotency: { run: () => { throw new Error('unused'); } }, validateResponses: true });
    const logger = pino({ level: 'error' }, { write: (line: string) => logged.push(JSON.parse(line)) });
    app.use(edge(logger));
    app.use(jsonBody({ limitBytes: 1024, largeLimitBytes: 2048, isLargeBodyPath: () => false }));
    app.use(router.routes());
    server = http.createServer(app.callback()).listen(0);
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => server.close());

  const post = (body: unknown) => request(baseUrl, null, 'POST', '/things', body);

  it('answers anything unexpected with a generic 500 and logs the stack', async () => {
    const response = await request(baseUrl, null, 'GET', '/boom');
    expect(response.status).to.equal(500);
    expect(response.body).to.deep.equal({ error: { type: 'server_error', message: 'Something went wrong on our side; retry with backoff' } });
    expect(JSON.stringify(response.body)).not.to.contain('hunter2');
    const entry = logged.find((line) => line.msg === 'unhandled error');
    expect(entry?.err?.stack).to.contain('database password is hunter2');
  });

  it('carries extra fields such as active_task_id in the error body', async () => {
    const response = await request(baseUrl, null, 'GET', '/conflict');
    expect(response.status).to.equal(409);
    expect(response.body).to.deep.equal({ error: { type: 'conflict', message: 'A task already runs', active_task_id: 'task_1' } });
  });

  it('refuses a response that breaks its own schema when checking responses', async () => {
    expect((await request(baseUrl, null, 'GET', '/wrong-shape')).status).to.equal(500);
  });

  it('names a missing field', async () => {
    expect((await post({})).body.error.message).to.equal('name is required');
  });

  it('names an unknown field', async () => {
    expect((await post({ name: 'a', colour: 'red' })).body.error.message).to.equal('body has an unknown field "colour"');
  });

  describe('metadata limits', () => {
    const keys = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`k${i}`, 'v']));

    it('accepts 50 keys and refuses 51', async () => {
      expect((await post({ name: 'a', metadata: keys(50) })).status).to.equal(200);
      const response = await post({ name: 'a', metadata: keys(51) });
      expect(response.status).to.equal(400);
      expect(response.body.error.message).to.equal('metadata has more than 50 keys');
    });

    it('accepts a 40-character key and refuses a 41-character one, naming it', async () => {
      expect((await post({ name: 'a', metadata: { ['k'.repeat(40)]: 'v' } })).status).to.equal(200);
      const response = await post({ name: 'a', metadata: { ['k'.repeat(41)]: 'v' } });
      expect(response.status).to.equal(400);
      expect(response.body.error.message).to.equal(`metadata key "${'k'.repeat(41)}" must be at most 40 characters`);
    });

    it('accepts a 500-character value and refuses 501, naming the key', async () => {
      expect((await post({ name: 'a', metadata: { note: 'v'.repeat(500) } })).status).to.equal(200);
      const response = await post({ name: 'a', metadata: { note: 'v'.repeat(501) } });
      expect(response.body.error.message).to.equal('metadata.note must be at most 500 characters');
    });

    it('refuses numbers and nested objects, naming the key', async () => {
      expect((await post({ name: 'a', metadata: { count: 3 } })).body.error.message).to.equal('metadata.count must be of type string');
      expect((await post({ name: 'a', metadata: { nested: { a: 'b' } } })).body.error.message).to.equal('metadata.nested must be of type string');
    });

    it('returns metadata as given', async () => {
      const metadata = { customer: 'c_123', 'région': 'ÎLE' };
      expect((await post({ name: 'a', metadata })).body.metadata).to.deep.equal(metadata);
    });
  });
});
